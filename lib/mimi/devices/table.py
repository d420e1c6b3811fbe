# The device table: the devices of /devices.json (limits.DEVICES_PATH), a `board`
# setting's parts and chip_temp, their drivers and last readings; reading and driving
# them by name from the agent thread (blocking) or the asyncio loop (awaited), and the
# file's changes (atomic, through mimi.fs). Loaded on first use (mimi/devices/__init__.py).
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
from mimi import limits, log, fs
import mimi.devices as pkg

TAG = "devices"


class Fault(Exception):
    """What went wrong with a part, for the person: kind "answer" (it did not answer),
    "data" (it answered garbage: CRC), "range" (a reading outside what the part can
    measure), "value" (a value it cannot take), "off" (the device cannot be used)."""

    def __init__(self, kind, text):
        super().__init__(text)
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
    last = None  # the last reading
    at = 0  # time.ticks_ms() of it
    dirty = False  # the driver changed params (a calibration, a ROM found): saved after

    def __init__(self, name, typ, params, mod, kind):
        self.name, self.type, self.params, self.mod, self.kind = name, typ, params, mod, kind
        self.lock = _thread.allocate_lock()

    def driver(self):
        if self.err:
            raise Fault("off", "%s is unusable: %s" % (self.name, self.err))
        if self.drv is None:
            if self.mod is None:  # a /drivers/ type
                self.drv = mimi.run("devices.user", "make", self)
            else:
                name = "mimi.devices.drivers." + self.mod
                __import__(name)
                self.drv = sys.modules[name].make(self)
        return self.drv

    def label(self):
        return "%s (%s%s)" % (self.name, self.type, self.where)

    def entry(self):
        """Its line of the file: name, type, then the parameters in the type's order."""
        import json

        if self.raw is not None:
            return json.dumps(self.raw)
        p = self.params
        keys = self.keys + tuple(k for k in p if k not in self.keys)
        return "{%s}" % ",".join("%s:%s" % (json.dumps(k), json.dumps(v)) for k, v in
                                 [("name", self.name), ("type", self.type)] + [(k, p[k]) for k in keys])


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


def text(reading):
    return ", ".join((q[0] + " " if q[0] else "") + q[2] for q in reading)


_devs = None  # [Device]: replaced whole on a change (readers never lock)
_lock = _thread.allocate_lock()  # one change of the table (and its file) at a time
_made = None  # (board, gpio_allow) the table was made with


def get():
    cfg = _cfg()
    if _devs is None or _made != (cfg.get("board"), cfg.get("gpio_allow")):
        with _lock:
            _load()
    return sys.modules[__name__]


def _cfg():
    from mimi.config import cfg

    return cfg


def _load():
    global _devs, _made
    cfg = _cfg()
    made = (cfg.get("board"), cfg.get("gpio_allow"))
    entries = _read()
    new = mimi.run("devices.types devices.user devices.boards", "load", entries, made[0])
    old = {d.name: d for d in _devs or ()}
    for i, d in enumerate(new):  # a device that did not change keeps its driver's state
        o = old.get(d.name)
        if o and not o.err and not d.err and o.type == d.type and o.params == d.params:
            new[i] = o
    _devs, _made = new, made


def _read():
    """The file's entries; a file that cannot be read is moved aside (logged; the REPL's
    devices() says so) and the firmware runs without its devices."""
    path = limits.DEVICES_PATH
    if not fs.exists(path):
        pkg.saved(False)
        return []
    why = None
    try:
        if fs.size(path) > limits.DEVICES_FILE_MAX:
            raise ValueError("bigger than %d bytes" % limits.DEVICES_FILE_MAX)
        from mimi import jsonutil

        data = jsonutil.loads(fs.read_head(path, limits.DEVICES_FILE_MAX))
        entries = data.get("devices") if isinstance(data, dict) else None
        if not isinstance(entries, list) or any(not isinstance(e, dict) for e in entries):
            raise ValueError('not {"devices": [{...}, ...]}')
        pkg.saved(True)
        return entries
    except OSError as e:
        why = "unreadable (%s)" % e
    except ValueError as e:
        why = "corrupt (%s)" % (str(e)[:80] or "not JSON")
    try:
        fs.rename(path, limits.DEVICES_BAD)
        where = "moved to %s" % limits.DEVICES_BAD
    except OSError as e:
        where = "could not be moved aside (%s)" % fs.why(e)
    pkg.problem = "%s was %s: %s; running without its devices" % (path, why, where)
    log.warning(TAG, pkg.problem)
    pkg.saved(fs.exists(path))
    return []


def _save(devs):
    """Write the file's devices (atomic); with none left the file goes. OSError: nothing
    changed on the flash."""
    entries = [d.entry() for d in devs if not d.builtin]
    if entries:
        fs.write_atomic(limits.DEVICES_PATH, '{"devices": [\n%s\n]}\n' % ",\n".join(entries))
    elif fs.exists(limits.DEVICES_PATH):
        with fs.lock:
            import os

            os.remove(limits.DEVICES_PATH)
    pkg.saved(bool(entries))


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


async def _threaded(fn, *args):
    """fn(*args) with its waits slept on a short thread; the loop polls for the result."""
    import asyncio

    box = []

    def work():
        try:
            box.append((True, run(fn(*args))))
        except BaseException as e:
            box.append((False, e))

    try:
        _thread.stack_size(limits.DEVICE_STACK)
        _thread.start_new_thread(work, ())
    finally:
        _thread.stack_size(0)
    while not box:
        await asyncio.sleep_ms(10)
    ok, v = box[0]
    if not ok:
        raise v
    return v


def _done(dev, r):
    r = shape(r)
    dev.last, dev.at = r, time.ticks_ms()
    if dev.dirty:
        dev.dirty = False
        with _lock:
            try:
                _save(_devs)
            except OSError as e:
                log.warning(TAG, "%s: its new settings were not saved: %s", dev.name, fs.why(e))
    return r


def shape(r):
    """A driver's answer as a reading. The built-in drivers return readings; a /drivers/
    one may return a number, (number, unit), a text, or a list of (label, number or
    text, unit)."""
    if isinstance(r, tuple) and r and isinstance(r[0], tuple):
        return r
    if isinstance(r, list):
        return tuple(_one(*q) for q in r)
    if isinstance(r, tuple) and len(r) == 2:
        return (_one("", *r),)
    return (_one("", r, ""),)


def _one(label, v, unit=""):
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return qty(str(label), v, str(unit))
    return (str(label), None, str(v))


def read(name):
    """Read a device now (blocking: the agent thread, the REPL) -> reading; Fault or the
    driver's exception when it fails."""
    dev = need(name)
    with dev.lock:
        return _done(dev, run(dev.driver().read()))


async def aread(name):
    """read() for the asyncio loop: conversions awaited, a blocking one on a thread."""
    dev = need(name)
    await _take(dev.lock)
    try:
        drv = dev.driver()
        if getattr(drv, "SLOW", False):
            return _done(dev, await _threaded(drv.read))
        return _done(dev, await arun(drv.read()))
    finally:
        dev.lock.release()


def drive(name, value):
    """Drive an actuator (blocking) -> its reading afterwards."""
    dev = need(name)
    with dev.lock:
        drv = dev.driver()
        return _done(dev, run(_setter(dev, drv)(value)))


async def adrive(name, value):
    dev = need(name)
    await _take(dev.lock)
    try:
        drv = dev.driver()
        return _done(dev, await arun(_setter(dev, drv)(value)))
    finally:
        dev.lock.release()


def _setter(dev, drv):
    fn = getattr(drv, "set", None)
    if fn is None:
        raise Fault("value", "%s is a sensor (%s): device_read it" % (dev.name, dev.type))
    return fn


def said(dev, e):
    """An exception of `dev` as the tool's error text."""
    if isinstance(e, Fault):
        if e.kind == "answer":
            hint = getattr(dev.drv, "HINT", None)
            return "Error: %s did not answer: %s%s" % (dev.label(), e, ". Check " + hint if hint else "")
        if e.kind in ("value", "off"):
            return "Error: %s" % e
        return "Error: %s: %s" % (dev.label(), e)
    log.exception(TAG, "%s failed" % dev.name, e)  # a driver's bug: the log keeps its traceback
    return "Error: %s failed: %s: %s" % (dev.label(), type(e).__name__, e)


# --- changes ------------------------------------------------------------------------

def add(name, typ, params):
    """Check, meet and save a new device -> (device, its first reading). Refused
    (ValueError) or Fault: nothing was written."""
    global _devs
    with _lock:
        dev = mimi.run("devices.types devices.user", "make", name, typ, params, _devs)
        try:
            r = _first(dev)
        except Exception as e:  # said as a read would say it
            raise Fault("value", said(dev, e)[len("Error: "):] + "; nothing was added")
        new = _devs[:]
        new.insert(sum(1 for d in new if not d.builtin), dev)
        _save(new)  # OSError: the table stays as it was
        _devs = new
    log.info(TAG, "added %s", dev.label())
    return dev, r


def _first(dev):
    """A new device's first contact: a sensor is read (a part that does not answer is
    not added), an actuator set to its off level."""
    with dev.lock:
        try:
            drv = dev.driver()
            off = getattr(drv, "off", None)
            r = run(off() if off else drv.read())
        except BaseException:
            close(dev)
            raise
        dev.dirty = False  # saved with the device
        r = shape(r)
        dev.last, dev.at = r, time.ticks_ms()
        return r


def remove(name):
    """Forget a device (its actuator left at its off level) -> the device. Fault when
    there is none or it is built in; OSError when the file could not be written."""
    global _devs
    with _lock:
        dev = need(name)
        if dev.builtin:
            raise Fault("value", "%s is part of the board (%s): it cannot be removed%s" % (
                name, dev.type, "" if dev.type == "chip_temp" else "; the board setting adds it"))
        new = [d for d in _devs if d is not dev]
        _save(new)
        _devs = new
    with dev.lock:
        close(dev)
    log.info(TAG, "removed %s", dev.label())
    return dev


def close(dev):
    drv, dev.drv = dev.drv, None
    fn = getattr(drv, "close", None)
    if fn:
        try:
            fn()
        except Exception as e:
            log.exception(TAG, "%s: closing failed" % dev.name, e)
    if dev.bus and dev.bus[0] == "i2c" and not any(d.bus == dev.bus for d in _devs if d is not dev):
        from mimi.devices import bus

        bus.forget(dev.bus[1], dev.bus[2])


def owner(pin):
    """The device using GPIO `pin`, or None."""
    for d in _devs:
        if pin in d.pins:
            return d
    return None


# --- what people and the model read ------------------------------------------------

def ago(dev):
    if dev.last is None:
        return "not read yet"
    s = time.ticks_diff(time.ticks_ms(), dev.at) // 1000
    if s < 0:
        return "a while ago"
    return "now" if s < 60 else "%d min ago" % (s // 60) if s < 3600 else "%d h ago" % (s // 3600)


def line(dev):
    """`living_temp (sht3x at 0x44 on SDA 8 / SCL 9): 21.5 °C, humidity 40 % (2 min ago)`"""
    if dev.err:
        return "%s (%s): unusable: %s" % (dev.name, dev.type, dev.err)
    head = dev.label()
    if dev.last is None and dev.kind == "out":
        try:  # an actuator's state is known without touching its part
            read(dev.name)
        except Exception:
            pass
    if dev.last is None:
        return head + ": not read yet"
    if dev.kind == "out":
        return "%s: %s" % (head, text(dev.last))
    return "%s: %s (%s)" % (head, text(dev.last), ago(dev))
