# What the device layer keeps while its code comes and goes. On a heap that is short
# (mimi.short(): a board without PSRAM) the table and the drivers are dropped when the
# last user leaves (`with devices.use() as t:`), like the tools' modules, and loaded
# again from the flash by the next; what must outlive them lives here: the drivers'
# state (an actuator's value, a sensor's last measurement time, a found ROM...), the
# last readings (the ## Devices part of the prompt is made from them and the rows
# without the table: devices/lines.py), the I2C controllers' pins, the locks, a button's
# presses (its pin interrupt's handler is here, so it outlives the driver). The checked
# rows themselves are the package's (mimi.devices.rows, read by devices/lines.py and the
# table), so this module loads only when a device is used: the boot pass
# (devices/outputs.py) drops it. With the rules' loop running it stays: only what must.
import sys
import time
import _thread
import mimi

lock = _thread.allocate_lock()  # users, and loading/dropping the code
users = 0
mem = {}  # device name -> its driver's state (a dict)
last = {}  # device name -> (reading, time.ticks_ms())
i2c_ids = {}  # (sda, scl) -> the I2C controller (0 or 1) those pins have
locks = {}  # a device's or a bus's name -> its lock (one measurement, one transfer at a time)
presses = {}  # button name -> [presses since the last reading, ticks of the last edge]
pressed = None  # fn(name) told of each press as it happens (the rules' `pressed`: engine.changed), or None
_DEBOUNCE_MS = 50
_KEEP = ("mimi.devices.state", "mimi.devices.sim")  # never dropped (the simulator's parts)


def lock_of(key):
    lk = locks.get(key)
    if lk is None:
        with lock:
            lk = locks.get(key)
            if lk is None:
                lk = locks[key] = _thread.allocate_lock()
    return lk


def counter(name, active):
    """A button's pin interrupt handler, on both edges: a press is an edge after 50 ms
    without one, the pin then at its pressed level `active`; an edge within 50 ms of the
    last one is a bounce. (Falling edges alone counted a release's bounces as a press.)"""
    c = presses.setdefault(name, [0, 0])

    def edge(pin):
        now = time.ticks_ms()
        if time.ticks_diff(now, c[1]) >= _DEBOUNCE_MS and pin.value() == active:
            c[0] += 1
            if pressed:
                pressed(name)
        c[1] = now

    return edge


class Use:
    """with devices.use() as t: t is mimi/devices/table.py, loaded."""

    def __enter__(self):
        global users
        with lock:
            users += 1
        try:
            # by name: the table imports this module, not the other way
            return mimi.load("mimi.devices.table").get()
        except BaseException:
            self.__exit__()
            raise

    def __exit__(self, *exc):
        global users
        with lock:
            users -= 1
            if users or not mimi.short():
                return
        drop()


def drop():
    """Forget the device layer's code (not this, nor the simulator's parts) unless
    someone uses it; the next use loads it again. The flash's lock first (mimi.unload
    takes it): one order for both locks."""
    from mimi import fs

    with fs.lock, lock:
        if users:
            return
        gone = [m for m in sys.modules if m.startswith("mimi.devices.") and not m.startswith(_KEEP)]
        for m in gone:
            mimi.unload(m)
    if gone:
        import gc

        gc.collect()  # the code's room whole again before the turn goes on


