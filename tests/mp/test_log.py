# mimi.log with and without micropython-lib `logging` importable. Nothing imports
# mimi.log at the top of this file: each test decides first whether a `logging`
# module is on sys.path (in /lib, where mip installs it on the board).
import sys
import support

# A small stand-in for micropython-lib logging with its defaults: the root logger and
# its console handler at WARNING, a logger without handlers uses the root's.
FAKE_LOGGING = '''
DEBUG, INFO, WARNING, ERROR, NOTSET = 10, 20, 30, 40, 0
LINES = []  # what the stream handlers wrote
_loggers = {}


class Formatter:
    def __init__(self, fmt="%(levelname)s:%(name)s:%(message)s"):
        self.fmt = fmt

    def format(self, r):
        return self.fmt % {"name": r[0], "levelname": str(r[1]), "message": r[2]}


class StreamHandler:
    def __init__(self, stream=None):
        self.level = NOTSET
        self.formatter = Formatter()

    def setFormatter(self, f):
        self.formatter = f

    def setLevel(self, level):
        self.level = level

    def emit(self, r):
        if r[1] >= self.level:
            LINES.append(self.formatter.format(r))


class Logger:
    def __init__(self, name):
        self.name = name
        self.level = NOTSET
        self.handlers = []

    def setLevel(self, level):
        self.level = level

    def addHandler(self, h):
        self.handlers.append(h)

    def log(self, level, msg, *args):
        if level < (self.level or getLogger().level or WARNING):
            return
        if args:
            msg = msg % args
        for h in self.handlers or getLogger().handlers:
            h.emit((self.name, level, msg))


def getLogger(name="root"):
    if name not in _loggers:
        _loggers[name] = Logger(name)
        if name == "root":
            h = StreamHandler()
            h.setLevel(WARNING)
            _loggers[name].addHandler(h)
            _loggers[name].setLevel(WARNING)
    return _loggers[name]
'''


def install_fake_logging():
    support.write("/lib/logging.py", FAKE_LOGGING)
    sys.path.insert(0, "/lib")
    import logging

    return logging


class Records:
    """A handler a user would add (e.g. a file log): keeps what reaches it."""

    def __init__(self):
        self.level = 0
        self.got = []

    def emit(self, r):
        self.got.append(r)


def test_without_logging_lines_are_printed_and_kept():
    support.raises(ImportError, __import__, "logging")
    from mimi import log

    assert log._logger is None
    with support.Capture() as c:
        log.info("ws", "gateway listening on %s:%d", "127.0.0.1", 18789)
        log.debug("ws", "hidden at INFO")
        log.error("llm", "%d%% sure: %s", 100, "no")
    assert "I ws: gateway listening on 127.0.0.1:18789" in c.text, c.text
    assert "hidden" not in c.text
    assert "E llm: 100% sure: no" in c.text
    assert [ln.split("] ", 1)[1] for ln in log.recent(2)] == [
        "I ws: gateway listening on 127.0.0.1:18789", "E llm: 100% sure: no"]


def test_with_logging_installed_info_lines_still_come_out():
    logging = install_fake_logging()
    from mimi import log

    assert log._logger is logging.getLogger("mimi")
    mine = Records()
    log._logger.addHandler(mine)
    with support.Capture() as c:
        log.info("ws", "gateway listening on %s:%d", "127.0.0.1", 18789)
        log.debug("ws", "hidden at INFO")
        log.warning("boot", "50% done")
        log.exception("tools", "x failed", ValueError("bad"))
    assert c.text == ""  # the output went through logging, not print
    out = [ln.split("] ", 1)[1] for ln in logging.LINES]
    # The console shows the same lines as without logging (tools/sim users read them).
    assert out == ["I ws: gateway listening on 127.0.0.1:18789", "W boot: 50% done",
                   "E tools: x failed: ValueError: bad"], out
    assert [r[1] for r in mine.got] == [log.INFO, log.WARNING, log.ERROR]
    log.level = log.DEBUG
    log.debug("ws", "now shown")
    assert logging.LINES[-1].endswith("D ws: now shown")
    log.mute = True  # mpremote holds the console: ring only
    log.info("ws", "muted")
    log.mute = False
    assert "muted" not in logging.LINES[-1] and log.recent(1)[0].endswith("I ws: muted")


def test_firmware_boots_with_logging_installed():
    logging = install_fake_logging()
    from mimi import app, bus

    with support.Capture() as c:
        app.boot()
    assert "MimiClaw" in c.text  # the banner is console output, not a log line
    text = "\n".join(logging.LINES)
    assert "W boot: no LLM API key" in text, text
    # The agent side logs through it too.
    from mimi.agent.react import run_turn
    from mimi.llm.provider import Reply

    class P:
        def chat(self, system, messages, tools=None):
            return Reply("hello", [], {"input": 1, "output": 1, "cache_read": 0})

    assert run_turn(P(), "s", [], "hi", None).text == "hello"
    assert "I agent: turn: 1 LLM calls" in "\n".join(logging.LINES)
    assert bus.inbound.put(bus.Msg("websocket", "1", "x"))


def test_uptime_survives_days_and_tick_wraps():
    import time
    from mimi import log

    week = 7 * 86400 * 1000
    # A week up, and more than half a tick period since the last line (where a plain
    # ticks_diff turns negative; 6 days on the board): the stamp still counts on.
    gap = log._PERIOD // 2 + 2000
    log._up_ms = week
    log._last = time.ticks_add(time.ticks_add(time.ticks_ms(), -(log._PERIOD // 4)),
                               -(gap - log._PERIOD // 4))
    with support.Capture():
        log.info("t", "later")
    assert 0 <= log._up_ms - (week + gap) < 1000, log._up_ms - (week + gap)
    secs, rest = log.recent(1)[0][1:].split("] ", 1)
    assert rest == "I t: later"
    assert int(secs.split(".")[0]) == log._up_ms // 1000 and len(secs.split(".")[1]) == 3
    before = log._up_ms
    with support.Capture():
        log.info("t", "next")
    assert 0 <= log._up_ms - before < 1000


def test_ring_is_one_bounded_block():
    from mimi import log, limits

    with support.Capture():
        for i in range(500):
            log.info("t", "line %d %s", i, "\u00e9" * (i % 7))
    lines = log.recent(1000)
    assert lines[-1].endswith("I t: line 499 " + "\u00e9" * (499 % 7))
    assert 20 <= len(lines) <= limits.LOG_RING and all("I t: line " in x for x in lines)
    assert sum(len(x.encode()) + 1 for x in lines) <= limits.LOG_RING_BYTES
    assert [int(x.split("line ")[1].split()[0]) for x in lines] == list(range(500 - len(lines), 500))  # in order
    assert len(log._ring) == limits.LOG_RING_BYTES
    log.clear()
    assert log.recent() == []
