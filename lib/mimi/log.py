# Levels, console output and a small in-RAM ring of recent lines for the REPL: one
# bytearray of LOG_RING_BYTES (lines end in \n; the oldest are overwritten), so the
# log takes the same heap after a week as after boot, in one block.
# micropython-lib `logging` is used for output when it is installed; the firmware
# works the same without it.
import sys
import time
import _thread
from mimi import limits

DEBUG = 10
INFO = 20
WARNING = 30
ERROR = 40
_NAMES = {DEBUG: "D", INFO: "I", WARNING: "W", ERROR: "E"}

level = INFO
mute = False  # True while mpremote holds the console (mimi.console): ring only
_ring = bytearray(limits.LOG_RING_BYTES)
_pos = 0  # where the next line goes
_wrapped = False  # the ring has been written all round: older lines are cut
_lock = _thread.allocate_lock()
_up_ms = 0  # uptime shown on each line, carried forward line by line
_last = time.ticks_ms()


def _logging_sink():
    """micropython-lib `logging`'s "mimi" logger when it is installed, else None.
    Its defaults (root at WARNING) would drop every INFO line, so the logger gets its
    own stdout handler printing our lines as they are (tools read them) and passes
    all that our `level` lets through; handlers a user adds to it see the same."""
    try:
        import logging
    except ImportError:
        return None
    try:
        lg = logging.getLogger("mimi")
        if not lg.handlers:
            h = logging.StreamHandler(sys.stdout)
            h.setFormatter(logging.Formatter("%(message)s"))
            lg.addHandler(h)
        if not lg.level:
            lg.setLevel(DEBUG)
        return lg
    except AttributeError:  # some other module named logging: print instead
        return None


_logger = _logging_sink()


_PERIOD = time.ticks_add(0, -1) + 1  # ticks_ms wraps here (ESP32: 2**30 ms, 12.4 days)


def _uptime_ms():
    # A diff from boot would go negative after half a period (6 days on the board):
    # add up the steps between lines instead (time only moves forward, so a negative
    # step is a wrap). Whole milliseconds: float32 seconds lose them after hours.
    global _up_ms, _last
    now = time.ticks_ms()
    step = time.ticks_diff(now, _last)
    _up_ms += step if step >= 0 else step + _PERIOD
    _last = now
    return _up_ms


def _emit(lvl, tag, msg, args):
    if lvl < level:
        return
    if args:
        try:
            msg = msg % args
        except (TypeError, ValueError):
            msg = "%s %r" % (msg, args)
    with _lock:
        up = _uptime_ms()
        line = "[%5d.%03d] %s %s: %s" % (up // 1000, up % 1000, _NAMES.get(lvl, "?"), tag, msg)
        if len(line) > limits.LOG_LINE_MAX:
            line = line[: limits.LOG_LINE_MAX - 3] + "..."
        _keep(line)
    if mute:
        return
    if _logger is not None:
        _logger.log(lvl, line)
    else:
        print(line)


def debug(tag, msg, *args):
    _emit(DEBUG, tag, msg, args)


def info(tag, msg, *args):
    _emit(INFO, tag, msg, args)


def warning(tag, msg, *args):
    _emit(WARNING, tag, msg, args)


def error(tag, msg, *args):
    _emit(ERROR, tag, msg, args)


def exception(tag, msg, exc):
    # One line for the ring, the traceback on the console.
    _emit(ERROR, tag, "%s: %s: %s", (msg, type(exc).__name__, exc))
    sys.print_exception(exc)


def _keep(line):
    global _pos, _wrapped
    data = memoryview(line.encode() + b"\n")
    size = len(_ring)
    while len(data):
        n = min(len(data), size - _pos)
        _ring[_pos:_pos + n] = data[:n]
        data = data[n:]
        _pos += n
        if _pos == size:
            _pos = 0
            _wrapped = True


def recent(n=limits.LOG_RING):
    """The last n lines (at most what the ring holds)."""
    if n <= 0:
        return []
    with _lock:
        raw = bytes(_ring[_pos:]) + bytes(_ring[:_pos]) if _wrapped else bytes(_ring[:_pos])
    lines = raw.split(b"\n")[1 if _wrapped else 0:-1]  # a wrapped ring starts inside a line
    out = []
    for b in lines[-n:]:
        try:
            out.append(b.decode())
        except UnicodeError:  # text the firmware logged as it got it
            out.append(repr(b)[2:-1])
    return out


def clear():
    global _pos, _wrapped
    with _lock:
        _pos = 0
        _wrapped = False
