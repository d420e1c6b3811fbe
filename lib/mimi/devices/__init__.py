# Devices: the named parts wired to the board that the agent reads and drives (SPEC §13),
# which GPIO pins may be used (pins.py) and the pins the GPIO tools drive (gpio.py).
# This package file is all a firmware without devices holds: whether there are any
# (a device file, or a `board` setting's parts) and the way to the table
# (devices/table.py, with the drivers), which loads on first use: `with devices.use()
# as t:`. On a short heap its code is dropped again after (devices/state.py).
from mimi import limits

_file = None  # does limits.DEVICES_PATH exist (None: not looked yet)
scanned = False  # an i2c_scan found something this boot: the raw I2C tool is offered
problem = None  # what happened to a device file that could not be read (the REPL says it)


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


def use():
    """`with devices.use() as t:` t is the device table (mimi/devices/table.py), loaded
    with the file if it is not; on a short heap its code goes again when the last user
    leaves (devices/state.py)."""
    from mimi.devices import state

    return state.Use()
