# services/loopwatch.py: a loop step that blocks is logged with the task's name
# (tasks a watched task starts inherit it), quiet tasks are not, the heartbeat
# catches the rest, and watched tasks behave as they would unwatched.
import time
import asyncio
from mimi import log, limits
from mimi.services import loopwatch

BLOCK_MS = limits.LOOP_STALL_MS + 150


def stalls():
    return [line for line in log.recent() if "stalled" in line]


def setup():
    log.clear()
    loopwatch.install()


async def blocker():
    await asyncio.sleep_ms(1)
    time.sleep_ms(BLOCK_MS)  # holds the whole loop, as a blocking call would
    return "done"


async def test_a_blocking_step_is_named():
    w = loopwatch.watch
    assert await asyncio.create_task(w("telegram", blocker())) == "done"
    found = stalls()
    assert len(found) == 1 and "W loop: stalled" in found[0] and found[0].endswith("ms in telegram"), found
    ms = int(found[0].split("stalled ")[1].split(" ")[0])
    assert ms >= BLOCK_MS

    async def parent():  # the blocking work runs in a task of its own (wait_for's)
        return await asyncio.wait_for(blocker(), 5)

    log.clear()
    assert await asyncio.create_task(w("dispatch", parent())) == "done"
    assert [s.endswith("in dispatch") for s in stalls()] == [True], stalls()
    log.clear()
    assert await asyncio.create_task(w("console", blocker(), quiet=True)) == "done"
    assert stalls() == []


async def test_heartbeat_catches_what_no_watched_task_explains():
    hb = asyncio.create_task(loopwatch.task())
    await asyncio.sleep_ms(10)
    time.sleep_ms(limits.LOOP_TICK_MS + BLOCK_MS)  # this test's own task is not watched
    await asyncio.sleep_ms(limits.LOOP_TICK_MS * 2)
    found = stalls()
    assert found and "outside the watched tasks" in found[0], found
    log.clear()
    await asyncio.create_task(loopwatch.watch("cron", blocker()))  # explained: logged once
    await asyncio.sleep_ms(limits.LOOP_TICK_MS * 2)
    hb.cancel()
    assert len(stalls()) == 1 and stalls()[0].endswith("in cron"), stalls()


async def test_cancel_exceptions_and_timeouts_pass_through():
    w = loopwatch.watch
    seen = []

    async def sleeper():
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    t = asyncio.create_task(w("cron", sleeper()))
    await asyncio.sleep_ms(5)
    t.cancel()
    try:
        await t
    except asyncio.CancelledError:
        seen.append("ended")
    assert seen == ["cancelled", "ended"]

    async def boom():
        await asyncio.sleep_ms(1)
        raise ValueError("boom")

    try:
        await asyncio.create_task(w("cron", boom()))
        raise AssertionError("no exception")
    except ValueError as e:
        assert str(e) == "boom"
    try:
        await asyncio.wait_for(w("cron", sleeper()), 0.05)
        raise AssertionError("no timeout")
    except asyncio.TimeoutError:
        pass
    assert stalls() == []


async def _holder(end):
    big = bytearray(40000)
    await asyncio.sleep(10 if end == "cancelled" else 0)
    if end == "raised":
        raise ValueError(len(big))
    return len(big)


def _start(end):  # (the coroutine made here: not on the test's own stack)
    return asyncio.create_task(loopwatch.watch("telegram", _holder(end)))


async def test_a_finished_task_keeps_nothing_of_its_coroutine():
    """A finished task can stay reachable for a while (asyncio's run queue leaves a stale
    link to it in the task that was its parent there, until that one has a child again):
    what its coroutine held (a module's code, dropped since) goes all the same, whether
    it returned, raised or was cancelled (docs/reliability.md, "Soak")."""
    import gc

    for end in ("returned", "raised", "cancelled"):
        gc.collect()
        before = gc.mem_alloc()
        t = _start(end)
        await asyncio.sleep_ms(5)
        if end == "cancelled":
            t.cancel()
        try:
            got = await t
        except (ValueError, asyncio.CancelledError) as e:
            got = type(e).__name__
        assert got == {"returned": 40000, "raised": "ValueError", "cancelled": "CancelledError"}[end]
        await asyncio.sleep_ms(5)
        gc.collect()
        assert t.done() and gc.mem_alloc() - before < 4000, (end, gc.mem_alloc() - before)
