# The device table: the devices of /devices.json (limits.DEVICES_PATH), a `board`
# setting's parts and chip_temp, and reading and driving them by name from the agent
# thread (blocking) or the asyncio loop (awaited). Loaded by `with devices.use() as t:`;
# on a short heap dropped again after (Use, drop() below: this code, the drivers, the
# buses, the locks), so everything that must last is in devices/state.py (readings,
# drivers' state), which holds data only. Adding and removing devices is devices/edit.py.
#
# A driver (mimi/devices/drivers/, or a user's /drivers/<type>.py) has read() and, for an
# actuator, set(value). Either returns a reading, or is a generator that yields the ms to
# wait (a conversion) and returns the reading: the agent thread sleeps them, the loop
# awaits them, so a 750 ms DS18B20 conversion never holds the loop. A driver whose read
# blocks inside one call (SLOW: DHT, HC-SR04) runs on a short thread for the loop. Each
# device has a lock (one measurement at a time); each bus has its own (devices/bus.py),
# held only around single transfers.
#
# A reading is a tuple of (label, value, text): ("", 21.5, "21.5 °C"), ("humidity", 40,
# "40 %"); the first is the device's value (rules, history), the texts are what people
# and the model read: `living_temp = 21.5 °C, humidity 40 %`.
import sys
import time
import _thread
import mimi
from mimi import log
import mimi.devices as pkg
from mimi.devices import state

TAG = "devices"


class Fault(Exception):
    """What went wrong with a part, for the person: kind "answer" (it did not answer),
    "data" (it answered garbage: CRC), "range" (a reading outside what the part can
    measure), "value" (a value it cannot take), "off" (the device cannot be used)."""

    def __init__(self, kind, why):
        super().__init__(why)
        self.kind = kind


class Device:
    builtin = False  # chip_temp and a board's parts: not in the file
    bus = None  # ("i2c", sda, scl) / ("ow", pin): shared with the parts on it
    pins = ()
    keys = ()  # the parameters, in the type's order (the file's)
    pinkeys = ()  # the parameters that are pins
    where = ""  # " at 0x44 on SDA 8 / SCL 9", " on GPIO5"
    err = None  # why it cannot be used (loaded from a file entry that fails the checks)
    raw = None  # that entry, kept as it was
    drv = None
    dirty = False  # the driver changed params (a calibration, a ROM found): saved after

    def __init__(self, name, typ, params, mod, kind):
        self.name, self.type, self.params, self.mod, self.kind = name, typ, params, mod, kind

    def driver(self):
        if self.err:
            raise Fault("off", "%s is unusable: %s" % (self.name, self.err))
        if self.drv is None:
            if self.mod is None:  # a /drivers/ type
                self.drv = mimi.run("devices.user", "make", self)
            else:
                self.drv = mimi.load("mimi.devices.drivers." + self.mod).make(self)
        return self.drv

    def label(self):
        return "%s (%s%s)" % (self.name, self.type, self.where)

    @property
    def lock(self):
        return lock_of(self.name)

    @property
    def mem(self):
        """The driver's state, kept while the code comes and goes."""
        return state.mem.setdefault(self.name, {})


def num(v, dec=1):
    """A number for people: `dec` decimals at most, no trailing zeros (40.0 -> "40")."""
    if isinstance(v, int):
        return str(v)
    s = "%.*f" % (dec, v)
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return "0" if s == "-0" else s


def qty(label, value, unit, dec=1):
    return (label, value, num(value, dec) + (" " + unit if unit else ""))


# --- the users: this code loaded while one uses it, dropped on a short heap after ------

class Use:
    """with devices.use() as t: t is this module, loaded (devices.use() makes one)."""

    def __enter__(self):
        with state.lock:
            state.users += 1
        try:
            # by name: the module that made this may have been dropped before the count
            return mimi.load(__name__).get()
        except BaseException:
            self.__exit__()
            raise

    def __exit__(self, *exc):
        with state.lock:
            state.users -= 1
            if state.users or not mimi.short():
                return
        drop()


_KEEP = ("mimi.devices.state", "mimi.devices.button", "mimi.devices.sim")  # never dropped


def drop():
    """Forget the device layer's code (not devices/state.py, a button's handler, nor the
    simulator's parts) unless someone uses it; the next use loads it again. The flash's
    lock first (mimi.unload takes it): one order for both locks."""
    from mimi import fs

    with fs.lock, state.lock:
        if state.users:
            return
        gone = [m for m in sys.modules if m.startswith("mimi.devices.") and not m.startswith(_KEEP)]
        for m in gone:
            mimi.unload(m)
    if gone:
        import gc

        gc.collect()  # the code's room whole again before the turn goes on


# A device's or a bus's name -> its lock (one measurement, one transfer at a time). With
# this code: it is dropped only when no one uses it, so no one holds one of them then
# (kept for good in devices/state.py, four devices' and a bus's took 368 B of a settled
# 32-bit heap).
locks = {}


def lock_of(key):
    lk = locks.get(key)
    if lk is None:
        with state.lock:
            lk = locks.get(key)
            if lk is None:
                lk = locks[key] = _thread.allocate_lock()
    return lk


_devs = None  # [Device]: replaced whole on a change (readers never lock)
_made = None  # (board, gpio_allow) the table was made with
_lock = _thread.allocate_lock()  # one change of the table (and its file) at a time


def get():
    from mimi.config.settings import cfg

    made = (cfg.get("board"), cfg.get("gpio_allow"))
    if _devs is None or _made != made:
        with _lock:
            _load(made)
    return sys.modules[__name__]


_FIELDS = ("name", "type", "params", "mod", "kind", "where", "pins", "bus", "keys", "pinkeys",
           "err", "raw", "builtin")


def _load(made):
    """The devices checked (devices/types.py) when the file or the settings are new to
    the device layer, else as mimi.devices.rows kept them: the code dropped on a short heap
    comes back without reading and checking everything again."""
    global _devs, _made
    kept = pkg.made == made and pkg.rows is not None
    if kept:
        import json

        new = []
        for row in json.loads(pkg.rows):
            d = Device(*row[:5])
            for k, v in zip(_FIELDS[5:], row[5:]):
                v = tuple(v) if isinstance(v, list) else v  # JSON made the tuples lists
                if v != getattr(Device, k):  # (a class's default takes no room in the device)
                    setattr(d, k, v)
            new.append(d)
    else:
        from mimi.devices import store

        new = mimi.run("devices.types devices.user devices.boards", "load", store.read(), made[0])
    old = {d.name: d for d in _devs or ()}
    for i, d in enumerate(new):  # a device that did not change keeps its driver
        o = old.get(d.name)
        if o and not o.err and not d.err and o.type == d.type and o.params == d.params:
            new[i] = o
    if kept:  # the rows are these devices' already, their names words (json.loads gives the qstrs)
        _devs = new
    else:
        _set(new)
    _made = pkg.made = made


def _set(devs):
    global _devs
    import json

    for d in devs:
        d.name = word(d.name)
    _devs = devs
    pkg.rows = json.dumps([_row(d) for d in devs])


def _row(d):
    return tuple(getattr(d, k) for k in _FIELDS)


def word(s):
    """s as a qstr (MicroPython's interned string; getattr() interns the name it is
    given): a device's name is kept for good where its readings, its logging and the
    rules keep it, and a string read from JSON is a 32-byte heap object in each place
    that keeps one; a qstr is one copy in the names' pool, and json.loads and the str
    methods give it back for the same text from then on."""
    getattr(None, s, None)
    return s[:]


def listed():
    return _devs


def find(name):
    for d in _devs:
        if d.name == name:
            return d
    return None


def need(name):
    if not isinstance(name, str):
        raise Fault("off", "'name' required: a device's name (%s)" % ", ".join(x.name for x in _devs))
    d = find(name)
    if d is None:
        raise Fault("off", "no device named '%s' (%s)" % (
            str(name)[:32], "devices: " + ", ".join(x.name for x in _devs)))
    return d


# --- running a driver's steps -------------------------------------------------------

def _steps(r):
    return r if hasattr(r, "send") else None


def run(r):
    """A driver call's result, its waits slept (the agent thread, the REPL)."""
    g = _steps(r)
    if g is None:
        return r
    try:
        while True:
            time.sleep_ms(next(g))
    except StopIteration as e:
        return e.value


async def arun(r):
    """The same with its waits awaited (the asyncio loop)."""
    import asyncio

    g = _steps(r)
    if g is None:
        return r
    try:
        while True:
            await asyncio.sleep_ms(next(g))
    except StopIteration as e:
        return e.value
    except BaseException:  # cancelled while waiting: the driver's finally runs now
        g.close()
        raise


async def _take(lock):
    import asyncio

    while not lock.acquire(0):
        await asyncio.sleep_ms(5)


def done(dev, r):
    """A driver's answer kept as the device's last reading (and params it changed saved)."""
    r = r if dev.mod else dev.drv.shape(r)  # a /drivers/ read's answer (devices/user.py)
    # (one bytes: its ticks then its text, a third of the tuples' heap; a tuple of the two took 16 B more)
    state.last[dev.name] = time.ticks_ms().to_bytes(4, "little") + text(r).encode()
    if dev.dirty:
        dev.dirty = False
        try:
            mimi.run("devices.edit", "save")
        except OSError as e:
            log.warning(TAG, "%s: its new settings were not saved: %s", dev.name, e)
    return r


def read(name):
    """Read a device now (blocking: the agent thread, the REPL) -> reading; Fault or the
    driver's exception when it fails."""
    dev = need(name)
    with dev.lock:
        return done(dev, run(dev.driver().read()))


async def aread(name):
    """read() for the asyncio loop: conversions awaited, a blocking one on a thread."""
    dev = need(name)
    lk = dev.lock
    await _take(lk)
    try:
        drv = dev.driver()
        if getattr(drv, "SLOW", False):
            return done(dev, await mimi.load("mimi.devices.slow").threaded(drv.read))
        return done(dev, await arun(drv.read()))
    finally:
        lk.release()


def drive(name, value):
    """Drive an actuator (blocking) -> its reading afterwards."""
    dev = need(name)
    with dev.lock:
        return done(dev, run(_setter(dev)(value)))


async def adrive(name, value):
    dev = need(name)
    lk = dev.lock
    await _take(lk)
    try:
        return done(dev, await arun(_setter(dev)(value)))
    finally:
        lk.release()


def _setter(dev):
    fn = getattr(dev.driver(), "set", None)
    if fn is None:
        raise Fault("value", "%s is a sensor (%s): device_read it" % (dev.name, dev.type))
    return fn


def said(dev, e):
    """An exception of `dev` as the tool's error text: a part's Fault in devices/faults.py's
    words (loaded for it), no room to load them and anything else (a driver's bug) here."""
    if isinstance(e, Fault):
        return mimi.load("mimi.devices.faults").said(dev, e)
    if isinstance(e, MemoryError):  # not the part's fault nor a bug: it may work later
        log.warning(TAG, "%s: no room in the heap (%s)", dev.name, e)
        return "Error: no room in the board's memory for %s just now (%s)" % (dev.label(), e)
    log.exception(TAG, "%s failed" % dev.name, e)  # a driver's bug: the log keeps its traceback
    return "Error: %s failed: %s: %s" % (dev.label(), type(e).__name__, e)


def text(reading):
    """What people and the model read of a reading: `21.5 °C, humidity 40 %`."""
    return ", ".join((q[0] + " " if q[0] else "") + q[2] for q in reading)


# A device's line is devices/lines.py's, loaded when one is asked for (a listing), not by
# a rules' pass that reads and judges numbers; it goes with the table's code (drop()).

def line(dev):
    """`living_temp (sht3x at 0x44 on SDA 8 / SCL 9): 21.5 °C, humidity 40 % (2 min ago)`"""
    from mimi.devices import lines

    return lines.line_of(_row(dev))
