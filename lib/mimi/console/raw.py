# The console's raw REPL and raw-paste mode (what mpremote talks), loaded by
# console/serial.py when a raw session starts (Ctrl-A) and dropped when it ends.
# mpremote's side is transport_serial.py: enter_raw_repl, exec_raw_no_follow,
# raw_paste_write, follow. The board's own side: shared/runtime/pyexec.c.
import sys
import select
import asyncio
from mimi import limits, log
from mimi.services import watchdog
from mimi.console.serial import RAW, PASTE, DRAIN, FRIENDLY, RAW_BANNER, CTRL_A, CTRL_B, CTRL_C, CTRL_D, CTRL_E, BAD, _read, commands

_poller = None


def feed(con, c):
    if con.mode != RAW:
        return _paste(con, c)
    line = con.line
    if c == CTRL_A:
        con.line = bytearray()
        if line is not None and len(line) == 2 and line[0] == CTRL_E:
            if line[1] != ord("A"):
                con.write(b"R\x00")  # an unknown raw-paste command
                return None
            # Raw paste: a window of W bytes is free, then one more (the \x01); each
            # W bytes read frees another. Two windows fit the UART's ring buffer.
            w = limits.CONSOLE_PASTE_WINDOW
            con.mode = PASTE
            con.left = w
            con.write(b"R\x01" + bytes((w & 0xFF, w >> 8)) + b"\x01")
        else:
            con.write(RAW_BANNER)
    elif c == CTRL_B:
        con.mode = FRIENDLY
        con.line = bytearray()
        log.mute = False
        con.write(b"\r\n" + con.prompt)
    elif c == CTRL_C:
        con.line = bytearray()
    elif c == CTRL_D:
        con.line = bytearray()
        if line is not None and not line:
            # A soft reset would end the firmware; like aiorepl, say it and carry on.
            con.write(b"OK\r\nIgnored: soft reboot\r\n" + RAW_BANNER)
            return None
        con.write(b"OK")
        _exec_raw(con, line)
    else:
        _append(con, c)
    return None


def _append(con, c):
    """One more byte of a raw command; past CONSOLE_RAW_MAX it is refused (None)."""
    if con.line is not None:
        if len(con.line) < limits.CONSOLE_RAW_MAX:
            con.line.append(c)
            return True
        con.line = None  # too long: the command is answered with an error at its end
    return None


def _paste(con, c):
    if con.mode == DRAIN:
        if c == CTRL_C or c == CTRL_D:
            _end_paste(con, None)
        return None
    if c == CTRL_D or c == CTRL_C:
        con.write(b"\x04")  # end of data acknowledged
        _end_paste(con, con.line if c == CTRL_D else KeyboardInterrupt())
        return None
    if not _append(con, c):
        con.write(b"\x04")  # "abrupt end": mpremote stops sending and answers \x04
        con.mode = DRAIN
        return None
    con.left -= 1
    if not con.left:
        con.left = limits.CONSOLE_PASTE_WINDOW
        con.write(b"\x01")
    return None


def _end_paste(con, src):
    con.mode = RAW
    con.line = bytearray()
    _exec_raw(con, src)


def _exec_raw(con, src):
    """Run a raw command (bytes; None: it was too long; an exception: report it)
    with the framing: output, \x04, error, \x04, '>'."""
    err = None
    try:
        if src is None:
            raise MemoryError("command over %d bytes refused" % limits.CONSOLE_RAW_MAX)
        if isinstance(src, BaseException):
            raise src
        commands(con.ns)
        exec(compile(bytes(src).decode(), "<stdin>", "exec"), con.ns)
    except SystemExit:
        con.write(b"\x04\x04>")  # restart() on the host exits; let mpremote finish
        raise
    except BaseException as e:  # noqa: B902 - KeyboardInterrupt too, as the REPL does
        err = e
    con.write(b"\x04")
    if err is not None:
        sys.print_exception(err)
    con.write(b"\x04>")


async def read(con, reader):
    """The next byte(s) of a raw session. The loop is held while mpremote talks, so
    no task prints into the framing; between its commands the loop runs again. A
    session idle for CONSOLE_RAW_IDLE_MS (mpremote gone without Ctrl-B) ends."""
    global _poller
    if _poller is None:
        _poller = select.poll()
        _poller.register(sys.stdin, select.POLLIN)
    data = _read_blocking(_poller, limits.CONSOLE_RAW_POLL_MS)
    if data is None:
        try:
            data = await asyncio.wait_for_ms(_read(reader), limits.CONSOLE_RAW_IDLE_MS)
        except asyncio.TimeoutError:
            con.mode = FRIENDLY
            con.line = bytearray()
            log.mute = False
            return b""
    watchdog.poke()  # the loop is held while mpremote talks: not a hang
    return data


def _read_blocking(poller, timeout_ms):
    if not poller.poll(timeout_ms):
        return None
    try:
        ch = sys.stdin.read(1)
    except UnicodeError:
        return BAD
    return ch.encode() if isinstance(ch, str) else ch


def hold_during_raw(aiorepl):
    """aiorepl's raw REPL (what mpremote talks to) blocks the loop until Ctrl-B, so
    the loop's watchdog task cannot feed: the watchdog is held meanwhile, as our own
    console feeds it from its byte loop. The log is muted as our console mutes it: the
    agent thread runs on, and its lines would land inside mpremote's framing."""
    raw = aiorepl.raw_repl
    if getattr(raw, "held", False):
        return

    def held_raw_repl(*args):
        watchdog.hold(True)
        log.mute = True
        try:
            return raw(*args)  # (an older, async aiorepl yields to the loop: no harm)
        finally:
            log.mute = False
            watchdog.hold(False)

    held_raw_repl.held = True
    aiorepl.raw_repl = held_raw_repl
