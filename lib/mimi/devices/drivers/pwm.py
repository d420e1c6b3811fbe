# The PWM types, on the S3's LEDC (8 channels, 4 timers: PWMs of one frequency share
# a timer): pwm (0-100 % duty at `freq`), servo (an angle as a 50 Hz pulse between
# min_us and max_us; made in one call with its pulse, so it never starts with
# MicroPython's default 5 kHz / 50 % burst; "off" lets it go limp), buzzer (a tone of a
# frequency for a duration: passive buzzers get a 50 % square wave, active ones are
# switched on). Until the first value their pin is a low output.
from mimi import board, limits
from mimi.devices.table import Fault, qty, num
from mimi.devices.drivers.digital import ON, OFF

_SERVO_HZ = 50


def _number(name, value, what):
    if isinstance(value, str):
        w = value.strip().lower()
        for unit in ("degrees", "deg", "°", "%"):
            if w.endswith(unit):
                w = w[:-len(unit)].strip()
        try:
            value = float(w)
        except ValueError:
            raise Fault("value", "%s takes %s, not %r" % (name, what, value[:32]))
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise Fault("value", "%s takes %s" % (name, what))
    return value


class Pwm:
    pwm = None

    def __init__(self, dev):
        self.dev = dev
        self.m = dev.mem
        if self.m.get("duty") is not None:  # running, the code reloaded: the same again
            self._make(freq=self.m["freq"], duty_u16=self.m["duty"])
        else:
            self.pin = board.Pin(dev.params["pin"], board.Pin.OUT, value=0)

    def _make(self, freq, duty_u16):
        try:
            self.pwm = board.PWM(self.dev.params["pin"], freq=freq, duty_u16=duty_u16)
        except (RuntimeError, ValueError, OSError) as e:  # out of PWM channels / timers
            raise Fault("value", "%s: no PWM for GPIO%d: %s" % (self.dev.name, self.dev.params["pin"], e))
        self.m["freq"], self.m["duty"] = freq, duty_u16

    def _duty(self, duty):
        self.pwm.duty_u16(duty)
        self.m["duty"] = duty

    def off(self):
        self.close()
        return self.read()

    def close(self):
        if self.pwm is not None:
            self.pwm.deinit()
            self.pwm = None
        self.pin = board.Pin(self.dev.params["pin"], board.Pin.OUT, value=0)
        self.m.clear()

    def read(self):
        return (qty("", self.m.get("value", 0), "%"),)

    def check(self, value):
        """The value set() takes (a rule's, checked before it is kept); Fault if none."""
        w = str(value).strip().lower()
        pct = 100 if w in ON[1:] else 0 if w in OFF[1:] else \
            _number(self.dev.name, value, "a percentage, 0 to 100")
        if not 0 <= pct <= 100:
            raise Fault("value", "%s takes 0 to 100 (%%), not %s" % (self.dev.name, num(pct)))
        return pct

    def set(self, value):
        pct = self.check(value)
        duty = round(pct * 65535 / 100)
        if self.dev.params["inverted"]:
            duty = 65535 - duty
        if self.pwm is None:
            self._make(self.dev.params["freq"], duty)
        else:
            self._duty(duty)
        self.m["value"] = pct
        return self.read()


class Servo(Pwm):
    def read(self):
        a = self.m.get("angle")
        if a is None:
            return (("", None, "limp (no position set)"),)
        return (qty("", a, "°"),)

    def check(self, value):
        """The angle set() takes, or None for off; Fault if neither."""
        p = self.dev.params
        if str(value).strip().lower() in ("off", "limp", "free", "stop"):
            return None
        a = _number(self.dev.name, value, "an angle, 0 to %d degrees, or off" % p["range"])
        if not 0 <= a <= p["range"]:
            raise Fault("value", "%s takes 0 to %d degrees, not %s" % (self.dev.name, p["range"], num(a)))
        return a

    def set(self, value):
        p = self.dev.params
        a = self.check(value)
        if a is None:
            self.close()
            return self.read()
        us = p["min_us"] + (p["max_us"] - p["min_us"]) * a / p["range"]
        duty = round(us * _SERVO_HZ * 65535 / 1000000)  # of the 20 ms period
        if self.pwm is None:
            self._make(_SERVO_HZ, duty)  # one call: the first pulse is already this one
        else:
            self._duty(duty)
        self.m["angle"] = a
        return self.read()


class Buzzer(Pwm):
    def read(self):
        return (("", 0, "quiet"),)

    def check(self, value):
        """(Hz, ms) of the tone set() plays, or None for off; Fault if neither."""
        name = self.dev.name
        w = str(value).strip().lower().replace("hz", " ").replace("ms", " ").replace(",", " ").split()
        if w and w[0] in OFF[1:]:
            return None
        if w and w[0] in ("beep", "on"):
            w = ["2000"] + w[1:]
        what = "a tone: frequency in Hz and duration in ms, e.g. 440 300, or beep"
        if not 1 <= len(w) <= 2:
            raise Fault("value", "%s takes %s" % (name, what))
        f = _number(name, w[0], what)
        ms = _number(name, w[1], what) if len(w) > 1 else 200
        if not 20 <= f <= 20000 or not 10 <= ms <= limits.BUZZER_MAX_MS:
            raise Fault("value", "%s takes 20 to 20000 Hz for 10 to %d ms" % (name, limits.BUZZER_MAX_MS))
        return f, ms

    def set(self, value):
        tone = self.check(value)
        if tone is None:
            self.close()
            return self.read()
        f, ms = tone
        try:
            if self.dev.params["active"]:
                self.pin.value(1)
            else:
                self._make(int(f), 32768)
            yield int(ms)
        finally:
            self.close()
        return (("", f, "played %s Hz for %d ms" % (num(f, 0), ms)),)


def make(dev):
    return Servo(dev) if dev.type == "servo" else Buzzer(dev) if dev.type == "buzzer" else Pwm(dev)
