# The simulator's parts wired to the host board (SPEC §13), kept: what the parts need
# while they run (their base classes, their clock, the bus and pin tables the host's I2C
# and pins look up). attach() wires one, set() changes its readings, levels or faults
# while the firmware runs, get() shows its state: devices/sim/wiring.py, loaded for each
# call (parts.attach() and the rest reach it through __getattr__ below); tools/sim --part
# and the console's sim_set()/sim_get() come there. Loaded only when a part is attached
# or asked for.
import time
import _thread
from mimi.board.host_pins import SIM_WIRES
from mimi.devices.pins import EXISTING

PIN = "GPIO"  # a KEYS default: a pin number the part must be given

_parts = {}  # name -> part
_buses = {}  # (sda, scl) -> {addr: I2C part}
_owner = {}  # pin -> what holds it: a part's name, "I2C SDA 8 / SCL 9", "1-Wire 4"

_clock = [0.0, time.ticks_ms(), time.ticks_us()]
_lock = _thread.allocate_lock()


def now():
    """Milliseconds since this module loaded, to the µs (the parts' clock: never wraps
    as ticks_ms/ticks_us do, as long as it is read once in a few days)."""
    with _lock:
        c = _clock
        m, u = time.ticks_ms(), time.ticks_us()
        dm = time.ticks_diff(m, c[1])
        c[0] += dm if dm > 60000 else time.ticks_diff(u, c[2]) / 1000
        c[1], c[2] = m, u
        return c[0]


def i2c_bus(sda, scl):
    """The I2C parts on the bus of these pins: {addr: part} or None."""
    return _buses.get((sda, scl))


def _number(what, key, v, none=False):
    if v is None and none:
        return None
    if isinstance(v, (int, float)):
        return v
    raise ValueError("%s: %s must be a number, not %r" % (what, key, v))


def coerce(what, key, default, v):
    """A key's value as its default's kind (PIN: a GPIO of the ESP32-S3)."""
    if default is PIN:
        if isinstance(v, int) and v in EXISTING:
            return v
        raise ValueError("%s: %s=%r is not a GPIO of the ESP32-S3 (0-21, 26-48)" % (what, key, v))
    if isinstance(default, str):
        if isinstance(v, str) or v is None:
            return v or "none"
        raise ValueError("%s: %s must be a word, not %r" % (what, key, v))
    if isinstance(default, float) or default is None:
        v = _number(what, key, v, default is None)
        return v if v is None else float(v)
    if isinstance(v, int):
        return int(v)
    raise ValueError("%s: %s must be a whole number, not %r" % (what, key, v))


class Part:
    """A simulated part. KEYS: (key, default) pairs tools/sim --part and attach() take
    (default PIN: required); VALUES: the keys sim_set may change; FAULTS: the faults
    sim_set(fault=...) may set. Subclasses add check() (ranges) and their protocol."""

    KEYS = ()
    VALUES = ()
    FAULTS = ()
    NONE_OK = ()  # keys that may be None
    addr = None

    def __init__(self, type_, params):
        self.type = self.name = type_
        self.fault = None
        up = params.pop("up_ms", 0)
        keys = [k for k, _ in self.KEYS]
        for k in params:
            if k not in keys:
                raise ValueError("%s has no key %r (keys: %s, up_ms)" % (type_, k, ", ".join(keys)))
        for k, default in self.KEYS:
            if k in params:
                setattr(self, k, self.coerce(k, default, params[k]))
            elif default is PIN:
                raise ValueError("%s needs %s= (the GPIO it is wired to)" % (type_, k))
            else:
                setattr(self, k, default)
        self.born = now() - coerce(type_, "up_ms", 0, up)
        self.check()

    def coerce(self, key, default, v):
        return None if v is None and key in self.NONE_OK else coerce(self.type, key, default, v)

    def clock(self):
        """Milliseconds since the part was powered."""
        return now() - self.born

    def check(self):
        pass

    def label(self):
        return "%s@%d" % (self.type, self.pin)

    def pins(self):
        return (self.pin,)

    def holder(self):
        return self.name

    def wire(self):
        for pin in self.pins():
            SIM_WIRES[pin] = self

    def unwire(self):
        for pin in self.pins():
            SIM_WIRES.pop(pin, None)

    def set(self, values):
        old = {}
        for k, v in values.items():
            if k == "fault":
                if v is not None and v not in self.FAULTS:
                    raise ValueError("%s faults: %s, or None" % (self.type, ", ".join(self.FAULTS) or "none"))
            elif k not in self.VALUES:
                raise ValueError("%s values: %s" % (self.type, ", ".join(self.VALUES + ("fault",))))
            else:
                v = self.coerce(k, dict(self.KEYS)[k], v)
            old[k] = getattr(self, k)
            setattr(self, k, v)
        try:
            self.check()
        except ValueError:
            for k, v in old.items():
                setattr(self, k, v)
            raise

    def state(self):
        out = {k: getattr(self, k) for k in self.VALUES}
        out["fault"] = self.fault
        return out

    # The pin side (board/host_pins.py, host_signals.py): the level the part puts on a
    # pin (None: it leaves the line to the pull), what the MCU wrote to it, the volts an
    # ADC reads there (None: nothing analogue).
    def drive(self, pin):
        return None

    def written(self, pin, level):
        pass

    def analog(self, pin):
        return None


class I2CPart(Part):
    """A part on an I2C bus. The host's I2C (board/host_io.py) asks ack() for the
    address byte, then hands it the bytes written, or asks for n bytes to read (after
    stretch_us() of SCL held low). Before BOOT_MS after power-up, and until
    self.quiet (ms of clock()), it does not answer."""

    ADDRS = ()
    BOOT_MS = 1
    FAULTS = ("nack", "stuck", "crc")

    def __init__(self, type_, params):
        Part.__init__(self, type_, params)
        self.quiet = self.BOOT_MS

    def check(self):
        if self.addr not in self.ADDRS:
            raise ValueError("%s answers at %s, not 0x%02x" % (
                self.type, " or ".join("0x%02x" % a for a in self.ADDRS), self.addr))

    def label(self):
        return "%s@0x%02x" % (self.type, self.addr)

    def pins(self):
        return (self.sda, self.scl)

    def holder(self):
        return "I2C SDA %d / SCL %d" % (self.sda, self.scl)

    def wire(self):
        pass

    def ack(self, reading):
        return self.fault != "nack" and self.clock() >= self.quiet

    def write(self, data):
        """The bytes of a write after its address; False: NACK on a byte."""
        return True

    def read(self, n):
        return bytes(n)

    def stretch_us(self):
        return 0

    def crc(self, data):
        from mimi.devices.sim.crc import sensirion

        c = sensirion(data)
        return c ^ 0xFF if self.fault == "crc" else c

    def state(self):
        out = Part.state(self)
        out["bus"] = self.holder()
        return out




def __getattr__(name):
    """attach(), set(), get() and the rest of the console's side (devices/sim/wiring.py),
    loaded for the call and dropped: the parts wired need only this module."""
    if name[:1] == "_":
        raise AttributeError(name)
    import mimi

    try:
        return getattr(mimi.load("mimi.devices.sim.wiring"), name)
    finally:
        mimi.unload("mimi.devices.sim.wiring")
