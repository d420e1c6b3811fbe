# HC-SR04 ultrasonic distance sensor, from the ElecFreaks datasheet (reference/
# hardware.md §3.8): a high pulse of at least 10 µs on Trig sends 8 cycles at 40 kHz
# (200 µs), then Echo is high for the sound's round trip, 58 µs per cm (2..400 cm),
# or about 38 ms when nothing is in range. A trigger while it is still busy is ignored.
# Echo is a 5 V signal: divider=1 (default) says a divider brings it to 3.3 V at the
# pin; divider=0 puts 5 V on a GPIO that takes 3.6 V at most (sim_get says so).
from mimi.devices.sim.parts import PIN, Part, now

_BURST_US = 200
_NO_ECHO_US = 38000
_US_PER_CM = 58


class HCSR04(Part):
    """distance: cm to the obstacle, None: nothing in range."""

    KEYS = (("trig", PIN), ("echo", PIN), ("distance", 100.0), ("divider", 1))
    VALUES = ("distance",)
    FAULTS = ("nack",)
    NONE_OK = ("distance",)

    def __init__(self, type_, params):
        Part.__init__(self, type_, params)
        self._trig_at = None
        self._echo = None  # (rise, fall) in ms of the parts' clock
        self.pings = 0

    def check(self):
        if self.trig == self.echo or self.divider not in (0, 1):
            raise ValueError("hcsr04: trig and echo are two pins; divider is 0 or 1")
        if self.distance is not None and self.distance < 0:
            raise ValueError("hcsr04: distance is cm (None: nothing in range)")

    def label(self):
        return "hcsr04@%d" % self.trig

    def pins(self):
        return (self.trig, self.echo)

    def written(self, pin, level):
        if pin != self.trig:
            return
        t = now()
        if level:
            self._trig_at = t
            return
        if self._trig_at is None or t - self._trig_at < 0.010 or self.fault:
            return
        if self._echo is not None and t < self._echo[1]:
            return  # still busy with the last one
        d = self.distance
        us = _NO_ECHO_US if d is None or d > 400 else max(2, d) * _US_PER_CM
        rise = t + _BURST_US / 1000
        self._echo = (rise, rise + us / 1000)
        self._trig_at = None
        self.pings += 1

    def drive(self, pin):
        if pin != self.echo:
            return None
        e = self._echo
        t = now()
        return 1 if e is not None and e[0] <= t < e[1] else 0

    def timeline(self, pin):
        """(level now, [µs from now of each change]) for time_pulse_us."""
        level = self.drive(pin)
        e = self._echo
        if pin != self.echo or e is None:
            return level, ()
        t = now()
        return level, tuple(round((x - t) * 1000) for x in e if x > t)

    def state(self):
        out = Part.state(self)
        out.update(pings=self.pings, echo_volts=3.3 if self.divider else 5.0)
        if not self.divider:
            out["note"] = "5 V echo on GPIO%d: over the 3.6 V the pin takes; fit a divider" % self.echo
        return out


TYPES = {"hcsr04": HCSR04}
