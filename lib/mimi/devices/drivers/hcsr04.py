# HC-SR04 ultrasonic distance (ElecFreaks datasheet): a 10 µs pulse on Trig, then Echo
# is high for the sound's round trip, 58 µs per cm. time_pulse_us waits inside one call
# (busy, on the board), so the echo's wait is capped at limits.HCSR04_TIMEOUT_US (what
# holds the loop at most; ~3 m) and the loop runs it on a short thread (SLOW). The part
# needs 60 ms between measurements. Its Echo is 5 V: a divider to the GPIO (README).
#
# time_pulse_us times from its call when the echo is already high, and finds no pulse
# when it is over: a thread switched out between the trigger and the call (the other
# thread holding the board's GIL, the host's scheduler) made a reading short, or said
# "no echo pulse started". Such a switch only ever shortens a pulse or loses it, so a
# reading that may have started late (the echo high before the call, the call returning
# more than HCSR04_LAG_US after the trigger beyond the width, under 2 cm, no pulse) is
# taken once more after the part's rest, and the longer of the two kept. A good reading
# costs one ping; the echo of an earlier ping (the part busy: a trigger then is ignored)
# is waited out before the trigger.
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
        if self.echo.value():  # still busy with an echo: a trigger now would be ignored
            yield _REST_MS
        us, sure = self._ping()
        if not sure:
            yield _REST_MS
            again = self._ping()[0]
            us = -1 if -1 in (us, again) else max(us, again)  # (-1: high past the timeout, the longest)
        if us == -2:
            raise Fault("answer", "no echo pulse started")
        if us < 0:
            raise Fault("range", "nothing within %d cm (no echo came back in time)" % (
                limits.HCSR04_TIMEOUT_US // 58))
        cm = us / 58
        if cm < 2:
            raise Fault("range", "%.1f cm, closer than the HC-SR04's 2 cm" % cm)
        return (qty("", cm, "cm"),)

    def _ping(self):
        """One measurement -> (time_pulse_us's answer, whether it can be trusted: not one
        that may have started late)."""
        try:
            self.trig.value(1)
            time.sleep_us(10)
            self.trig.value(0)
            t = time.ticks_us()
            late = self.echo.value()
            us = board.time_pulse_us(self.echo, 1, limits.HCSR04_TIMEOUT_US)
            lag = time.ticks_diff(time.ticks_us(), t) - us
        finally:
            self.m["at"] = time.ticks_ms()
        return us, us == -1 or not late and us >= 2 * 58 and lag <= limits.HCSR04_LAG_US


def make(dev):
    return HCSR04(dev)
