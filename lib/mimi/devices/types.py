# The part types and what each takes, and the checks every device passes before it is
# added or loaded: its parameters, the pin policy (devices/pins.py and the
# `gpio_allow` setting) for every pin, one pin one device (parts on one I2C bus or one
# 1-Wire line share theirs), at most DEVICES_MAX devices. Loaded for an add or a load
# and dropped after (mimi.run).
#
# A type: (name, driver module in mimi/devices/drivers/, "in" sensor or "out" actuator,
# parameters), in the order the types are listed to people. Parameters, space-separated, each `name[=default]:rule[:args]`:
#   p  a GPIO pin, the device's alone       a  an ADC1 pin (GPIO1-10), the device's alone
#   d  I2C SDA  k  I2C SCL (shared by the parts on that bus)   w  a 1-Wire line (shared)
#   x:A|B  an I2C address among these        b  true/false
#   i:LO:HI  a whole number                  f:LO:HI  a number
#   c:A|B  one of these words                s:N  text of at most N characters
# A parameter without a default is required.
from mimi import limits, log
from mimi.devices import pins as gpio_policy
from mimi.devices.table import Device

_I2C = "sda=8:d scl=9:k "
_ADC = "pin:a atten=11:c:0|2.5|6|11 "
TYPES = (
    ("digital_in", "digital", "in", "pin:p pull=none:c:up|down|none inverted=0:b"),
    ("button", "digital", "in", "pin:p pull=up:c:up|down"),
    ("analog_in", "adc", "in", _ADC + "unit=V:s:8 vmin=0:f:0:3.3 vmax=3.1:f:0:3.3 "
     "min=0:f:-1e9:1e9 max=0:f:-1e9:1e9"),
    ("ntc", "adc", "in", _ADC + "r0=10000:f:100:1e7 beta=3950:f:500:10000 rfix=10000:f:100:1e7 "
     "vcc=3.3:f:1:5.5 inverted=0:b"),
    ("ldr", "adc", "in", _ADC + "rfix=10000:f:100:1e7 r10=10000:f:100:1e7 gamma=0.7:f:0.3:1.5 "
     "vcc=3.3:f:1:5.5 inverted=0:b"),
    ("soil", "adc", "in", _ADC + "dry=2.3:f:0:3.3 wet=0.7:f:0:3.3"),
    ("ds18b20", "ds18b20", "in", "pin:w rom=:s:16"),
    ("dht11", "dht", "in", "pin:p"),
    ("dht22", "dht", "in", "pin:p"),
    ("sht3x", "sht3x", "in", _I2C + "addr=0x44:x:0x44|0x45"),
    ("aht20", "aht20", "in", _I2C + "addr=0x38:x:0x38"),
    ("bme280", "bme280", "in", _I2C + "addr=0x76:x:0x76|0x77"),
    ("bh1750", "bh1750", "in", _I2C + "addr=0x23:x:0x23|0x5c"),
    ("hcsr04", "hcsr04", "in", "trig:p echo:p"),
    ("digital_out", "digital", "out", "pin:p inverted=0:b"),
    ("relay", "digital", "out", "pin:p inverted=0:b"),
    ("pwm", "pwm", "out", "pin:p freq=1000:i:1:40000 inverted=0:b"),
    ("servo", "pwm", "out", "pin:p min_us=500:i:100:3000 max_us=2400:i:100:3000 range=180:i:1:360"),
    ("rgb_led", "rgb", "out", "pin:p n=1:i:1:%d max=50:i:1:100 rgbw=0:b" % limits.RGB_LED_MAX),
    ("buzzer", "pwm", "out", "pin:p active=0:b"),
)
CHIP = "chip_temp"  # the MCU's own temperature: always there, never added
LOG = "log_min"  # any type with a number to keep takes it: its readings logged (services/history/)
_NO_LOG = ("button", "rgb_led", "buzzer")  # presses, colours, tones: nothing to chart
_RULE_WORDS = {"p": "a GPIO number", "a": "an ADC1 GPIO (1-10)", "d": "a GPIO number",
               "k": "a GPIO number", "w": "a GPIO number", "b": "true or false",
               "i": "a whole number", "f": "a number"}


class Refused(ValueError):
    pass


def names():
    """Every type a device can have: the built-in ones, then /drivers/'s."""
    from mimi.devices import user

    return [t[0] for t in TYPES] + [t for t in user.types() if not _row(t) and t != CHIP]


def listing():
    sens = [t[0] for t in TYPES if t[2] == "in"]
    acts = [t[0] for t in TYPES if t[2] == "out"]
    from mimi.devices import user

    own = [t for t in user.types() if not _row(t) and t != CHIP]
    return "sensors %s; actuators %s%s" % (", ".join(sens), ", ".join(acts),
                                           "; from %s: %s" % (limits.DRIVERS_DIR, ", ".join(own)) if own else "")


def _row(typ):
    for row in TYPES:
        if row[0] == typ:
            return row
    return None


def spec(typ):
    """(driver module, kind, parameter spec) of a type; Refused when there is none."""
    row = _row(typ)
    if row:
        return row[1:]
    if typ == CHIP:
        raise Refused("chip_temp is always there (device 'chip_temp'): it is not added")
    from mimi.devices import user

    own = user.spec(typ)  # (None, kind, params) of /drivers/<typ>.py, or None
    if own:
        return own
    raise Refused("unknown type '%s'. Types: %s" % (str(typ)[:32], listing()))


def check_name(name, others):
    if not isinstance(name, str) or not 1 <= len(name) <= limits.DEVICE_NAME_MAX or \
            any(not ("a" <= c <= "z" or "0" <= c <= "9" or c == "_") for c in name):
        raise Refused("a device name is 1-%d characters of a-z, 0-9 and _ (got %r)"
                      % (limits.DEVICE_NAME_MAX, str(name)[:40]))
    for d in others:
        if d.name == name:
            raise Refused("there is already a device named '%s' (%s%s)" % (name, d.type, d.where))


def make(name, typ, given, others, allow=None):
    """A checked Device, or Refused saying why. given: the parameters as a person or
    the model wrote them; others: the devices already there; allow: the allowed pins
    (default: the gpio_allow setting)."""
    check_name(name, others)
    mod, kind, params = spec(typ)
    if not isinstance(given, dict):
        raise Refused("parameters must be an object")
    rules = [_rule(tok) for tok in params.split()]
    known = [r[0] for r in rules]
    logs = typ not in _NO_LOG
    for k in given:
        if k not in known and not (k == LOG and logs):
            raise Refused("%s takes %s; not '%s'" % (typ, ", ".join(known + [LOG] * logs) or "no parameters",
                                                     str(k)[:24]))
    if allow is None:
        allow = allowed()
    out = {}
    for key, default, rule, args in rules:
        v = given.get(key)
        if v is None:
            if default is None:
                raise Refused("%s needs '%s' (%s)" % (typ, key, _RULE_WORDS.get(rule, "a value")))
            v = default
        out[key] = _value(typ, key, v, rule, args, allow)
    m = given.get(LOG)
    if m is not None:  # minutes between the readings the history keeps (SPEC §14); 0: none
        m = _value(typ, LOG, m, "i", "0:%d" % limits.LOG_MIN_MAX, allow)
        if m:
            out[LOG] = m
    dev = Device(name, typ, out, mod, kind)
    dev.keys = tuple(known) + ((LOG,) if LOG in out else ())
    _place(dev, rules, others)
    return dev


def _rule(tok):
    head, _, args = tok.partition(":")
    rule, _, args = args.partition(":")
    key, eq, default = head.partition("=")
    return key, default if eq else None, rule, args


def allowed():
    from mimi.config.settings import cfg

    try:
        return gpio_policy.parse(cfg.get("gpio_allow"))
    except ValueError:
        return ()


def pin_refusal(pin, allow):
    """Why `pin` may not be used, or None."""
    if pin in gpio_policy.NEVER:
        return "GPIO%d is refused: %s" % (pin, gpio_policy.NEVER[pin])
    if pin not in gpio_policy.EXISTING:
        return "GPIO%d does not exist on the ESP32-S3" % pin
    if pin not in allow:
        return "GPIO%d is not in gpio_allow (the pins the owner allows)" % pin
    return None


def _value(typ, key, v, rule, args, allow):
    bad = "%s: '%s' must be " % (typ, key)
    if rule in "padkw":
        if isinstance(v, str):
            w = v.strip().lower()
            w = w[4:] if w[:4] == "gpio" else w
            v = int(w) if w.isdigit() else v
        if isinstance(v, float) and v == int(v):
            v = int(v)
        if isinstance(v, bool) or not isinstance(v, int):
            raise Refused(bad + "a GPIO number")
        why = pin_refusal(v, allow)
        if why:
            raise Refused(why)
        if rule == "a" and not 1 <= v <= 10:
            raise Refused("GPIO%d is on ADC2, which reads nothing while WiFi is on: %s needs "
                          "an ADC1 pin, GPIO1-10" % (v, typ) if 11 <= v <= 20 else
                          "GPIO%d has no ADC: %s needs an ADC1 pin, GPIO1-10" % (v, typ))
        return v
    if rule == "x":
        ok = [int(a, 16) for a in args.split("|")]
        if isinstance(v, str):
            w = v.strip().lower()
            try:
                v = int(w, 16) if w[:2] == "0x" else int(w)
            except ValueError:
                pass
        if isinstance(v, bool) or not isinstance(v, int) or v not in ok:
            raise Refused(bad + " or ".join("0x%02x" % a for a in ok))
        return v
    if rule == "b":
        if isinstance(v, str):
            w = v.strip().lower()
            if w in ("1", "true", "yes", "on"):
                return True
            if w in ("0", "false", "no", "off"):
                return False
        if isinstance(v, (bool, int)) and v in (0, 1):
            return bool(v)
        raise Refused(bad + "true or false")
    if rule in "if":
        lo, _, hi = args.partition(":")
        if isinstance(v, str):
            try:
                v = float(v.strip())
            except ValueError:
                raise Refused(bad + _RULE_WORDS[rule])
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v:
            raise Refused(bad + _RULE_WORDS[rule])
        if rule == "i":
            if v != int(v):
                raise Refused(bad + "a whole number")
            v = int(v)
        if not float(lo) <= v <= float(hi):
            raise Refused(bad + "between %s and %s" % (lo, hi))
        return v
    if rule == "c":
        if isinstance(v, float) and v == int(v):
            v = int(v)
        w = str(v).strip().lower()
        opts = args.split("|")
        if w not in opts:
            raise Refused(bad + " or ".join(opts))
        return w
    # s:N
    if not isinstance(v, str) or len(v) > int(args) or any(ord(c) < 32 for c in v):
        raise Refused(bad + "text of at most %s characters" % args)
    return v


def _place(dev, rules, others):
    """dev.pins, dev.bus and dev.where from its parameters; Refused when a pin is another
    device's (parts on one I2C bus or one 1-Wire line share it), an address on that bus
    is taken, both I2C controllers are busy, or the table is full."""
    p = dev.params
    pins = [p[k] for k, _, rule, _ in rules if rule in "padkw"]
    if len(set(pins)) < len(pins):
        raise Refused("%s needs different pins for %s" % (
            dev.type, " and ".join(k for k, _, rule, _ in rules if rule in "padkw")))
    kinds = {rule for _, _, rule, _ in rules}
    if "d" in kinds:
        dev.bus = ("i2c", p["sda"], p["scl"])
        dev.where = " at 0x%02x on SDA %d / SCL %d" % (p["addr"], p["sda"], p["scl"])
    elif "w" in kinds:
        dev.bus = ("ow", p["pin"])
        dev.where = " on GPIO%d" % p["pin"]
    elif dev.type == "hcsr04":
        dev.where = " on trig GPIO%d / echo GPIO%d" % (p["trig"], p["echo"])
    elif pins:
        dev.where = " on " + ", ".join("GPIO%d" % x for x in pins)
    dev.pins = tuple(pins)
    dev.pinkeys = tuple(k for k, _, rule, _ in rules if rule in "padkw")
    buses = set()
    for o in others:
        if o.bus and o.bus[0] == "i2c":
            buses.add(o.bus)
        for x in o.pins:
            if x in dev.pins and not (dev.bus and dev.bus == o.bus):
                raise Refused("GPIO%d is already used by %s (%s%s)" % (x, o.name, o.type, o.where))
        if dev.bus and dev.bus == o.bus and dev.bus[0] == "i2c" and o.params.get("addr") == p["addr"]:
            raise Refused("0x%02x on SDA %d / SCL %d is already %s (%s)" % (
                p["addr"], p["sda"], p["scl"], o.name, o.type))
    if dev.bus and dev.bus[0] == "i2c" and dev.bus not in buses and len(buses) >= 2:
        raise Refused("the ESP32-S3 has two I2C controllers, both in use (%s): put %s on one of "
                      "those buses" % (", ".join("SDA %d / SCL %d" % b[1:] for b in buses), dev.type))
    if sum(1 for o in others if not o.builtin) >= limits.DEVICES_MAX:
        raise Refused("at most %d devices; remove one first" % limits.DEVICES_MAX)


def load(entries, board_name):
    """The table from the file's entries, then the board's parts and chip_temp. An entry
    that fails the checks stays (unusable, saved back as it was) and is logged."""
    devs = []
    allow = allowed()
    for e in entries:
        params = {k: v for k, v in e.items() if k not in ("name", "type")}
        try:
            d = make(e.get("name"), e.get("type"), params, devs, allow)
        except ValueError as why:
            d = Device(str(e.get("name") or "?")[:limits.DEVICE_NAME_MAX], str(e.get("type"))[:24],
                       params, None, None)
            d.err, d.raw = str(why), e
            log.warning("devices", "%s is unusable: %s", d.name, why)
        devs.append(d)
    if board_name:
        from mimi.devices import boards

        for name, typ, params in boards.parts(board_name):
            try:
                d = make(name, typ, params, devs, allow)
            except ValueError as why:
                log.warning("devices", "the board's %s is not added: %s", name, why)
                continue
            d.builtin = True
            devs.append(d)
    d = Device(CHIP, CHIP, {}, "chip", "in")
    d.builtin, d.where = True, " inside the chip"
    devs.append(d)
    return devs


def check_bus(sda, scl, devs):
    """i2c_scan / i2c_io on these pins: the pin policy, and pins no device other than
    the parts on this very bus uses. Refused saying why."""
    allow = allowed()
    for key, v in (("sda", sda), ("scl", scl)):
        _value("i2c", key, v, "p", "", allow)
    if sda == scl:
        raise Refused("SDA and SCL must be different pins")
    for d in devs:
        if d.bus == ("i2c", sda, scl):
            continue
        for x in (sda, scl):
            if x in d.pins:
                raise Refused("GPIO%d is used by %s (%s%s)" % (x, d.name, d.type, d.where))
