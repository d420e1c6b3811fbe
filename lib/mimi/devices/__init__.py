# Devices: the named parts wired to the board that the agent reads and drives (SPEC §13),
# which GPIO pins may be used (pins.py) and the pins the GPIO tools drive (gpio.py).
# This package file is all a firmware without devices holds: whether there are any
# (a device file, or a `board` setting's parts) and the way to the table
# (devices/table.py, with the drivers), which loads on first use: `with devices.use()
# as t:`. On a short heap its code is dropped again after (devices/table.py drop(); what
# outlives it: devices/state.py).
from mimi import limits

_file = None  # does limits.DEVICES_PATH exist (None: not looked yet)
scanned = False  # an i2c_scan found something this boot: the raw I2C tool is offered
problem = None  # what happened to a device file that could not be read (the REPL says it)
# The devices as the table last checked them (devices/table.py _FIELDS), as the JSON text
# of their rows (half the heap of the tuples), and the (board, gpio_allow) settings they
# were checked with: what the prompt's ## Devices part, the GPIO tools and the rules'
# loop need (devices/lines.py reads them), here so that nothing else of the device
# layer stays loaded until a device is read or driven (devices/state.py then).
rows = None
made = None


def attached():
    """Are there devices (the device file, or a `board` setting's parts)? chip_temp,
    always there, does not count."""
    global _file
    if _file is None:
        from mimi import fs

        _file = fs.exists(limits.DEVICES_PATH)
    if _file:
        return True
    from mimi.config.settings import cfg

    return bool(cfg.get("board"))


def offer():
    """Which device tools a request offers (mimi/tools NEEDS): bit 1 devices are
    attached, bit 2 an I2C scan found parts this boot."""
    return (1 if attached() else 0) | (2 if scanned else 0)


def saved(exists):
    """The table wrote (True) or removed (False) the device file."""
    global _file
    _file = exists
    changed()


_later = None  # the rules' loop's wake-up (an asyncio.ThreadSafeFlag: set from any thread)


def changed(name=None):
    """The devices or the rules changed (any thread), or with a name a button was
    pressed (devices/button.py, from its pin interrupt: keep it short): the loop of the
    rules and the history takes them again, or starts (body())."""
    import sys

    e = sys.modules.get("mimi.services.rules")
    if e:
        if name is None:
            e.stale = True
        else:  # (None at rest, 32 B less than an empty list: check.py takes them whole)
            p = e.presses or []
            if len(p) < 16:
                p.append(name)
                e.presses = p
    if _later:
        _later.set()


def _body():
    """Is there work for the rules' loop: a rule file, or a device that logs?"""
    from mimi import fs

    if fs.exists(limits.RULES_PATH):
        return True
    import mimi

    return attached() and bool(mimi.run("devices.lines", "logging"))


async def body():
    """The task of the rules and the history (startup.tasks()): waits until there is a
    rule or a device that logs, then runs the rules' loop (services/rules/__init__.py
    run(), loaded only then), so that a firmware without that work holds nothing else
    for it. (Awaited here, not handed to a task of its own: this frame is ~0.1 KB less
    than a new task and the ended one's remains, 32-bit .mpy.)"""
    global _later
    import asyncio

    _later = asyncio.ThreadSafeFlag()
    while not _body():
        await _later.wait()
    from mimi.services import rules

    await rules.run(_later)


def use():
    """`with devices.use() as t:` t is the device table (mimi/devices/table.py), loaded
    with the file if it is not; on a short heap its code goes again when the last user
    leaves (devices/table.py Use, drop())."""
    import mimi

    return mimi.load("mimi.devices.table").Use()
