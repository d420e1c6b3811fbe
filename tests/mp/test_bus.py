# The bus between the loop and the agent thread (lib/mimi/bus.py) under the unix
# port, which has no GIL: threads really run in parallel here.
import time
import _thread
import asyncio
from mimi import bus

TIMEOUT = 120
PRODUCERS = 4
PER_THREAD = 250


def test_msg_and_session_keys():
    m = bus.Msg("websocket", "abc", "hi")
    assert m.session == "ws_abc" and m.kind == bus.REPLY
    assert bus.Msg("telegram", 123, "x").session == "tg_123"
    assert bus.Msg("system", "cron", "x", bus.STATUS).kind == bus.STATUS
    assert bus.session_key("system", "heartbeat") == "sys_heartbeat"


def test_bounded_fifo_refuses_when_full():
    q = bus.Queue(3)
    assert [q.put(i) for i in range(5)] == [True, True, True, False, False]
    assert len(q) == 3 and q.dropped == 2
    assert [q.get_nowait() for _ in range(4)] == [0, 1, 2, None]
    t0 = time.ticks_ms()
    assert q.get_blocking(timeout_ms=30, idle_ms=5) is None
    assert time.ticks_diff(time.ticks_ms(), t0) >= 30
    assert q.put("x") and q.get_blocking(timeout_ms=0) == "x"
    assert q.put(1) and q.put(2) and q.put(3)
    assert not q.put_wait(4, timeout_ms=20, idle_ms=5)  # still full: gives up when told to


def test_inbound_is_fair_to_chats():
    # issue 16: one chat flooding got 19 answers while another's only message got "busy"
    q = bus.inbound
    flood = [q.put(bus.Msg("telegram", 1, "a%d" % i)) for i in range(20)]
    assert flood.count(True) == 4  # limits.BUS_CHAT_QUEUED; the rest told busy ...
    assert q.put(bus.Msg("telegram", 2, "b0"))  # ... while another chat still gets in
    assert q.put(bus.Msg("websocket", "w", "c0")) and q.put(bus.Msg("telegram", 2, "b1"))
    assert q.put(bus.Msg("telegram", 3, "d0"))
    order = []
    while len(q):
        order.append(q.get_nowait().content)
    # round robin: a chat with a message already waiting goes behind the others
    assert order == ["a0", "b0", "c0", "d0", "a1", "b1", "a2", "a3"], order
    assert bus.outbound.per_chat is None  # replies keep their order as they come


class Done:
    def __init__(self):
        self.lock = _thread.allocate_lock()
        self.n = 0
        self.items = []

    def add(self, items):
        with self.lock:
            self.items.extend(items)
            self.n += 1


async def _wait(done, n):
    while done.n < n:
        await asyncio.sleep_ms(5)


async def test_threads_produce_loop_consumes_nothing_lost():
    q = bus.Queue(16)
    done = Done()

    def producer(k):
        for i in range(PER_THREAD):
            assert q.put_wait((k, i), idle_ms=1)
        done.add(())

    for k in range(PRODUCERS):
        _thread.start_new_thread(producer, (k,))
    got = []
    total = PRODUCERS * PER_THREAD
    while len(got) < total:
        got.append(await asyncio.wait_for(q.get(), 30))
    await _wait(done, PRODUCERS)
    assert len(got) == total
    assert len(set(got)) == total  # no duplicates
    for k in range(PRODUCERS):  # and each producer's order is kept
        mine = [i for (kk, i) in got if kk == k]
        assert mine == list(range(PER_THREAD))
    assert q.get_nowait() is None


async def test_loop_produces_threads_consume_nothing_lost():
    q = bus.Queue(16)
    done = Done()
    stop = []
    total = PRODUCERS * PER_THREAD

    def consumer():
        mine = []
        while not stop:
            m = q.get_blocking(timeout_ms=20, idle_ms=1)
            if m is not None:
                mine.append(m)
        m = q.get_nowait()
        while m is not None:
            mine.append(m)
            m = q.get_nowait()
        done.add(mine)

    for _ in range(PRODUCERS):
        _thread.start_new_thread(consumer, ())
    for i in range(total):
        while not q.put(i):
            await asyncio.sleep_ms(1)
    while len(q):
        await asyncio.sleep_ms(5)
    stop.append(1)
    await _wait(done, PRODUCERS)
    assert sorted(done.items) == list(range(total))


async def test_both_directions_at_once():
    # The real shape: threads answer every message the loop sends, through two queues.
    inq, outq = bus.Queue(16), bus.Queue(16)
    done = Done()
    stop = []
    total = 600

    def agent():
        while not stop:
            m = inq.get_blocking(timeout_ms=20, idle_ms=1)
            if m is not None:
                assert outq.put_wait(("re", m), idle_ms=1)
        done.add(())

    for _ in range(3):
        _thread.start_new_thread(agent, ())
    replies = []

    async def reader():
        while len(replies) < total:
            replies.append(await outq.get())

    rt = asyncio.create_task(reader())
    busy = 0
    for i in range(total):
        while not inq.put(i):
            busy += 1
            await asyncio.sleep_ms(1)
    await asyncio.wait_for(rt, 60)
    stop.append(1)
    await _wait(done, 3)
    assert sorted(m for (_, m) in replies) == list(range(total))


# bus.within / bus.wait_event: wait_for's behaviour without its two extra tasks.
async def test_within_times_out_and_leaves_nothing_behind():
    ev = asyncio.Event()
    t0 = time.ticks_ms()
    try:
        await bus.within(ev.wait(), 0.05)
        raise AssertionError("no timeout")
    except asyncio.TimeoutError:
        pass
    assert time.ticks_diff(time.ticks_ms(), t0) >= 50
    # in time: the result, and the alarm gone (no cancel arrives after the deadline)
    ev.set()

    async def answer():
        await ev.wait()
        return "set"

    assert await bus.within(answer(), 0.05) == "set"
    await asyncio.sleep_ms(120)
    assert await bus.wait_event(ev, 0.05) is True
    assert await bus.wait_event(asyncio.Event(), 0.03) is False
    await asyncio.sleep_ms(80)  # an alarm left running would cancel this sleep


async def test_within_keeps_a_callers_cancel_and_other_errors():
    ev = asyncio.Event()
    cleaned = []

    async def waiter():
        try:
            await bus.within(ev.wait(), 10)
        finally:
            cleaned.append(1)

    t = asyncio.create_task(waiter())
    await asyncio.sleep_ms(10)
    t.cancel()
    try:
        await t
        raise AssertionError("not cancelled")
    except asyncio.CancelledError:
        pass
    assert cleaned == [1]

    async def fails():
        await asyncio.sleep_ms(1)
        raise ValueError("bad frame")

    try:
        await bus.within(fails(), 10)
        raise AssertionError("no error")
    except ValueError as e:
        assert str(e) == "bad frame"
    await asyncio.sleep_ms(20)


async def test_within_holds_less_than_wait_for():
    # why it exists: wait_for keeps the awaited call as a task of its own beside a
    # runner task for as long as it waits (a WebSocket client's ping wait: always)
    import gc

    async def one(ev, how):
        try:
            if how:
                await bus.within(ev.wait(), 100)
            else:
                await asyncio.wait_for(ev.wait(), 100)
        except asyncio.TimeoutError:
            pass

    held = []
    for how in (False, True):
        ev = asyncio.Event()
        gc.collect()
        before = gc.mem_alloc()
        ts = [asyncio.create_task(one(ev, how)) for _ in range(10)]
        await asyncio.sleep_ms(10)
        gc.collect()
        held.append(gc.mem_alloc() - before)
        ev.set()
        for t in ts:
            await t
    assert held[1] < held[0] * 85 // 100, held  # ~0.73 on both word sizes
