# HC-SR04 ultrasonic distance (ElecFreaks datasheet): a 10 µs pulse on Trig, then Echo
# is high for the sound's round trip, 58 µs per cm. time_pulse_us waits inside one call
# (busy, on the board), so the echo's wait is capped at limits.HCSR04_TIMEOUT_US (what
# holds the loop at most; ~3 m) and the loop runs it on a short thread (SLOW). The part
# needs 60 ms between measurements. Its Echo is 5 V: a divider to the GPIO (README).
import time
from mimi import board, limits
from mimi.devices.table import Fault, qty

HINT = ("the wiring (Trig and Echo to their GPIOs, the 1k/2k divider on Echo), and the "
        "power (5 V: the module does not work from 3.3 V)")
_REST_MS = 60


class HCSR04:
    SLOW = True
    HINT = HINT

    def __init__(self, dev):
        self.m = dev.mem
        p = dev.params
        self.trig = board.Pin(p["trig"], board.Pin.OUT, value=0)
        self.echo = board.Pin(p["echo"], board.Pin.IN)

    def read(self):
        if self.m.get("at") is not None:
            left = _REST_MS - time.ticks_diff(time.ticks_ms(), self.m["at"])
            if left > 0:
                yield left
        try:
            self.trig.value(1)
            time.sleep_us(10)
            self.trig.value(0)
            us = board.time_pulse_us(self.echo, 1, limits.HCSR04_TIMEOUT_US)
        finally:
            self.m["at"] = time.ticks_ms()
        if us == -2:
            raise Fault("answer", "no echo pulse started")
        if us < 0:
            raise Fault("range", "nothing within %d cm (no echo came back in time)" % (
                limits.HCSR04_TIMEOUT_US // 58))
        cm = us / 58
        if cm < 2:
            raise Fault("range", "%.1f cm, closer than the HC-SR04's 2 cm" % cm)
        return (qty("", cm, "cm"),)


def make(dev):
    return HCSR04(dev)
