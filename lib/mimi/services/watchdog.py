# Hardware watchdog, fed only while both halves of the firmware show life:
# - the asyncio loop: the feeding task runs on it, so a stuck loop stops feeding;
# - the agent thread: worker.progress (ticks_ms of its last sign of life) moves
#   every second when idle and at each step of a turn. A blocking call that
#   declares its deadline (declare(s) ... done() around an LLM request) is
#   progress-aware: silence is accepted until the deadline plus a margin.
# When either hangs, feeding stops for good and the chip resets itself.
# Feeding needs only the check here; starting, the timers (a held loop, a stopped
# one) and stopping for good are services/wdtcheck.py, loaded for them.
import time
import mimi
from mimi import limits

TAG = "wdt"
_ticks = time.ticks_ms  # tests drive a fake clock through this
_block_until = None  # ticks_ms the agent thread's current blocking call may last until
_block_mark = None  # ticks_ms of the last declare/done: counts as a sign of life
current = None


def declare(seconds):
    """The calling (agent) thread starts a blocking call that ends within `seconds`."""
    global _block_until, _block_mark
    now = _ticks()
    _block_mark = now
    _block_until = time.ticks_add(now, int(seconds * 1000))


def done():
    global _block_until, _block_mark
    _block_until = None
    _block_mark = _ticks()


def _agent():
    try:
        from mimi.agent import worker
    except ImportError:
        return None
    return worker


class Watchdog:
    def __init__(self, agent=_agent, timeout_ms=limits.WDT_TIMEOUT_MS):
        self._agent = agent  # () -> object with .progress, .busy, .running() (or None)
        self.timeout_ms = timeout_ms
        self.wdt = None
        self.tripped = None  # why feeding stopped
        self.feeds = 0
        self.last = None  # ticks_ms of the last feeding decision
        self._seen = False  # the agent thread was seen running

    def start(self):
        """The chip's watchdog on (boot.py's timer feeding it after a soft reset hands
        over to the loop task) -> self."""
        return mimi.run("services.wdtcheck", "start", self)

    def agent_problem(self, now):
        """None when the agent thread looks alive, else what is wrong: (0: its thread
        ended, 1: silent while idle, 2: a blocking call past its deadline, 3: a turn
        without progress; the ms it has been so), said by wdtcheck.trip()."""
        a = self._agent()
        if a is None:
            return None
        if hasattr(a, "running") and not a.running():
            # Not started yet, or safe mode: fine. Started, then gone without a
            # stop() (an exception out of its loop): nothing would answer again.
            if self._seen and not getattr(a, "_stop", False):
                return 0, 0
            return None
        self._seen = True
        last = a.progress
        # A mark older than half the ticks period (ESP32: 2**29 ms, 6.2 days without
        # an LLM call) wraps and looks newer than `now`: it is stale, not progress.
        if (_block_mark is not None and time.ticks_diff(_block_mark, last) > 0
                and time.ticks_diff(now, _block_mark) >= 0):
            last = _block_mark
        quiet = time.ticks_diff(now, last)
        if not a.busy:
            return None if quiet <= limits.WDT_AGENT_IDLE_S * 1000 else (1, quiet)
        if _block_until is not None:
            over = time.ticks_diff(now, _block_until)
            return None if over <= limits.WDT_BLOCK_MARGIN_S * 1000 else (2, over)
        return None if quiet <= limits.WDT_AGENT_STALL_S * 1000 else (3, quiet)

    def tick(self):
        """One feeding decision (the loop task calls this every WDT_FEED_S)."""
        if self.tripped:
            return False
        now = self.last = _ticks()
        why = self.agent_problem(now)
        if why:
            self.tripped = why  # no more feeding, whatever saying so below meets
            try:
                mimi.run("services.wdtcheck", "trip", self)
            except Exception:  # (no room for its code: the reset comes all the same)
                pass
            return False
        self.wdt.feed()
        self.feeds += 1
        return True

    async def run(self):
        import asyncio

        self.start()
        while True:
            self.tick()
            await asyncio.sleep(limits.WDT_FEED_S)


def task():
    """The loop task: start the hardware watchdog and feed it while all is well."""
    global current
    current = Watchdog()
    return current.run()


def poke():
    """The loop is held on purpose (the console serving mpremote, an OTA download
    run from the REPL): feed from there, as the loop task would, at most every
    WDT_FEED_S and still only while the agent thread shows life."""
    w = current
    if w is not None and w.wdt is not None and (
            w.last is None or time.ticks_diff(_ticks(), w.last) >= limits.WDT_FEED_S * 1000):
        w.tick()


held = False  # hold(True): the loop is blocked on purpose (aiorepl's raw REPL)
FEEDER_TIMER = 0  # machine.Timer id (the ESP32-S3 has 0..3); boot.py uses the same


def hold(on):
    """The loop will be blocked for a while on purpose by code that cannot call
    poke() (aiorepl's raw REPL while mpremote copies files): a machine.Timer calls
    poke() meanwhile, which still stops feeding if the agent thread hangs."""
    global held
    held = bool(on)
    _timer(held)


def release():
    """The loop stopped on purpose (Ctrl-C): the REPL must not be reset from under
    the user, and the chip's watchdog cannot be turned off, so a timer feeds it.
    A soft reset stops that timer but not the watchdog: boot.py starts it again."""
    w = current
    if w is not None and w.wdt is not None:
        _timer(w.wdt)


def _timer(how):
    # (wdtcheck.timer()): loaded from the flash, which may find no room where the loop
    # died of a full heap; what runs after (app.py: the readings flushed) must still run
    try:
        mimi.run("services.wdtcheck", "timer", how)
    except Exception as e:
        from mimi import log

        log.error(TAG, "no feeding timer: %s", e)
