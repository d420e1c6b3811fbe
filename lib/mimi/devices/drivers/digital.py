# The one-pin types: digital_in (a level), button (pressed or released, and presses
# counted between readings by a pin interrupt), digital_out and relay (on/off; inverted:
# active-low, as most opto relay modules are). An output is checked after each change:
# the pin is read back (on the ESP32 an output's input stays on, so this is the pad's
# level), and a pin that did not follow is reported, not called done.
import mimi
from mimi import board
from mimi.devices import state
from mimi.devices.table import Fault

_PULLS = {"up": "PULL_UP", "down": "PULL_DOWN"}
ON = ("1", "on", "true", "high", "yes", "open")
OFF = ("0", "off", "false", "low", "no", "close", "closed")


def onoff(name, value):
    """on/off, 1/0, true/false -> bool; Fault for anything else."""
    if isinstance(value, float) and -2 < value < 2 and value == int(value):  # 1.0, -0.0 (inf, nan: refused)
        value = int(value)
    w = str(int(value) if isinstance(value, bool) else value).strip().lower()
    if w in ON:
        return True
    if w in OFF:
        return False
    raise Fault("value", "%s takes on or off (or 1 / 0), not %r" % (name, str(value)[:32]))


class In:
    def __init__(self, dev):
        p = dev.params
        self.name = dev.name
        self.button = dev.type == "button"
        pull = _PULLS.get(p["pull"])
        self.pin = board.Pin(p["pin"], board.Pin.IN, getattr(board.Pin, pull) if pull else None)
        # a button to GND with the pull-up reads 0 when pressed; with a pull-down, 1
        self.active = 1 if (p["pull"] == "down" if self.button else p["inverted"]) else 0
        if self.button:  # the handler lives in devices/button.py (kept), the count in devices/state.py
            self.pin.irq(mimi.load("mimi.devices.button").counter(dev.name, self.active), board.Pin.IRQ_FALLING | board.Pin.IRQ_RISING)

    def read(self):
        v = 1 if self.pin.value() else 0
        if not self.button:
            v ^= self.active
            return (("", v, "HIGH" if v else "LOW"),)
        pressed = 1 if v == self.active else 0
        c = (state.presses or {}).get(self.name) or [0]
        n, c[0] = c[0], 0
        out = ("", pressed, "pressed" if pressed else "released")
        if n:
            return out, ("", n, "pressed %d time%s since the last reading" % (n, "" if n == 1 else "s"))
        return (out,)

    def close(self):
        if self.button:
            self.pin.irq(None)


class Out:
    def __init__(self, dev):
        self.dev = dev
        self.m = dev.mem
        self.inv = 1 if dev.params["inverted"] else 0
        # the state it was left in (off: as at boot), so a reload of the code changes nothing
        self.pin = board.Pin(dev.params["pin"], board.Pin.OUT, value=self.m.get("on", 0) ^ self.inv)

    def _state(self, on):
        return (("", 1 if on else 0, "on" if on else "off"),)

    def check(self, value):
        """Fault unless set(value) would take it (a rule's value, checked before it is kept)."""
        onoff(self.dev.name, value)

    def set(self, value):
        on = onoff(self.dev.name, value)
        want = on ^ self.inv
        self.pin.value(want)
        self.m["on"] = on
        if self.pin.value() != want:
            raise Fault("answer", "GPIO%d was set %s but reads %s (shorted, or held by something "
                        "else?)" % (self.dev.params["pin"], "HIGH" if want else "LOW",
                                    "LOW" if want else "HIGH"))
        return self._state(on)

    def off(self):
        return self.set(0)

    def read(self):
        return self._state(self.pin.value() ^ self.inv)

    def close(self):
        self.pin.value(self.inv)


def make(dev):
    return Out(dev) if dev.kind == "out" else In(dev)
