# The body's own loop (SPEC §14), a task on the asyncio loop while rules or logging
# devices exist: each device a rule watches is read every rule's every_s, each device
# with log_min > 0 every log_min minutes (one read serves both when they fall due
# together), the conversions awaited. A button's presses come from its pin interrupt
# (devices/state.py calls press()), not by polling. Nothing here touches the network:
# `set` rules work with WiFi down; notices wait (act.py).
#
# This module is what stays: the rules' and the logging's state and the loop. A pass
# (reading, judging, acting, keeping readings: services/rules/check.py) is loaded for it
# and, on a heap without PSRAM (at most GC_SMALL_HEAP), dropped after with the device
# layer's code (16 KB of .mpy for four parts: rules checked every second must not keep
# it), as the tools' use of the devices is; with room both stay.
#
# History: readings wait here (12 bytes each: "<Iff" Unix time, value, second value or
# NaN) for their batch (upkeep.py hands them to services/history/store.py); the store's
# readers add them (waiting()), flush() writes them all (a reset, the loop's end:
# mimi.close()).
import sys
import time
import asyncio
import _thread
import mimi
from mimi import limits, log, bus
from mimi.devices import state

TAG = "rules"
rules = []  # a rule: a list, its definition then its state (check.py)
logs = {}  # device name -> [every_ms, next ticks_ms, waiting readings (bytearray)]
bad = {}  # device name -> [failed reads in a row, its rules' chats told]
held = []  # notices waiting for the network (act.py)
missed = {}  # (channel, chat) -> notices beyond RULE_HELD_MAX or the hourly ceiling
hour = [0, 0]  # ticks_ms the notice hour began, notices sent in it
said = set()  # (device, what) logged once: history that cannot be kept
presses = []  # buttons pressed since the last pass
stale = True  # the rules or the devices changed: load them again
lock = _thread.allocate_lock()  # the waiting readings: the loop adds, readers copy
_wake = None
_small = False


def press(name):
    """A button's press (devices/state.py, from its pin interrupt: keep it short)."""
    if len(presses) < 16:
        presses.append(name)
    if _wake:
        _wake.set()


def changed():
    """The rules or the devices changed (any thread): the loop loads them again."""
    global stale
    stale = True
    if _wake:
        _wake.set()


def _drop(table):
    """After a pass on a heap without PSRAM: its code goes, and the device layer's unless
    it was loaded before it (`table`: a user's, still using it)."""
    if _small:
        mimi.unload("mimi.services.rules.check")
        if not table:
            state.drop()


def load():
    """The rules from the file, the logging devices from the table (upkeep.load())."""
    table = "mimi.devices.table" in sys.modules
    try:
        mimi.run("services.rules.upkeep", "load")
    finally:
        _drop(table)


async def step(now):
    """One pass at ticks `now` (check.step()) -> ms until the next is due."""
    table = "mimi.devices.table" in sys.modules
    try:
        __import__("mimi.services.rules.check")
        return await sys.modules["mimi.services.rules.check"].step(now)
    finally:
        _drop(table)


async def run():
    """The loop task (started by devices.body())."""
    global _wake, _small
    import gc

    _wake = asyncio.ThreadSafeFlag()
    mimi.closers.append(flush)
    _small = gc.mem_free() + gc.mem_alloc() <= limits.GC_SMALL_HEAP
    mimi.run("services.rules.upkeep", "prune")
    load()
    log.info(TAG, "running: %d rule(s), %d device(s) logging", len(rules), len(logs))
    while True:
        try:
            wait = await step(time.ticks_ms())
        except MemoryError:  # a moment of a short heap (a long reply going out): nothing lost
            log.warning(TAG, "no room in the heap for a pass; the next one tries again")
            wait = 1000
        except Exception as e:  # one bad pass stops nothing
            log.exception(TAG, "a pass failed", e)
            wait = 1000
        if wait > 0:
            ring = asyncio.create_task(bus.ring(_wake, wait))
            try:
                await _wake.wait()
            finally:
                ring.cancel()


def waiting(name=None):
    """The readings waiting for the device's next batch: (bytes, their every_s) or None
    (the store's readers add them); no name: the devices with some waiting."""
    if name is None:
        return [k for k, lg in logs.items() if lg[2]]
    lg = logs.get(name)
    if not lg or not lg[2]:
        return None
    with lock:
        return bytes(lg[2]), lg[0] // 1000


def flush():
    """Every waiting reading written (before a reset, at the loop's end)."""
    if any(lg[2] for lg in logs.values()):
        mimi.run("services.rules.upkeep", "flush")
