# Parts on one digital pin: a push button, whose level follows its wiring, and the
# outputs the firmware drives, seen from outside: a digital output (an LED, a MOSFET
# gate) and a relay module (active-high or, like most opto-isolated boards,
# active-low; an input left floating keeps it released, reference/hardware.md §3.10).
from mimi.board.host_pins import SIM_PINS, Pin, settle
from mimi.devices.sim.parts import PIN, Part, now


class Button(Part):
    """wiring: gnd (pressed pulls the pin low) or vcc; pull: the resistor on the
    board, up / down / none (none: the MCU's own pull decides, or the pin floats);
    bounce: extra edges each press and release makes before it settles."""

    KEYS = (("pin", PIN), ("wiring", "gnd"), ("pull", "up"), ("bounce", 0), ("pressed", 0))
    VALUES = ("pressed",)

    def __init__(self, type_, params):
        Part.__init__(self, type_, params)
        self.presses = 0

    def check(self):
        if self.wiring not in ("gnd", "vcc") or self.pull not in ("up", "down", "none"):
            raise ValueError("button: wiring is gnd or vcc, pull is up, down or none")
        if self.pressed not in (0, 1) or not 0 <= self.bounce <= 10:
            raise ValueError("button: pressed is 0 or 1, bounce 0..10")

    def drive(self, pin):
        if self.pressed:
            return 0 if self.wiring == "gnd" else 1
        return 1 if self.pull == "up" else 0 if self.pull == "down" else None

    def set(self, values):
        was = self.pressed
        Part.set(self, values)
        now_ = self.pressed
        if now_ != was:
            for _ in range(self.bounce):
                settle(self.pin)
                self.pressed = was
                settle(self.pin)
                self.pressed = now_
            self.presses += now_

    def state(self):
        return {"pressed": self.pressed, "level": settle(self.pin), "presses": self.presses}


class Output(Part):
    """A load on a pin the firmware drives: what it sees and how often it switched."""

    KEYS = (("pin", PIN),)

    def __init__(self, type_, params):
        Part.__init__(self, type_, params)
        self.switches = 0
        self.since = None
        self._last = None

    def written(self, pin, level):
        if level != self._last:
            if self._last is not None:
                self.switches += 1
            self._last = level
            self.since = now()

    def level(self):
        """The level the MCU drives, None while the pin is not an output."""
        st = SIM_PINS.get(self.pin)
        return st["level"] if st and st["mode"] in (Pin.OUT, Pin.OPEN_DRAIN) else None

    def on(self, level):
        return level == 1

    def state(self):
        level = self.level()
        since = None if self.since is None else int(now() - self.since)
        return {"level": level, "on": level is not None and self.on(level),
                "switches": self.switches, "ms_since_switch": since}


class Relay(Output):
    KEYS = (("pin", PIN), ("active_low", 0))

    def check(self):
        if self.active_low not in (0, 1):
            raise ValueError("relay: active_low is 0 or 1")

    def on(self, level):
        return level == (0 if self.active_low else 1)


TYPES = {"button": Button, "digital_out": Output, "relay": Relay}
