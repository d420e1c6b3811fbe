# Loads on a PWM pin, seen from outside (board/host_signals.py PWM: frequency, duty at the
# LEDC's real resolution): a dimmed LED or motor (pwm), a hobby servo (SG90-like,
# reference/hardware.md §3.9: it takes the pulse width of a ~50 Hz signal, min_us..max_us
# over its range, 0.5-2.5 ms for 180° by default, and holds its angle only while pulses
# come; whole degrees, about its dead band), a buzzer (passive:
# the PWM frequency is its tone; active=1: its own tone while the pin is high).
import sys
from mimi.board.host_pins import SIM_PINS, Pin
from mimi.devices.sim.parts import PIN, Part, now

_HISTORY = 16


def _pwm(pin):
    io = sys.modules.get("mimi.board.host_signals")
    return io.SIM_PWM.get(pin) if io else None


class PWMLoad(Part):
    KEYS = (("pin", PIN),)

    def __init__(self, type_, params):
        Part.__init__(self, type_, params)
        self.history = []  # what it did, oldest first (the last _HISTORY)

    def _log(self, item):
        if not self.history or self.history[-1] != item:
            self.history.append(item)
            del self.history[:-_HISTORY]

    def pwm(self, p):
        pass

    def state(self):
        p = _pwm(self.pin)
        if p is None:
            st = SIM_PINS.get(self.pin)
            out = {"freq": None, "duty": None, "level": st["level"] if st and st["mode"] == Pin.OUT else None}
        else:
            out = {"freq": p.freq(), "duty": round(p.duty_u16() * 100 / 65535, 2),
                   "pulse_us": round(p.pulse_us(), 2)}
        return out


class Servo(PWMLoad):
    KEYS = (("pin", PIN), ("min_us", 500), ("max_us", 2500), ("range", 180))

    def check(self):
        if not 0 < self.min_us < self.max_us < 20000 or not 0 < self.range <= 360:
            raise ValueError("servo: 0 < min_us < max_us < 20000, range 1..360 degrees")

    def angle(self, p):
        """(angle, why not) for the signal p."""
        if p is None:
            return None, "no pulses: it does not hold its position"
        if not 40 <= p.freq() <= 60:
            return None, "it needs pulses at about 50 Hz, not %d Hz" % p.freq()
        us = p.pulse_us()
        if us <= 0:
            return None, "no pulses: it does not hold its position"
        a = round((us - self.min_us) * self.range / (self.max_us - self.min_us))
        if not 0 <= a <= self.range:
            return max(0, min(self.range, a)), "pulse %d µs: at its end stop" % us
        return a, None

    def pwm(self, p):
        a = self.angle(p)[0]
        if a is not None:
            self._log(a)

    def state(self):
        out = PWMLoad.state(self)
        a, why = self.angle(_pwm(self.pin))
        out.update(angle=a, moves=list(self.history))
        if why:
            out["note"] = why
        return out


class Buzzer(PWMLoad):
    KEYS = (("pin", PIN), ("active", 0), ("tone", 2300))

    def __init__(self, type_, params):
        PWMLoad.__init__(self, type_, params)
        self._on = None  # (tone Hz, since ms)

    def check(self):
        if self.active not in (0, 1) or not 20 <= self.tone <= 20000:
            raise ValueError("buzzer: active is 0 or 1, tone 20..20000 Hz")

    def sounding(self):
        p = _pwm(self.pin)
        if self.active:
            st = SIM_PINS.get(self.pin)
            on = (p.duty_u16() > 0) if p else bool(st and st["mode"] == Pin.OUT and st["level"])
            return self.tone if on else None
        if p is not None and 0 < p.duty_u16() < 65535 and p.freq() <= 20000:
            return p.freq()
        return None

    def _update(self):
        hz = self.sounding()
        if self._on is not None and self._on[0] != hz:
            self._log((self._on[0], round(now() - self._on[1])))
            self._on = None
        if hz is not None and self._on is None:
            self._on = (hz, now())

    def pwm(self, p):
        self._update()

    def written(self, pin, level):
        self._update()

    def state(self):
        self._update()
        return {"tone_hz": self._on[0] if self._on else None, "tones": list(self.history)}


TYPES = {"pwm": PWMLoad, "servo": Servo, "buzzer": Buzzer}
