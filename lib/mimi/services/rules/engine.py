# The state of the body's own loop (SPEC §14), which runs while rules or logging devices
# exist: each device a rule watches is read every rule's every_s, each device with
# log_min > 0 every log_min minutes (one read serves both when they fall due together),
# the conversions awaited. A button's presses come from its pin interrupt
# (devices.changed(name)), not by polling. Nothing here touches the network: `set` rules
# work with WiFi down; notices wait (act.py).
#
# This module is all that stays, data only: the loop is the rules' task that waits for
# work anyway (devices.body(), mimi/devices/__init__.py), and a pass
# (services/rules/check.py: the rules loaded when they changed, the devices due read, the
# rules judged and acted on, the readings kept) is loaded for it and, on a heap without
# PSRAM (at most GC_SMALL_HEAP), dropped after with the device layer's code (16 KB of
# .mpy for four parts: rules checked every second must not keep it), as the tools' use
# of the devices is; with room both stay. (Each name here is a slot of the module's
# dictionary for as long as the firmware runs.)
#
# History: readings wait here (12 bytes each: "<Iff" Unix time, value, second value or
# NaN) for their batch (upkeep.py hands them to services/history/store.py, whose readers
# add them); upkeep.flush() writes them all (a reset, the loop's end: mimi.close()). They
# are an immutable bytes, replaced whole by the loop at each change: a reader on the
# agent thread takes it as it is, with no lock.
rules = None  # a rule: a list, its definition then its state (check.py); None: not loaded yet
logs = {}  # device name -> [every_ms, next ticks_ms, waiting readings (bytes)]
bad = {}  # device name -> [failed reads in a row, its rules' chats told]
notes = None  # the notices' count and queue (act.py), from the first notice on
said = set()  # (device, what) logged once: history that cannot be kept
presses = []  # buttons pressed since the last pass (devices.changed(name))
stale = True  # the rules or the devices changed: load them again
