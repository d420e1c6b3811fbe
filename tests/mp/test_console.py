# mimi.console: the raw REPL framing mpremote expects (transport_serial.py:
# enter_raw_repl, exec_raw_no_follow, follow) and the friendly one-line prompt.
from mimi import log, limits
from mimi.console import serial as console


def make(ns=None):
    out = []
    con = console.Console(ns if ns is not None else {}, out=lambda b: out.append(bytes(b)))
    return con, out


def feed(con, data):
    r = None
    for c in data:
        r = con.feed(c) or r
    return r


def test_raw_repl_exec_framing():
    ns = {}
    con, out = make(ns)
    feed(con, b"\r\x03")  # mpremote: interrupt
    out.clear()
    feed(con, b"\r\x01")  # enter raw REPL
    assert b"".join(out).endswith(b"raw REPL; CTRL-B to exit\r\n>")
    assert log.mute  # no log line may land inside the framing
    out.clear()
    feed(con, b"\x05B\x01")  # an unknown raw-paste command: understood, not supported
    assert b"".join(out) == b"R\x00"
    out.clear()
    feed(con, b"x = 6 * 7\nprint('v', x)\x04")
    assert b"".join(out) == b"OK\x04\x04>"  # print() goes to stdout itself
    assert ns["x"] == 42
    out.clear()
    feed(con, b"1/0\x04")
    assert b"".join(out) == b"OK\x04\x04>"  # traceback printed between the two \x04
    feed(con, b"\r\x02")  # leave raw REPL
    assert con.mode == console.FRIENDLY and not log.mute


def test_raw_soft_reset_is_acknowledged_not_done():
    con, out = make({"keep": 1})
    feed(con, b"\x01")
    out.clear()
    feed(con, b"\x04")  # Ctrl-D on an empty raw line: mpremote's soft reset
    text = b"".join(out)
    assert text.startswith(b"OK") and b"soft reboot\r\n" in text
    assert text.endswith(b"raw REPL; CTRL-B to exit\r\n>")
    assert con.ns == {"keep": 1}
    feed(con, b"\x02")


def test_friendly_line_editing_and_stop():
    ns = {}
    con, out = make(ns)
    feed(con, b"y = 5\r")
    assert ns["y"] == 5
    feed(con, b"zz\x7f = 2\r\n")  # backspace, and \r\n counts as one Enter
    assert ns["z"] == 2
    out.clear()
    feed(con, b"abc\x03")  # Ctrl-C clears the line
    assert con.line == bytearray() and b"mimi> " in b"".join(out)
    assert feed(con, b"q\x04") is None  # Ctrl-D with text on the line does nothing
    con.line = bytearray()
    assert feed(con, b"\x04") == console.STOP


def test_eval_prints_repr():
    from support import Capture

    con, out = make({"n": 3})
    with Capture() as c:
        feed(con, b"n + 1\r")
        feed(con, b"undefined_name\r")
    assert "4" in c.text


async def test_a_non_utf8_byte_does_not_end_the_console():
    # sys.stdin is text: read(1) of a stray 0xFF raises UnicodeError (board and unix)
    class Reader:
        async def read(self, n):
            raise UnicodeError()

    assert await console._read(Reader()) == console.BAD


W = limits.CONSOLE_PASTE_WINDOW


def enter_paste(con, out):
    feed(con, b"\r\x01")
    out.clear()
    feed(con, b"\x05A\x01")  # mpremote's raw-paste request
    head = b"".join(out)
    assert head == b"R\x01" + bytes((W & 0xFF, W >> 8)) + b"\x01", head  # 2 windows free
    out.clear()


def test_raw_paste_flow_control_and_framing():
    # pyexec.c's protocol: each W bytes consumed frees one more window (\x01);
    # Ctrl-D ends the data (\x04 back), then output \x04 error \x04 and the prompt.
    ns = {}
    con, out = make(ns)
    enter_paste(con, out)
    src = b"total = 0\n" + b"".join(b"total += %d\n" % i for i in range(100))
    assert len(src) > 4 * W
    grants = 0
    for i, c in enumerate(src):
        con.feed(c)
        if out:
            assert b"".join(out) == b"\x01" and (i + 1) % W == 0, (i, out)
            grants += 1
            out.clear()
    assert grants == len(src) // W
    assert "total" not in ns  # nothing runs before the end of the data
    feed(con, b"\x04")
    assert b"".join(out) == b"\x04\x04\x04>"  # ack, end of output, no error, prompt
    assert ns["total"] == sum(range(100))
    assert con.mode == console.RAW
    # The next paste in the same raw session, this one failing.
    out.clear()
    feed(con, b"\x05A\x01")
    out.clear()
    from support import Capture

    with Capture():
        feed(con, b"1/0\x04")
    assert b"".join(out) == b"\x04\x04\x04>"  # the traceback went to stdout in between
    import sys

    assert "mimi.console.raw" in sys.modules  # loaded for the raw session ...
    feed(con, b"\x02")
    assert con.mode == console.FRIENDLY
    assert "mimi.console.raw" not in sys.modules  # ... and only for it


def test_raw_paste_interrupted_and_too_long():
    con, out = make({})
    enter_paste(con, out)
    feed(con, b"x = 1\x03")  # Ctrl-C from the host ends the paste: nothing runs
    assert b"".join(out) == b"\x04\x04\x04>" and "x" not in con.ns
    out.clear()
    feed(con, b"\x05A\x01")
    out.clear()
    big = b"#" * (limits.CONSOLE_RAW_MAX + 10)
    for c in big:
        con.feed(c)
    text = b"".join(out)
    # refused once over the cap: an "abrupt end" \x04 after the grants so far
    assert text == b"\x01" * (limits.CONSOLE_RAW_MAX // W) + b"\x04", text[-8:]
    out.clear()
    feed(con, b"\x04")  # mpremote acknowledges; the error comes in the framing
    assert b"".join(out) == b"\x04\x04>"
    assert con.mode == console.RAW and con.line == bytearray()
    out.clear()
    feed(con, b"y = 2\x04")  # the raw REPL carries on
    assert b"".join(out) == b"OK\x04\x04>" and con.ns["y"] == 2


def test_plain_raw_command_over_the_cap_is_refused_whole():
    con, out = make({})
    feed(con, b"\x01")
    out.clear()
    feed(con, b"z = 1\n" + b"#" * limits.CONSOLE_RAW_MAX + b"\x04")
    assert b"".join(out) == b"OK\x04\x04>" and "z" not in con.ns
    out.clear()
    feed(con, b"z = 2\x04")
    assert con.ns["z"] == 2


def test_aiorepl_raw_repl_holds_the_watchdog():
    # aiorepl's raw_repl() blocks the loop while mpremote talks: held meanwhile, and the
    # log muted (the agent thread's lines would land in mpremote's framing).
    import sys
    from mimi import log
    from mimi.services import watchdog

    seen = []

    class FakeAiorepl:
        @staticmethod
        def raw_repl(s, g):
            seen.append((watchdog.held, log.mute))
            return 0

        @staticmethod
        def task(g):
            return "task"

        @staticmethod
        async def execute(code, g, s):
            return None

    sys.modules["aiorepl"] = FakeAiorepl
    try:
        assert console.task() == "task"
        assert FakeAiorepl.raw_repl(None, {}) == 0
        console.task()  # wrapped once only
        FakeAiorepl.raw_repl(None, {})
    finally:
        del sys.modules["aiorepl"]
    assert seen == [(True, True), (True, True)] and not watchdog.held and not log.mute


def test_commands_join_the_namespace_on_first_use():
    import sys
    from support import Capture

    ns = {}
    con, out = make(ns)
    assert "mimi.repl" not in sys.modules and "config_show" not in ns  # nothing loaded at boot
    with Capture() as c:
        feed(con, b"help()\r")
    assert "config_show()" in c.text and callable(ns["config_show"])
    raw = {}
    con, out = make(raw)
    feed(con, b"\r\x01config_show\x04\x02")  # mpremote's exec, through the raw REPL
    assert callable(raw["ota_status"])


async def test_a_slow_device_read_typed_on_the_console_never_holds_the_loop():
    # device_read("w") typed on the firmware's console ran on the loop and slept a
    # DS18B20's 750 ms conversion there (the gateway, Telegram, the rules all stopped);
    # and while the rules' loop was reading that device it waited for its lock on the
    # loop's own thread: forever. Now the console awaits it, the loop running meanwhile
    import asyncio
    from support import Capture, Ticker
    from mimi import board
    from mimi.config.settings import cfg
    from mimi.devices.sim import parts
    import mimi.devices as devices

    cfg.load()
    parts.clear()
    board.SIM_PINS.clear()
    parts.attach("ds18b20", pin=4, temp=19.5)
    parts.attach("relay", pin=21)
    con, out = make()
    with Capture() as c:
        await console.take(con, b"device_add('w', 'ds18b20', pin=4)\r")
        await console.take(con, b"device_add('fan', 'relay', pin=21)\r")
    assert "OK: added w (ds18b20 on GPIO4): w = 19.5 °C" in c.text, c.text
    with devices.use() as t:
        busy = asyncio.create_task(t.aread("w"))  # the rules' loop reading it
        await asyncio.sleep_ms(50)
        ticks = Ticker()
        out.clear()
        with Capture() as c:
            await console.take(con, b"device_read('w'); device_set('fan', 'on')\r")
        ticks.stop()
        await busy
    assert c.lines == ["w = 19.5 °C\n", "OK: fan = on\n"], c.lines
    assert out[-1] == console.PROMPT, out
    assert ticks.count >= 60, ticks.count  # 10 ms ticks through two conversions (~1.5 s)
    with Capture() as c:
        await console.take(con, b"device_set('fan', None); device_read('nope')\r")
    assert c.lines[0] == "Error: 'value' required: on/off, a number, an angle or a colour\n", c.lines
    assert c.lines[1].startswith("Error: no device named 'nope'"), c.lines
    # the board's own REPL (no console running): as before, it blocks
    from mimi import repl

    with Capture() as c:
        repl.device_read("w")
    assert c.lines == ["w = 19.5 °C\n"], c.lines


async def test_a_device_read_typed_on_aiorepl_is_awaited_too():
    # aiorepl (micropython-lib, when installed) evaluates a line on the loop as our
    # console does: device_read() there slept the DS18B20's conversion on the loop
    import sys
    from support import Capture, Ticker
    from mimi import board
    from mimi.config.settings import cfg
    from mimi.devices.sim import parts

    cfg.load()
    parts.clear()
    board.SIM_PINS.clear()
    parts.attach("ds18b20", pin=4, temp=19.5)

    class Aiorepl:  # its execute() as micropython-lib's runs a line without "await "
        @staticmethod
        async def execute(code, g, s):
            try:
                return eval(code, g)
            except SyntaxError:
                return exec(code, g)

        @staticmethod
        def task(g):
            return "task"

        raw_repl = None

    import __main__

    sys.modules["aiorepl"] = Aiorepl
    try:
        assert console.task() == "task"
        g = __main__.__dict__
        with Capture() as c:
            await Aiorepl.execute("device_add('w', 'ds18b20', pin=4)", g, None)
            ticks = Ticker()
            r = await Aiorepl.execute("device_read('w')", g, None)
            ticks.stop()
    finally:
        del sys.modules["aiorepl"]
    assert r is None and c.lines[-1] == "w = 19.5 °C\n", c.lines
    assert ticks.count >= 30, ticks.count  # the loop ran through the 750 ms conversion


async def test_a_short_heap_drops_the_console_and_its_commands_after_each_line():
    # The console (8 KB of .mpy with the REPL commands' names) loads with a byte typed
    # and, on a short heap, goes after the line: app.console() waits for the next byte
    # without it. The person's names stay.
    import sys
    from support import Capture

    class Reader:
        def __init__(self, data):
            self.data = bytearray(data)

        async def read(self, n):
            c, self.data = self.data[:1], self.data[1:]
            return bytes(c)

    out = []
    raw_out, console._raw_out = console._raw_out, lambda: out.append
    short, limits.HEAP_SHORT = limits.HEAP_SHORT, 1 << 30  # every heap is short
    ns = {}
    try:
        with Capture() as c:
            last = await console.serve(ns, reader=Reader(b"sage = 5\r"), first=b"u", last=0)
            assert last == 13 and ns["usage"] == 5 and "config_show" not in ns
            assert "mimi.repl" not in sys.modules
            last = await console.serve(ns, reader=Reader(b"elp()\r"), first=b"h", last=10)
        assert last == 13 and "config_show()" in c.text, (last, c.text, out)
        assert ns["usage"] == 5 and "config_show" not in ns and "mimi.repl" not in sys.modules
        assert b"".join(out).count(console.PROMPT) == 2
    finally:
        console._raw_out = raw_out
        limits.HEAP_SHORT = short
    # with room, the console stays for the next line (it reads on: here, the end of input)
    with Capture():
        assert await console.serve(ns, reader=Reader(b"help()\r"), first=b"\n", last=13) is None
    assert callable(ns["config_show"]) and ns["usage"] == 5
