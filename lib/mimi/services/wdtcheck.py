# The watchdog's occasional work (services/watchdog.py loads this for it and drops
# it after): starting the chip's watchdog, the machine.Timer that feeds or pokes it
# while the loop cannot, the decision to stop feeding for good, and `blocking`.
from mimi import limits, log, board
from mimi.services import watchdog
from mimi.services.watchdog import TAG, FEEDER_TIMER


class blocking:
    """`with wdtcheck.blocking(deadline_s): resp = client.request(...)`: declare() and
    done() around a blocking call of the agent thread."""

    def __init__(self, seconds):
        self.seconds = seconds

    def __enter__(self):
        watchdog.declare(self.seconds)
        return self

    def __exit__(self, *exc):
        watchdog.done()
        return False


def start(w):
    if w.wdt is None:
        w.wdt = board.WDT(timeout=w.timeout_ms)
    timer(None)  # boot.py's feeder (after a soft reset) hands over to us
    log.info(TAG, "watchdog on (%d s)", w.timeout_ms // 1000)
    return w


WHY = ("agent thread ended", "agent thread silent %d s while idle", "blocking call %d s past its deadline",
       "agent turn without progress for %d s")


def trip(w):
    """Feeding stops for good: w.tripped, agent_problem()'s (what, ms), said and kept
    as a sentence."""
    what, ms = w.tripped
    w.tripped = WHY[what] % (ms // 1000) if what else WHY[0]
    log.error(TAG, "%s: no more feeding, the watchdog resets the board", w.tripped)


def _poke(_t):
    watchdog.poke()


def timer(how):
    """A machine.Timer every WDT_FEED_S: how = True pokes (watchdog.hold()), a WDT is
    fed as is (watchdog.release()), None/False stops that timer. No machine.Timer on
    the host: nothing to do."""
    if how is True:
        cb = _poke
    elif how is None or how is False:
        cb = None
    else:
        cb = lambda _t: how.feed()  # noqa: E731
    try:
        import machine

        t = machine.Timer(FEEDER_TIMER)
        if cb is None:
            t.deinit()
        else:
            t.init(period=limits.WDT_FEED_S * 1000, callback=cb)
        return True
    except (ImportError, AttributeError, ValueError, OSError):
        return False
