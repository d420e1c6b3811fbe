# The watchdog is fed only while the loop and the agent thread show life; a slow
# but declared blocking call is not a hang. Time is a fake clock, never waited for.
import time
import _thread
from mimi import board, limits
from mimi.services import watchdog

clock = [1000]


def now():
    return clock[0]


def advance(s):
    clock[0] += int(s * 1000)


class Agent:
    """What the watchdog reads of mimi.agent.worker."""

    def __init__(self):
        self.progress = now()
        self.busy = False

    def running(self):
        return True

    def alive(self):
        self.progress = now()


def setup():
    watchdog._ticks = now
    watchdog._block_until = watchdog._block_mark = None


def make(agent):
    w = watchdog.Watchdog(agent=lambda: agent).start()
    assert board.WDT.last is w.wdt and w.wdt.timeout == limits.WDT_TIMEOUT_MS
    return w


def run_for(w, seconds, agent=None, alive=False):
    fed = 0
    for _ in range(int(seconds // limits.WDT_FEED_S)):
        advance(limits.WDT_FEED_S)
        if alive:
            agent.alive()
        fed += 1 if w.tick() else 0
    return fed


def test_idle_agent_ticking_is_fed():
    a = Agent()
    w = make(a)
    assert run_for(w, 600, a, alive=True) == 600 // limits.WDT_FEED_S
    assert w.wdt.feeds == w.feeds and not w.tripped


def test_stalled_agent_thread_stops_feeding():
    a = Agent()
    a.busy = True  # inside a turn, and nothing moves any more
    w = make(a)
    fed = run_for(w, limits.WDT_AGENT_STALL_S + 60)
    assert fed == limits.WDT_AGENT_STALL_S // limits.WDT_FEED_S
    assert "without progress" in w.tripped
    feeds = w.wdt.feeds
    a.alive()  # even if it wakes later, the reset is already decided
    assert run_for(w, 30) == 0 and w.wdt.feeds == feeds
    assert w.wdt.starved(time.ticks_add(w.wdt.fed_at, limits.WDT_TIMEOUT_MS + 1))


def test_dead_idle_thread_stops_feeding():
    a = Agent()
    w = make(a)
    run_for(w, limits.WDT_AGENT_IDLE_S + 10)
    assert "idle" in w.tripped


def test_slow_but_alive_llm_call_is_fed():
    a = Agent()
    a.busy = True
    w = make(a)
    deadline = limits.WDT_AGENT_STALL_S * 2  # longer than an undeclared stall may be
    from mimi.services.wdtcheck import blocking

    with blocking(deadline):
        assert run_for(w, deadline + limits.WDT_BLOCK_MARGIN_S) == (
            deadline + limits.WDT_BLOCK_MARGIN_S) // limits.WDT_FEED_S
    assert not w.tripped
    # the call returned: that is progress, the stall clock starts again
    assert run_for(w, limits.WDT_AGENT_STALL_S) > 0 and not w.tripped


def test_blocking_call_hung_past_its_deadline_trips():
    a = Agent()
    a.busy = True
    w = make(a)
    watchdog.declare(60)
    run_for(w, 60 + limits.WDT_BLOCK_MARGIN_S + 10)
    assert "past its deadline" in w.tripped


def test_real_thread_stall():
    """A real second thread that stops moving is caught; one that moves is not."""
    a = Agent()
    w = make(a)
    gate = _thread.allocate_lock()
    gate.acquire()
    finished = _thread.allocate_lock()
    finished.acquire()

    def agent_thread():
        a.busy = True
        a.alive()
        gate.acquire()  # stuck here (a hung tool, a lost socket...)
        a.busy = False
        finished.release()

    _thread.start_new_thread(agent_thread, ())
    while not a.busy:
        time.sleep_ms(1)
    run_for(w, limits.WDT_AGENT_STALL_S + 10)
    assert w.tripped
    gate.release()
    finished.acquire()


def test_no_agent_thread_safe_mode():
    w = watchdog.Watchdog(agent=lambda: None).start()
    assert run_for(w, 600) == 600 // limits.WDT_FEED_S


async def test_feeding_happens_on_the_loop():
    import asyncio

    a = Agent()
    w = watchdog.Watchdog(agent=lambda: a)
    t = asyncio.create_task(w.run())
    await asyncio.sleep(0)
    assert w.feeds == 1 and board.WDT.last.feeds == 1
    t.cancel()
    watchdog.current = w
    watchdog.release()  # host: no machine.Timer, must not raise


def test_llm_request_is_a_declared_blocking_call():
    from mimi.llm import anthropic

    seen = []

    class Resp:
        status = 200
        headers = {}
        body = b'{"content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn"}'

    class Client:
        def request(self, method, path, headers=None, body=None, deadline_s=None):
            seen.append(watchdog._block_until)
            return Resp()

    p = anthropic.Anthropic("key", client=Client())
    p.post("/v1/messages", {}, {})
    assert seen[0] is not None and time.ticks_diff(seen[0], now()) == limits.LLM_TIMEOUT_S * 1000
    assert watchdog._block_until is None and watchdog._block_mark == now()


def test_poke_feeds_while_the_loop_is_held_on_purpose():
    # The console holding the loop for mpremote (a deploy's long fs cp) or an OTA
    # download run from the REPL pokes; that feeds at the loop's pace, and only
    # while the agent thread is alive.
    a = Agent()
    w = make(a)
    watchdog.current = w
    watchdog.poke()
    assert w.feeds == 1
    advance(limits.WDT_FEED_S - 1)
    watchdog.poke()
    assert w.feeds == 1  # no faster than the loop task would
    for _ in range(100):  # 500 s with the loop held: still fed
        advance(limits.WDT_FEED_S)
        a.alive()
        watchdog.poke()
    assert w.feeds == 101 and not w.tripped
    a.busy = True  # the agent thread stalls meanwhile: poking does not hide it
    for _ in range(limits.WDT_AGENT_STALL_S // limits.WDT_FEED_S + 2):
        advance(limits.WDT_FEED_S)
        watchdog.poke()
    assert "without progress" in w.tripped
    watchdog.current = None
    watchdog.poke()  # no watchdog running (host, before the loop): nothing happens


def test_agent_thread_that_died_trips_but_a_stopped_one_does_not():
    class Worker(Agent):
        def __init__(self):
            super().__init__()
            self.up = False
            self._stop = False

        def running(self):
            return self.up

    a = Worker()
    w = make(a)
    assert run_for(w, 60) == 60 // limits.WDT_FEED_S  # not started yet: fed
    a.up = True
    assert run_for(w, 60, a, alive=True) == 60 // limits.WDT_FEED_S
    a._stop, a.up = True, False  # worker.stop(): asked to end
    assert run_for(w, 60) == 60 // limits.WDT_FEED_S and not w.tripped
    a._stop, a.up = False, True
    run_for(w, 10, a, alive=True)
    a.up = False  # an exception ended its loop
    run_for(w, 10)
    assert w.tripped == "agent thread ended"


def test_timer_feeder_handover():
    # board: release() feeds from machine.Timer(FEEDER_TIMER); boot.py does the same
    # after a soft reset (timers stop, the esp_task_wdt does not); start() stops it.
    import sys

    calls = []

    class Timer:
        def __init__(self, n):
            self.n = n

        def init(self, period=None, callback=None):
            calls.append(("init", self.n, period))
            self.cb = callback
            callback(self)

        def deinit(self):
            calls.append(("deinit", self.n))

    class FakeMachine:
        pass

    FakeMachine.Timer = Timer
    real = sys.modules.get("machine")
    sys.modules["machine"] = FakeMachine
    try:
        w = watchdog.Watchdog(agent=lambda: None).start()
        assert calls == [("deinit", watchdog.FEEDER_TIMER)]
        watchdog.current = w
        fed = w.wdt.feeds
        watchdog.release()
        assert calls[-1] == ("init", watchdog.FEEDER_TIMER, limits.WDT_FEED_S * 1000)
        assert w.wdt.feeds == fed + 1  # the callback feeds the same WDT
        # hold(): the timer pokes (a feeding decision that still checks the agent)
        del calls[:]
        w.last = None
        watchdog.hold(True)
        assert watchdog.held and calls == [("init", watchdog.FEEDER_TIMER, limits.WDT_FEED_S * 1000)]
        assert w.wdt.feeds == fed + 2
        watchdog.hold(False)
        assert not watchdog.held and calls[-1] == ("deinit", watchdog.FEEDER_TIMER)
    finally:
        if real is None:
            del sys.modules["machine"]
        else:
            sys.modules["machine"] = real
        watchdog.current = None


def test_stale_block_mark_after_a_ticks_wrap_is_not_progress():
    # ESP32 ticks_ms wraps every 2**30 ms: a done() mark from a week ago then looks
    # newer than now. Emulated with this port's own (longer) ticks period.
    half = (time.ticks_add(0, -1) + 1) // 2
    a = Agent()
    w = make(a)
    watchdog._block_mark = time.ticks_add(time.ticks_add(now(), 1 - half), -5001)  # stale, wrapped
    advance(limits.WDT_AGENT_IDLE_S + 5)  # the idle agent went silent
    assert not w.tick() and "silent" in w.tripped


def test_feeding_holds_only_the_check():
    """Starting, the timers and stopping for good are services/wdtcheck.py, loaded for
    them only: the loop task feeds with watchdog.py's check alone."""
    import sys
    import mimi

    mimi.drop("services.wdtcheck")  # (a test before imported it)
    loaded = lambda: "mimi.services.wdtcheck" in sys.modules  # noqa: E731
    a = Agent()
    a.busy = True
    w = make(a)
    assert not loaded()
    for _ in range(limits.WDT_AGENT_STALL_S // limits.WDT_FEED_S):
        advance(limits.WDT_FEED_S)
        assert w.tick() and not loaded()
    advance(limits.WDT_FEED_S)
    assert not w.tick() and w.tripped == "agent turn without progress for %d s" % (
        limits.WDT_AGENT_STALL_S + limits.WDT_FEED_S) and not loaded()
