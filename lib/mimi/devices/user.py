# A user's own part types: /drivers/<type>.py (limits.DRIVERS_DIR, outside /spiffs: put
# there with mpremote, never reachable by the model's file tools), loaded when a device
# of that type is added or loaded, skipped in safe mode. What such a file holds
# (docs/hardware.md has an example):
#   KIND = "in"      "in" a sensor, "out" an actuator
#   PARAMS = "..."   what device_add takes, in mimi/devices/types.py's words ("pin:p",
#                    "sda=8:d scl=9:k addr=0x40:x:0x40|0x41", "gain=1:i:1:8" ...)
#   HINT = "..."     optional: what to check when the part does not answer
#   SLOW = True      optional: read() blocks inside one call for long (the loop runs
#                    it on a short thread then)
#   def setup(dev)   optional: once, before the first read or set
#   def read(dev)    -> a number, (number, unit), a text, or [(label, value, unit), ...]
#                       (a generator may yield ms to wait, as the built-in drivers do)
#   def set(dev, value)  an actuator's
# dev: .name, .params, .pin(key, *args) (a board.Pin of a pin parameter: the policy
# checked it), .i2c (the bus of sda/scl: readfrom_mem, writeto ...; each transfer holds
# the bus's lock, so the driver's own waits between transfers hold no other part on
# it), .addr. A driver that raises, or calls sys.exit(), is reported in the tool's
# result and the log; it never stops the loop or the agent.
from mimi import limits, fs
from mimi.devices.table import Fault, qty


def types():
    """The type names /drivers/ offers."""
    import os

    try:
        names = os.listdir(limits.DRIVERS_DIR)
    except OSError:
        return []
    return sorted(n[:-3] for n in names if n.endswith(".py") and _good(n[:-3]))


def _good(t):
    return 1 <= len(t) <= 24 and all("a" <= c <= "z" or "0" <= c <= "9" or c == "_" for c in t)


def _load(typ):
    """The driver file run in a namespace of its own -> that namespace; ValueError (the
    device is refused or left unusable) when it is missing, in safe mode, or broken."""
    import sys

    path = "%s/%s.py" % (limits.DRIVERS_DIR, typ)
    if not _good(typ) or not fs.exists(path):
        return None
    if getattr(sys.modules.get("mimi.safemode"), "active", False):  # (it stays loaded in safe mode)
        raise ValueError("%s not loaded: safe mode skips %s/" % (path, limits.DRIVERS_DIR))
    if fs.size(path) > limits.DRIVER_FILE_MAX:
        raise ValueError("%s is over %d bytes" % (path, limits.DRIVER_FILE_MAX))
    ns = {"__name__": "drivers." + typ}
    try:
        try:
            exec(fs.read_text(path), ns)
        except SystemExit as e:  # no Exception: it would end the thread, or the loop
            raise RuntimeError("it called sys.exit(%s)" % _code(e))
    except Exception as e:
        from mimi import log

        log.exception("devices", "%s failed to load" % path, e)
        raise ValueError("%s failed to load: %s: %s" % (path, type(e).__name__, e))
    if not isinstance(ns.get("PARAMS", ""), str) or ns.get("KIND", "in") not in ("in", "out") or \
            not callable(ns.get("read")):
        raise ValueError("%s needs KIND ('in' or 'out'), PARAMS (a string) and read(dev)" % path)
    return ns


def _code(e):
    return e.args[0] if e.args else ""


def spec(typ):
    ns = _load(typ)
    return (None, ns.get("KIND", "in"), ns.get("PARAMS", "")) if ns else None


class Dev:
    """What a /drivers/ file's functions get."""

    def __init__(self, dev):
        self.name, self.params = dev.name, dev.params
        self.addr = dev.params.get("addr")
        self.i2c = None
        self._pins = dev.pinkeys

    def pin(self, key, *args, **kw):
        """board.Pin(the pin parameter `key`, ...): only pins PARAMS declares as pins,
        which the pin policy checked."""
        from mimi import board

        if key not in self._pins:
            raise ValueError("'%s' is not a pin parameter of PARAMS" % key)
        return board.Pin(self.params[key], *args, **kw)


class Driver:
    def __init__(self, dev):
        try:
            ns = _load(dev.type)
        except ValueError as e:
            raise Fault("off", str(e))
        if ns is None:
            raise Fault("off", "%s/%s.py is gone" % (limits.DRIVERS_DIR, dev.type))
        self.ns, self.dev, self.d = ns, dev, Dev(dev)
        self.HINT = ns.get("HINT")
        self.SLOW = bool(ns.get("SLOW"))
        if dev.bus and dev.bus[0] == "i2c":
            from mimi.devices import bus

            self.bus = bus.i2c(dev.bus[1], dev.bus[2])
            self.d.i2c = Locked(self.bus)
        else:
            self.bus = None
        self.m = dev.mem  # "ready": setup() has run (kept while the code comes and goes)
        if "setup" not in ns:
            self.m["ready"] = True
        if ns.get("set") is None:
            self.set = None

    def _why(self, e):
        """What a driver's exception is said as: sys.exit() a RuntimeError, the bus's
        OSError (a part that did not answer, a stuck bus) a Fault."""
        if isinstance(e, SystemExit):
            return RuntimeError("%s/%s.py called sys.exit(%s)" % (limits.DRIVERS_DIR, self.dev.type, _code(e)))
        if self.bus is not None and isinstance(e, OSError):
            return _fault(e)
        return e

    def _call(self, fn, *args):
        try:
            r = fn(self.d, *args)
        except BaseException as e:  # noqa: B902 - SystemExit too
            raise self._why(e)
        return self._steps(r) if hasattr(r, "send") else r

    def _steps(self, gen):
        """A driver generator's steps, its exceptions said as _call says them."""
        while True:
            try:
                ms = next(gen)
            except StopIteration as e:
                return e.value
            except BaseException as e:  # noqa: B902
                raise self._why(e)
            try:
                yield ms
            except GeneratorExit:  # cancelled while waiting: the driver's finally runs now
                gen.close()
                raise

    def _setup(self):
        if not self.m.get("ready"):
            self._call(self.ns["setup"])
            self.m["ready"] = True

    def read(self):
        self._setup()
        return self._call(self.ns["read"])

    def set(self, value):
        self._setup()
        return self._call(self.ns["set"], value)

    def shape(self, r):
        return shape(r)


class Locked:
    """A driver's I2C: the bus's machine.I2C, each call holding the bus's lock."""

    def __init__(self, b):
        self._b = b

    def __getattr__(self, key):
        fn = getattr(self._b.i2c, key)
        lock = self._b.lock

        def locked(*args, **kw):
            with lock:
                return fn(*args, **kw)

        return locked


def _fault(e):
    from mimi.devices.drivers.i2cpart import fault

    return fault(e)


def shape(r):
    """A /drivers/ read's answer as a reading: a number, (number, unit), a text, or a list
    of (label, number or text, unit); bounded (READING_ITEMS, each text READING_TEXT),
    since it is kept and goes into every prompt."""
    if isinstance(r, list) or isinstance(r, tuple) and r and isinstance(r[0], (tuple, list)):
        return tuple(_one(*q[:3]) if isinstance(q, (tuple, list)) and 2 <= len(q) else _one("", q)
                     for q in r[:limits.READING_ITEMS]) or (_one("", ""),)
    if isinstance(r, tuple) and len(r) == 2:
        return (_one("", *r),)
    return (_one("", r),)


def _cut(s, n):
    s = str(s)
    return s if len(s) <= n else s[:n] + "..."


def _one(label, v, unit=""):
    label, unit = _cut(label, limits.DEVICE_NAME_MAX), _cut(unit, 16)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return qty(label, v, unit)
    return (label, None, _cut(v, limits.READING_TEXT) + (" " + unit if unit else ""))


def make(dev):
    return Driver(dev)
