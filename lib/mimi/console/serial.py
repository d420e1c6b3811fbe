# The REPL on the serial console while the firmware runs: a task on the asyncio
# loop that speaks enough of MicroPython's REPL protocol for a person (one-line
# friendly REPL) and for mpremote (raw REPL: Ctrl-A, command, Ctrl-D -> "OK",
# output, \x04, error, \x04, ">"; and raw-paste mode, mpremote's default, whose
# flow control keeps a UART console's small receive buffer from overflowing), so
# `mpremote connect PORT resume exec ...` and `resume fs cp ...` reach the REPL
# functions without stopping the loop. micropython-lib `aiorepl` is used instead
# when it is installed (its raw REPL holds the loop: the watchdog is fed meanwhile).
# Ctrl-D on an empty friendly line stops the loop (the board's own REPL takes over).
# The raw REPL and raw paste are in console/raw.py, loaded for a raw session.
import sys
import asyncio
import mimi
from mimi import limits, log, board

CTRL_A, CTRL_B, CTRL_C, CTRL_D, CTRL_E = 1, 2, 3, 4, 5
RAW_BANNER = b"raw REPL; CTRL-B to exit\r\n>"
PROMPT = b"mimi> "
FRIENDLY, RAW, PASTE, DRAIN = 0, 1, 2, 3  # DRAIN: a refused paste, read away until its end
STOP = "stop"
later = None  # while a friendly line runs: [coroutine] a command leaves for the loop to await


class Console:
    """Byte-driven REPL state machine; `feed(byte)` returns STOP to end the loop."""

    def __init__(self, namespace, out=None, prompt=PROMPT, greeting=None):
        self.ns = namespace
        self.prompt = prompt
        self.greeting = greeting or b"MimiClaw console: help() lists the commands, Ctrl-D stops the firmware\r\n"
        self.out = out or _raw_out()
        self.mode = FRIENDLY
        self.line = bytearray()  # None: a raw command grew past CONSOLE_RAW_MAX
        self.last = 0
        self.left = 0  # raw paste: bytes until the next window is granted
        self.pending = None  # the line's commands' coroutines (later), awaited before the prompt

    def write(self, b):
        self.out(b)

    def feed(self, c):
        if self.mode == FRIENDLY:
            return self._friendly(c)
        from mimi.console import raw as consoleraw

        r = consoleraw.feed(self, c)
        if self.mode == FRIENDLY:  # the raw session ended
            mimi.drop("console.raw")
            mimi.drop("console")
        return r

    def _friendly(self, c):
        last, self.last = self.last, c
        if c == CTRL_A:
            self.mode = RAW
            self.line = bytearray()
            log.mute = True  # a log line inside the framing would break mpremote
            self.write(b"\r\n" + RAW_BANNER)
        elif c == CTRL_B:
            self.line = bytearray()
            self.write(b"\r\n" + self.greeting + self.prompt)
        elif c == CTRL_C:
            self.line = bytearray()
            self.write(b"\r\n" + self.prompt)
        elif c == CTRL_D:
            if not self.line:
                self.write(b"\r\n")
                return STOP
        elif c == 13 or c == 10:
            if c == 10 and last == 13:
                return None
            src, self.line = bytes(self.line), bytearray()
            self.write(b"\r\n")
            if src.strip():
                self._exec_line(src.decode())
            if not self.pending:
                self.write(self.prompt)
        elif c == 8 or c == 127:
            if self.line:
                # drop a whole UTF-8 character (MicroPython's bytearray has no pop)
                n = len(self.line) - 1
                while n > 0 and (self.line[n] & 0xC0) == 0x80:
                    n -= 1
                self.line = self.line[:n]
                self.write(b"\b \b")
        elif c >= 32 and len(self.line) < limits.CONSOLE_LINE_MAX:
            self.line.append(c)
            self.write(bytes((c,)))
        return None

    async def settle(self):
        """Await what the line's commands left for the loop (a device read: its waits
        awaited, the loop running meanwhile), then the prompt."""
        todo, self.pending = self.pending, None
        for coro in todo:
            try:
                await coro
            except Exception as e:
                sys.print_exception(e)
        self.write(self.prompt)

    def _exec_line(self, src):
        global later
        commands(self.ns)
        later = []
        try:
            try:
                code = compile(src, "<stdin>", "eval")
            except SyntaxError:
                code = None
            if code is not None:
                v = eval(code, self.ns)
                if v is not None:
                    print(repr(v))
            else:
                exec(compile(src, "<stdin>", "exec"), self.ns)
        except SystemExit:
            raise
        except BaseException as e:  # noqa: B902
            sys.print_exception(e)
        finally:
            self.pending, later = later or None, None


async def take(con, data):
    """Bytes into the console; a line's awaited work (Console.pending) is done before the
    next byte is taken."""
    for c in data:
        if con.feed(c) == STOP:
            return STOP
        if con.pending:
            await con.settle()
    return None


def commands(ns):
    """The REPL commands (mimi/repl.py) into namespace ns the first time a person or
    mpremote runs something there, and again after a short heap took them out (rest()):
    until then they take no heap. A name the person gave a value of their own keeps it."""
    if "config_show" not in ns or "mimi.repl" not in sys.modules:
        repl = mimi.load("mimi.repl")
        for name in repl.__all__:
            if name not in ns:
                ns[name] = getattr(repl, name)


def rest(ns):
    """A short heap, nobody in the middle of a line: the REPL commands leave namespace ns
    and their module goes (5 KB of .mpy), as this one does after (app.console())."""
    repl = sys.modules.get("mimi.repl")
    if repl is not None:
        for name in repl.__all__:
            if ns.get(name) is getattr(repl, name):
                del ns[name]
        repl = None
        mimi.drop("repl")


def _raw_out():
    # sys.stdout.buffer skips the device's \n -> \r\n cooking, so the framing is exact.
    w = getattr(sys.stdout, "buffer", sys.stdout).write
    return w


def _namespace():
    import __main__

    return __main__.__dict__


# sys.stdin is a text stream: a byte that is not UTF-8 (line noise on the UART, a
# terminal's odd key) raises UnicodeError from read(1). It becomes BAD, which the
# friendly REPL shows and the raw REPL's compile rejects, instead of ending the task.
BAD = b"?"


async def _read(reader):
    try:
        ch = await reader.read(1)
    except UnicodeError:
        return BAD
    return ch.encode() if isinstance(ch, str) else ch


async def serve(namespace=None, stop=None, reader=None, first=None, last=None):
    """Run the console on sys.stdin until EOF or Ctrl-D (then call stop()) -> None.
    reader, first, last: app.console()'s stdin reader (it keeps Ctrl-C console input
    then), the first byte read already, and the byte that ended the line before; given
    them, on a short heap it ends after a line (-> the byte that ended it) and the next
    byte typed loads it again."""
    con = Console(namespace if namespace is not None else _namespace())
    kbd = None
    if last is not None:
        con.last = last
    elif board.NAME != "host":  # on the unix port kbd_intr(-1) would unhook SIGINT
        import micropython

        kbd = micropython.kbd_intr
        kbd(-1)  # Ctrl-C is console input now, not an interrupt
    reader = reader or asyncio.StreamReader(sys.stdin)
    try:
        while True:
            if first is not None:
                data, first = first, None
            elif con.mode != FRIENDLY:
                from mimi.console import raw as consoleraw

                data = await consoleraw.read(con, reader)
                if con.mode == FRIENDLY:
                    mimi.drop("console.raw")
                    mimi.drop("console")
                    continue  # mpremote went away without Ctrl-B
            else:
                if last is not None and not con.line and mimi.short(True):
                    rest(con.ns)
                    return con.last
                data = await _read(reader)
            if not data:
                return  # stdin closed (host without a console)
            if await take(con, data) == STOP:
                if stop is not None:
                    stop()
                return
    finally:
        log.mute = False
        if kbd is not None:
            kbd(3)


def task(stop=None, reader=None, first=None, last=None):
    """The REPL coroutine (app.console()): aiorepl when installed, else ours."""
    try:
        import aiorepl
    except ImportError:
        return serve(stop=stop, reader=reader, first=first, last=last)
    from mimi.console import raw as consoleraw

    consoleraw.hold_during_raw(aiorepl)
    _settle_after(aiorepl)
    commands(_namespace())
    return aiorepl.task(_namespace())


def _settle_after(aiorepl):
    """aiorepl evaluates a line on the loop too: what its commands leave (later) is
    awaited before it shows the line's result, as our console does."""
    run = aiorepl.execute
    if getattr(run, "settles", False):
        return

    async def execute(code, g, s):
        global later
        later = []
        try:
            r = await run(code, g, s)
        finally:
            todo, later = later, None
        for coro in todo:
            try:
                await coro
            except Exception as e:
                sys.print_exception(e)
        return r

    execute.settles = True
    aiorepl.execute = execute


