# The console's side of the simulator's parts (SPEC §13; docs/hardware.md, "Simulated
# parts"): attach() wires one, set() changes its readings, levels or faults while the
# firmware runs, get() shows its state; tools/sim --part and the console's
# sim_set()/sim_get() come here through devices/sim/parts.py, which loads this module
# for each call and drops it (the parts wired keep only parts.py).
import sys
from mimi.board.host_pins import SIM_PINS, Pin, settle, sim_drive
from mimi.devices.sim.parts import EXISTING, _buses, _number, _owner, _parts  # (devices/pins.py may be dropped)

# part type -> the module of mimi/devices/sim/ that simulates it (loaded on first attach)
TYPES = {
    "sht3x": "sht3x", "aht20": "aht20", "bme280": "bme280", "bh1750": "bh1750",
    "ds18b20": "ds18b20", "dht11": "dht", "dht22": "dht", "hcsr04": "hcsr04",
    "ntc": "analog", "ldr": "analog", "soil": "analog", "analog_in": "analog",
    "button": "pins", "digital_out": "pins", "relay": "pins",
    "pwm": "pwm", "servo": "pwm", "buzzer": "pwm", "rgb_led": "ws2812",
}


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
    __import__("mimi.board.host_signals")
    return sys.modules["mimi.board.host_signals"]


def find(name):
    part = _parts.get(name.lower())
    if part is None:
        raise ValueError("no part %r (attached: %s)" % (name, ", ".join(sorted(_parts)) or "none"))
    return part


def names():
    return sorted(_parts)


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
    io = sys.modules.get("mimi.board.host_signals")
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



sim_set = set  # the console's names for them (mimi/repl.py)
sim_get = get
