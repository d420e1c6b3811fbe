# The asyncio loop's longest gap, for bench/mp/stall.py, devices.py and body.py: a probe
# task sleeps 1 ms at a time and keeps the longest time between its wake-ups (minus the
# 1 ms). Those scripts find this module on sys.path as A["mp_dir"] (bench/common.py mp_args).
import asyncio
import time


class Probe:
    """Started on creation (inside a running loop); .worst so far; stop() -> the worst."""

    def __init__(self):
        self.worst = 0
        self._done = False
        self._task = asyncio.create_task(self._run())

    async def _run(self):
        last = time.ticks_ms()
        while not self._done:
            await asyncio.sleep_ms(1)
            now = time.ticks_ms()
            self.worst = max(self.worst, time.ticks_diff(now, last) - 1)
            last = now

    async def stop(self):
        self._done = True
        await self._task
        return self.worst
