# Levels, console output and a small in-RAM ring of recent lines for the REPL.
# micropython-lib `logging` is used for output when it is installed; the firmware
# works the same without it.
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
_ring = []
_lock = _thread.allocate_lock()
_t0 = time.ticks_ms()

try:
    import logging as _logging
except ImportError:
    _logging = None


def _emit(lvl, tag, msg, args):
    if lvl < level:
        return
    if args:
        try:
            msg = msg % args
        except (TypeError, ValueError):
            msg = "%s %r" % (msg, args)
    secs = time.ticks_diff(time.ticks_ms(), _t0) / 1000
    line = "[%9.3f] %s %s: %s" % (secs, _NAMES.get(lvl, "?"), tag, msg)
    if len(line) > limits.LOG_LINE_MAX:
        line = line[: limits.LOG_LINE_MAX - 3] + "..."
    with _lock:
        _ring.append(line)
        if len(_ring) > limits.LOG_RING:
            _ring.pop(0)
    if mute:
        return
    if _logging is not None:
        _logging.getLogger(tag).log(lvl, msg)
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
    if level <= DEBUG:
        import sys

        sys.print_exception(exc)


def recent(n=limits.LOG_RING):
    with _lock:
        return _ring[-n:] if n > 0 else []


def clear():
    with _lock:
        _ring.clear()
