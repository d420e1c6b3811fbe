# mimi.console: the raw REPL framing mpremote expects (transport_serial.py:
# enter_raw_repl, exec_raw_no_follow, follow) and the friendly one-line prompt.
from mimi import console, log


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
    feed(con, b"\x05A\x01")  # raw-paste request: understood, not supported
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
