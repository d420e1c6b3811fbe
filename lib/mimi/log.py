# Levels, console output and a small in-RAM ring of recent lines for the REPL.
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
_ring = []
_lock = _thread.allocate_lock()
_t0 = time.ticks_ms()


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
    if level <= DEBUG:
        sys.print_exception(exc)


def recent(n=limits.LOG_RING):
    with _lock:
        return _ring[-n:] if n > 0 else []


def clear():
    with _lock:
        _ring.clear()
