# The REPL on the serial console while the firmware runs: a task on the asyncio
# loop that speaks enough of MicroPython's REPL protocol for a person (one-line
# friendly REPL) and for mpremote (raw REPL: Ctrl-A, command, Ctrl-D -> "OK",
# output, \x04, error, \x04, ">"; and raw-paste mode, mpremote's default, whose
# flow control keeps a UART console's small receive buffer from overflowing), so
# `mpremote connect PORT resume exec ...` and `resume fs cp ...` reach the REPL
# functions without stopping the loop. micropython-lib `aiorepl` is used instead
# when it is installed (its raw REPL holds the loop: the watchdog is fed meanwhile).
# Ctrl-D on an empty friendly line stops the loop (the board's own REPL takes over).
import sys
import select
import asyncio
from mimi import limits, log, board
from mimi.services import watchdog

CTRL_A, CTRL_B, CTRL_C, CTRL_D, CTRL_E = 1, 2, 3, 4, 5
RAW_BANNER = b"raw REPL; CTRL-B to exit\r\n>"
PROMPT = b"mimi> "
FRIENDLY, RAW, PASTE, DRAIN = 0, 1, 2, 3  # DRAIN: a refused paste, read away until its end
STOP = "stop"


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

    def write(self, b):
        self.out(b)

    def feed(self, c):
        if self.mode != FRIENDLY:
            return self._raw(c)
        return self._friendly(c)

    # mpremote's side is transport_serial.py: enter_raw_repl, exec_raw_no_follow,
    # raw_paste_write, follow. The board's own side: shared/runtime/pyexec.c.
    def _raw(self, c):
        if self.mode != RAW:
            return self._paste(c)
        line = self.line
        if c == CTRL_A:
            self.line = bytearray()
            if line is not None and len(line) == 2 and line[0] == CTRL_E:
                if line[1] != ord("A"):
                    self.write(b"R\x00")  # an unknown raw-paste command
                    return None
                # Raw paste: a window of W bytes is free, then one more (the \x01); each
                # W bytes read frees another. Two windows fit the UART's ring buffer.
                w = limits.CONSOLE_PASTE_WINDOW
                self.mode = PASTE
                self.left = w
                self.write(b"R\x01" + bytes((w & 0xFF, w >> 8)) + b"\x01")
            else:
                self.write(RAW_BANNER)
        elif c == CTRL_B:
            self.mode = FRIENDLY
            self.line = bytearray()
            log.mute = False
            self.write(b"\r\n" + self.prompt)
        elif c == CTRL_C:
            self.line = bytearray()
        elif c == CTRL_D:
            self.line = bytearray()
            if line is not None and not line:
                # A soft reset would end the firmware; like aiorepl, say it and carry on.
                self.write(b"OK\r\nIgnored: soft reboot\r\n" + RAW_BANNER)
                return None
            self.write(b"OK")
            self._exec_raw(line)
        else:
            self._append(c)
        return None

    def _append(self, c):
        """One more byte of a raw command; past CONSOLE_RAW_MAX it is refused (None)."""
        if self.line is not None:
            if len(self.line) < limits.CONSOLE_RAW_MAX:
                self.line.append(c)
                return True
            self.line = None  # too long: the command is answered with an error at its end
        return None

    def _paste(self, c):
        if self.mode == DRAIN:
            if c == CTRL_C or c == CTRL_D:
                self._end_paste(None)
            return None
        if c == CTRL_D or c == CTRL_C:
            self.write(b"\x04")  # end of data acknowledged
            self._end_paste(self.line if c == CTRL_D else KeyboardInterrupt())
            return None
        if not self._append(c):
            self.write(b"\x04")  # "abrupt end": mpremote stops sending and answers \x04
            self.mode = DRAIN
            return None
        self.left -= 1
        if not self.left:
            self.left = limits.CONSOLE_PASTE_WINDOW
            self.write(b"\x01")
        return None

    def _end_paste(self, src):
        self.mode = RAW
        self.line = bytearray()
        self._exec_raw(src)

    def _exec_raw(self, src):
        """Run a raw command (bytes; None: it was too long; an exception: report it)
        with the framing: output, \x04, error, \x04, '>'."""
        err = None
        try:
            if src is None:
                raise MemoryError("command over %d bytes refused" % limits.CONSOLE_RAW_MAX)
            if isinstance(src, BaseException):
                raise src
            exec(compile(bytes(src).decode(), "<stdin>", "exec"), self.ns)
        except SystemExit:
            self.write(b"\x04\x04>")  # restart() on the host exits; let mpremote finish
            raise
        except BaseException as e:  # noqa: B902 - KeyboardInterrupt too, as the REPL does
            err = e
        self.write(b"\x04")
        if err is not None:
            sys.print_exception(err)
        self.write(b"\x04>")

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

    def _exec_line(self, src):
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


def _read_blocking(poller, timeout_ms):
    if not poller.poll(timeout_ms):
        return None
    try:
        ch = sys.stdin.read(1)
    except UnicodeError:
        return BAD
    return ch.encode() if isinstance(ch, str) else ch


async def serve(namespace=None, stop=None):
    """Run the console on sys.stdin until EOF or Ctrl-D (then call stop())."""
    con = Console(namespace if namespace is not None else _namespace())
    kbd = None
    if board.NAME != "host":  # on the unix port kbd_intr(-1) would unhook SIGINT
        import micropython

        kbd = micropython.kbd_intr
        kbd(-1)  # Ctrl-C is console input now, not an interrupt
    reader = asyncio.StreamReader(sys.stdin)
    poller = select.poll()
    poller.register(sys.stdin, select.POLLIN)
    try:
        while True:
            if con.mode != FRIENDLY:
                # Hold the loop while mpremote talks, so no task prints into the
                # framing; between its commands the loop runs again.
                data = _read_blocking(poller, limits.CONSOLE_RAW_POLL_MS)
                if data is None:
                    try:
                        data = await asyncio.wait_for_ms(_read(reader), limits.CONSOLE_RAW_IDLE_MS)
                    except asyncio.TimeoutError:
                        con.mode = FRIENDLY  # mpremote went away without Ctrl-B
                        con.line = bytearray()
                        log.mute = False
                        continue
            else:
                data = await _read(reader)
            if not data:
                return  # stdin closed (host without a console)
            for c in data:
                if con.feed(c) == STOP:
                    if stop is not None:
                        stop()
                    return
            if con.mode != FRIENDLY:
                watchdog.poke()  # the loop is held while mpremote talks: not a hang
    finally:
        log.mute = False
        if kbd is not None:
            kbd(3)


def serve_blocking(namespace):
    """Host simulator after the loop stopped: the board's own REPL, emulated (the
    unix port has no REPL on a pipe). Ctrl-D on an empty line soft-resets, which
    on the board runs main.py again; here it boots the simulator again."""
    con = Console(namespace, prompt=b">>> ",
                  greeting=b"MicroPython REPL, firmware stopped: restart() or Ctrl-D boots it again\r\n")
    con.write(b"\r\n" + con.greeting + con.prompt)
    while True:
        try:
            ch = sys.stdin.read(1)
        except KeyboardInterrupt:  # the simulator is being stopped
            return
        if not ch:
            return
        for c in ch.encode() if isinstance(ch, str) else ch:
            if con.feed(c) == STOP:
                board.reset()


def task(stop=None):
    """The REPL coroutine for app.tasks(): aiorepl when installed, else ours."""
    try:
        import aiorepl
    except ImportError:
        return serve(stop=stop)
    hold_during_raw(aiorepl)
    return aiorepl.task(_namespace())


def hold_during_raw(aiorepl):
    """aiorepl's raw REPL (what mpremote talks to) blocks the loop until Ctrl-B, so
    the loop's watchdog task cannot feed: the watchdog is held meanwhile, as our own
    console feeds it from its byte loop."""
    raw = aiorepl.raw_repl
    if getattr(raw, "held", False):
        return

    def held_raw_repl(*args):
        watchdog.hold(True)
        try:
            return raw(*args)  # (an older, async aiorepl yields to the loop: no harm)
        finally:
            watchdog.hold(False)

    held_raw_repl.held = True
    aiorepl.raw_repl = held_raw_repl
