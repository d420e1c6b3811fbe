# The body's own loop (SPEC §14), a task on the asyncio loop while rules or logging
# devices exist: each device a rule watches is read every rule's every_s, each device
# with log_min > 0 every log_min minutes (one read serves both when they fall due
# together), the conversions awaited. A button's presses come from its pin interrupt
# (devices/state.py calls changed(name)), not by polling. Nothing here touches the network:
# `set` rules work with WiFi down; notices wait (act.py).
#
# This module is all that stays: the rules' and the logging's state and a small
# scheduler. A pass (services/rules/check.py: the rules loaded when they changed, the
# devices due read, the rules judged and acted on, the readings kept) is loaded for it
# and, on a heap without PSRAM (at most GC_SMALL_HEAP), dropped after with the device
# layer's code (16 KB of .mpy for four parts: rules checked every second must not keep
# it), as the tools' use of the devices is; with room both stay.
#
# History: readings wait here (12 bytes each: "<Iff" Unix time, value, second value or
# NaN) for their batch (upkeep.py hands them to services/history/store.py, whose readers
# add them); flush() writes them all (a reset, the loop's end: mimi.close()). They are
# an immutable bytes, replaced whole by the loop at each change: a reader on the agent
# thread takes it as it is, with no lock.
import mimi

rules = None  # a rule: a list, its definition then its state (check.py); None: not loaded yet
logs = {}  # device name -> [every_ms, next ticks_ms, waiting readings (bytes)]
bad = {}  # device name -> [failed reads in a row, its rules' chats told]
notes = None  # the notices' count and queue (act.py), from the first notice on
said = set()  # (device, what) logged once: history that cannot be kept
presses = []  # buttons pressed since the last pass
stale = True  # the rules or the devices changed: load them again
wake = None
# (the modules this needs are imported where they are used: each name here is a slot
# of the module's dictionary for as long as the firmware runs)


def changed(name=None):
    """The rules or the devices changed (any thread): the loop loads them again. A
    button's press (devices/state.py, from its pin interrupt: keep it short) names it."""
    global stale
    if name is None:
        stale = True
    elif len(presses) < 16:
        presses.append(name)
    if wake:
        wake.set()


def flush():
    """Every waiting reading written (before a reset, at the loop's end)."""
    mimi.run("services.rules.upkeep", "flush")


async def run():
    """The loop task (started by devices.body()): a pass, then a wait until the next is
    due or something changes."""
    global wake
    import sys
    import time
    import asyncio
    from mimi import bus, log

    wake = asyncio.ThreadSafeFlag()
    mimi.closers.append(flush)
    while True:
        try:
            __import__("mimi.services.rules.check")
            wait = await sys.modules["mimi.services.rules.check"].step(time.ticks_ms())
        except Exception as e:  # no room to load the pass (check.step() logs its own)
            log.warning("rules", "no pass: %r", e)
            wait = 1000
        if wait > 0:
            ring = asyncio.create_task(bus.ring(wake, wait))
            try:
                await wake.wait()
            finally:
                ring.cancel()
