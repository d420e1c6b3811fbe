# Rules (SPEC §14): the body acting on its own. This package file is the state of its
# loop and the loop (run(); resident while rules or device logging exist; what uses it
# calls it `engine`): the rules' task (devices.body(), mimi/devices/__init__.py) waits
# for work and then hands over to run(), so a firmware without rules or logging devices
# never loads this. check.py is one pass (the rules loaded when they changed,
# the devices due read, the rules judged and acted on), upkeep.py the rule file read and
# what the loop needs now and then, after a pass's reads (the rules loaded, a reading
# kept or a failed read's backoff, a batch of readings written, what a pass says:
# said()), book.py the rules' checks, changes and words, act.py what a firing
# notify or ask rule sends: all loaded for that and dropped (check.py, on a heap without
# PSRAM, at most GC_SMALL_HEAP, after each pass with the device layer's code: 16 KB of
# .mpy for four parts; rules checked every second must not keep it; with room both
# stay). Each device a rule watches is read every rule's every_s, each device with
# log_min > 0 every log_min minutes (one read serves both when they fall due together),
# the conversions awaited; a button's presses come from its pin interrupt
# (devices.changed(name)), not by polling. Nothing here touches the network: `set` rules
# work with WiFi down; notices wait (act.py). (The state here, not in a module of its
# own: a module, its dictionary and its names cost 0.2 KB more on 32-bit .mpy; each name
# here is a slot of the dictionary for as long as the firmware runs.)
#
# History: readings wait here (12 bytes each: "<Iff" Unix time, value, second value or
# NaN; after an 8-byte head, the device's period and next reading: one object a device,
# where a list of the three took 16 B more) for their batch (upkeep.py hands them to services/history/store.py, whose readers
# add them); upkeep.flush() writes them all (a reset, the loop's end: mimi.close()). They
# are an immutable bytes, replaced whole by the loop at each change: a reader on the
# agent thread takes it as it is, with no lock.
rules = None  # the rules: one flat list, each rule its definition then its state (check.py _N slots); None: not loaded yet
logs = {}  # device name -> bytes: "<II" every_ms, next ticks_ms, then its waiting readings
bad = {}  # device name -> [failed reads in a row, its rules' chats told]; (device, what) -> 1:
# logged once, history that cannot be kept (one dict for both: a set of its own took 16 B and a name)
notes = None  # the notices' count and queue (act.py), from the first notice on
presses = None  # buttons pressed since the last pass (devices.changed(name)): a list from the first, taken whole by the pass
stale = True  # the rules or the devices changed: load them again


async def run(flag):
    """The loop (devices.body() runs it once there is work): a pass
    (check.py, loaded for it), then a wait until the next is due or something changes
    (devices.changed() sets flag, an asyncio.ThreadSafeFlag). A pass loads ~14-16 KB
    on a heap without PSRAM (check.py, the device layer, a driver): while a turn runs on
    a short heap (the agent's worker.busy, mimi.short()), or less than RULE_PASS_ROOM is
    free, the pass lets the turn go first, half a second at a time (a wake by a press
    counts as one wait), RULE_HOLD_MS at most; then it runs whatever the heap. (A turn
    takes the heap at its start, its prompt and history, and at its LLM calls: a pass
    begun with room was in its way. gc.mem_free() without a collection: such a heap is
    collected every GC_THRESHOLD bytes allocated, app.py, so its garbage is little; a
    heap with PSRAM has far more than the room free and is not short.)"""
    import gc
    import time
    import asyncio
    import mimi
    from mimi import bus, limits, log

    agent = mimi.load("mimi.agent.worker")  # (the agent thread's: loaded at boot)
    held = 0  # ms waited for room
    while True:
        wait = 500
        if held < limits.RULE_HOLD_MS and (agent.busy and mimi.short() or gc.mem_free() < limits.RULE_PASS_ROOM):
            held += wait
        else:
            held = 0
            try:
                wait = await mimi.load("mimi.services.rules.check").step(time.ticks_ms())
            except Exception as e:  # no room to load the pass (step() logs its own)
                log.warning("rules", "no pass %r", e)  # (10 characters: a qstr, no string kept)
                wait = 1000
        if wait:
            ring = asyncio.create_task(bus.ring(flag, wait))
            await flag.wait()  # (a ring left by a cancel only sets the flag)
            ring.cancel()
