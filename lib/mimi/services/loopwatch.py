# Stall detector. The asyncio loop serves the gateway, Telegram, the console and
# the dispatcher at once, so any step that holds it (a blocking lookup, a scan, a
# long computation) freezes all of them. Every long-running loop task runs inside
# watch(name, coro), which times each step it takes: a step over LOOP_STALL_MS is
# logged as "W loop: stalled 850 ms in telegram". Tasks a watched task starts (a
# wait_for's, a gateway client's) are watched under the same name (install()). A
# heartbeat (task()) catches the rest: a late wake-up that no watched step explains
# (a long garbage collection). Cost: a small object per task, two ticks_ms() per
# step, one wake-up per LOOP_TICK_MS.
import time
from mimi import limits, log

TAG = "loop"
_explained = 0  # ticks_ms when the last long watched step ended
_current = None  # the name of the watched task whose step runs now


def install():
    """From now on a task created while a watched step runs is watched too, under
    the same name (asyncio.wait_for and start_server run their work as new tasks)."""
    import asyncio
    from asyncio import core

    make = core.create_task
    if getattr(make, "watched", False):
        return

    def create_task(coro):
        if _current is not None and not isinstance(coro, _Watched):  # watched under its own name
            coro = watch(_current, coro)
        return make(coro)

    create_task.watched = True
    core.create_task = asyncio.create_task = create_task


def _timed(name, t0, quiet):
    global _explained
    now = time.ticks_ms()
    dt = time.ticks_diff(now, t0)
    if dt >= limits.LOOP_STALL_MS:
        _explained = now
        if not quiet:
            log.warning(TAG, "stalled %d ms in %s", dt, name)


class _Watched:
    """A task's coroutine as the loop runs it (asyncio calls send() and throw()), each
    step timed. An object of two fields, 32 bytes of heap on the board, where a
    generator wrapping the coroutine took 128: a settled firmware runs ~15 of them."""
    quiet = False

    def __init__(self, name, coro):
        self.name = name
        self.coro = coro

    def send(self, arg):
        return self._step(arg, False)

    def throw(self, exc):  # cancellation and timeouts go to the task
        return self._step(exc, True)

    def close(self):  # as a coroutine's: one never run, or dropped
        c, self.coro = self.coro, None
        if c is not None:
            c.close()

    def _step(self, arg, exc):
        global _current
        t0 = time.ticks_ms()
        outer, _current = _current, self.name
        try:  # the coroutine's end (StopIteration) and exceptions pass through
            return self.coro.throw(arg) if exc else self.coro.send(arg)
        except BaseException:  # noqa: B902 - the task ends with it as it would unwatched
            # a finished task can stay reachable (asyncio's run queue leaves a stale link
            # to it): it keeps this object, not what the coroutine held (its module's code)
            self.coro = None
            raise
        finally:
            _current = outer
            _timed(self.name, t0, self.quiet)


class _Quiet(_Watched):
    quiet = True


def watch(name, coro, quiet=False):
    """coro as the loop runs it, each step timed, for asyncio.create_task() (quiet: long
    steps are expected, e.g. the console serving mpremote, and not logged)."""
    return (_Quiet if quiet else _Watched)(name, coro)


async def task():
    """The heartbeat: a wake-up later than LOOP_STALL_MS that no watched step
    explains is a stall somewhere else."""
    import asyncio

    while True:
        t0 = time.ticks_ms()
        await asyncio.sleep_ms(limits.LOOP_TICK_MS)
        late = time.ticks_diff(time.ticks_ms(), t0) - limits.LOOP_TICK_MS
        if late >= limits.LOOP_STALL_MS and time.ticks_diff(_explained, t0) < 0:
            log.warning(TAG, "stalled %d ms outside the watched tasks (garbage collection?)", late)
