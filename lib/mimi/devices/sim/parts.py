# The simulator's parts (SPEC §13): hardware wired to the host board's pins and
# buses, each written from its datasheet (docs/hardware.md, "Simulated parts").
# attach() wires one, set() changes its readings, levels or faults while the
# firmware runs, get() shows its state; tools/sim --part and the console's
# sim_set()/sim_get() come here. Loaded only when a part is attached or asked for.
import sys
import time
import _thread
from mimi.board.host_pins import SIM_PINS, SIM_WIRES, Pin, settle, sim_drive
from mimi.devices.pins import EXISTING

PIN = "GPIO"  # a KEYS default: a pin number the part must be given

# part type -> the module of mimi/devices/sim/ that simulates it (loaded on first attach)
TYPES = {
    "sht3x": "sht3x", "aht20": "aht20", "bme280": "bme280", "bh1750": "bh1750",
    "ds18b20": "ds18b20", "dht11": "dht", "dht22": "dht", "hcsr04": "hcsr04",
    "ntc": "analog", "ldr": "analog", "soil": "analog", "analog_in": "analog",
    "button": "pins", "digital_out": "pins", "relay": "pins",
    "pwm": "pwm", "servo": "pwm", "buzzer": "pwm", "rgb_led": "ws2812",
}

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


def literal(text):
    """A --part value: 0x44 and 12 are ints, 21.5 a float, none is None, else the text."""
    t = text.strip()
    if t.lower() == "none":
        return None
    for conv in (lambda s: int(s, 0), int, float):
        try:
            return conv(t)
        except ValueError:
            pass
    return t


def parse(spec):
    """'TYPE:key=value,...' (tools/sim --part) -> (type, {key: value})."""
    type_, _, rest = spec.partition(":")
    params = {}
    for item in rest.split(","):
        if not item.strip():
            continue
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValueError("%r is not key=value" % item)
        params[key.strip()] = literal(value)
    return type_.strip(), params


def attach(type_, **params):
    """Wire a new part to the board; -> its name (sht3x@0x44, button@4, ds18b20@4#2)."""
    mod = TYPES.get(type_)
    if mod is None:
        raise ValueError("unknown part type %r (types: %s)" % (type_, ", ".join(sorted(TYPES))))
    mod = "mimi.devices.sim." + mod
    __import__(mod)
    part = sys.modules[mod].TYPES[type_](type_, params)
    name = base = part.label()
    k = 2
    while name in _parts:
        name = "%s#%d" % (base, k)
        k += 1
    part.name = name
    held = part.holder()
    for pin in part.pins():
        owner = _owner.get(pin)
        if owner is not None and owner != held:
            raise ValueError("GPIO%d is taken by %s" % (pin, owner))
    if part.addr is not None:
        bus = _buses.get(part.pins())
        if bus and part.addr in bus:
            raise ValueError("address 0x%02x on %s is taken by %s" % (part.addr, held, bus[part.addr].name))
        _buses.setdefault(part.pins(), {})[part.addr] = part
    for pin in part.pins():
        _owner[pin] = held
    _parts[name] = part
    part.wire()
    for pin in part.pins():
        settle(pin)
    return name


def attach_spec(spec):
    type_, params = parse(spec)
    return attach(type_, **params)


def boot():
    """tools/sim --part SPEC ... (MIMI_SIM_PARTS, a spec a line; tools/simboot.py):
    wire each, or say which one is wrong and exit 2."""
    import os

    for spec in os.getenv("MIMI_SIM_PARTS").split("\n"):
        try:
            print("sim: %s wired to the board" % attach_spec(spec))
        except ValueError as e:
            print("sim: refused --part %s: %s" % (spec, e))
            sys.exit(2)


def detach(name):
    part = find(name)
    del _parts[name]
    if part.addr is not None:
        bus = _buses[part.pins()]
        del bus[part.addr]
        if not bus:
            del _buses[part.pins()]
    else:
        part.unwire()
    held = part.holder()
    for q in _parts.values():
        if q.holder() == held:
            break
    else:
        for pin in part.pins():
            _owner.pop(pin, None)
    for pin in part.pins():
        settle(pin)


def clear():
    """Tests: every part detached, the chip back to its defaults."""
    for name in list(_parts):
        detach(name)
    io = _io()
    io.SIM_CHIP["temp"] = io.CHIP_TEMP


def _io():
    __import__("mimi.board.host_io")
    return sys.modules["mimi.board.host_io"]


def find(name):
    part = _parts.get(name.lower())
    if part is None:
        raise ValueError("no part %r (attached: %s)" % (name, ", ".join(sorted(_parts)) or "none"))
    return part


def names():
    return sorted(_parts)


def i2c_bus(sda, scl):
    """The I2C parts on the bus of these pins: {addr: part} or None."""
    return _buses.get((sda, scl))


def _pin_number(name):
    if name[:3] == "pin" and name[3:].isdigit():
        n = int(name[3:])
        if n in EXISTING:
            return n
        raise ValueError("GPIO%d does not exist on the ESP32-S3" % n)
    return None


def set(name, *args, **values):
    """sim_set: a part's readings, levels or fault; "pinN" a bare pin's outside level
    (sim_set("pin4", 1); None lets it float); "chip_temp" the die (temp=)."""
    n = _pin_number(name)
    if n is not None:
        if len(args) + len(values) != 1 or (values and "level" not in values):
            raise ValueError("sim_set(%r, LEVEL): 1, 0 or None" % name)
        if n in _owner:
            raise ValueError("GPIO%d is wired to %s: sim_set that instead" % (n, _owner[n]))
        sim_drive(n, args[0] if args else values["level"])
        return
    if args:
        raise ValueError("sim_set(%r, key=value, ...)" % name)
    if name == "chip_temp":
        if len(values) != ("temp" in values):
            raise ValueError("chip_temp has one value: temp")
        if "temp" in values:
            _io().SIM_CHIP["temp"] = _number("chip_temp", "temp", values["temp"])
        return
    part = find(name)
    part.set(values)
    for pin in part.pins():
        settle(pin)


_MODES = {Pin.IN: "in", Pin.OUT: "out", Pin.OPEN_DRAIN: "open_drain"}
_PULLS = {Pin.PULL_UP: "up", Pin.PULL_DOWN: "down"}


def pin_state(n):
    level = settle(n)
    st = SIM_PINS[n]
    out = {"mode": _MODES.get(st["mode"]), "level": level, "pull": _PULLS.get(st["pull"])}
    io = sys.modules.get("mimi.board.host_io")
    pwm = io.SIM_PWM.get(n) if io else None
    if pwm is not None:
        out.update(mode="pwm", freq=pwm.freq(), duty_u16=pwm.duty_u16())
    if n in _owner:
        out["wired"] = _owner[n]
    return out


def get(name=None):
    """sim_get: a part's state; "pinN" a pin's mode and level; no name: every part."""
    if name is None:
        return {k: p.state() for k, p in _parts.items()}
    n = _pin_number(name)
    if n is not None:
        return pin_state(n)
    if name == "chip_temp":
        io = _io()
        return {"temp": io.SIM_CHIP["temp"], "reads": io.mcu_temperature()}
    return find(name).state()


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

    # The pin side (board/host_sys.py, host_io.py): the level the part puts on a pin
    # (None: it leaves the line to the pull), what the MCU wrote to it, the volts an
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


sim_set = set  # the console's names for them (mimi/repl.py)
sim_get = get
