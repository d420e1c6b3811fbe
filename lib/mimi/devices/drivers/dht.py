# Aosong DHT11 / DHT22 (AM2302) through the firmware's own dht module (board.dht): one
# measure() holds its caller ~275 ms inside one call (the start signal and the 40 bits),
# so the loop runs it on a short thread (SLOW). The parts must rest between readings
# (DHT11 1 s, DHT22 2 s): a read sooner waits for that. A timeout or a checksum
# mismatch is measured again once, after that rest.
import time
from mimi import board
from mimi.devices.table import Fault, qty

HINT = ("the wiring (DATA to the GPIO, VCC to 3V3, GND), the 4.7-10 kOhm pull-up from DATA "
        "to VCC (modules have one) and the power")
# model: (rest ms, temperature range)
_MODELS = {11: (1000, 0, 50), 22: (2000, -40, 80)}


class DHT:
    SLOW = True
    HINT = HINT

    def __init__(self, dev):
        self.m = dev.mem
        self.model = 22 if dev.type == "dht22" else 11
        self.part = board.dht(dev.params["pin"], self.model)

    def read(self):
        rest, tlo, thi = _MODELS[self.model]
        for attempt in range(2):
            if self.m.get("at") is not None:
                left = rest - time.ticks_diff(time.ticks_ms(), self.m["at"])
                if left > 0:
                    yield left
            try:
                self.part.measure()
                break
            except OSError as e:
                why = Fault("answer", "no reply (timed out)" if e.args and e.args[0] in (110, 116)
                            else "OSError %s" % (e.args[0] if e.args else e))
            except Exception as e:  # the module's "checksum error"
                why = Fault("data", "checksum mismatch twice" if "checksum" in str(e) else str(e))
            finally:
                self.m["at"] = time.ticks_ms()
            if attempt:
                raise why
        t, h = self.part.temperature(), self.part.humidity()
        if not tlo <= t <= thi or not 0 <= h <= 100:
            raise Fault("range", "%s °C, humidity %s %%: outside the DHT%d's %d to %d °C, 0 to 100 %%"
                        % (t, h, self.model, tlo, thi))
        return qty("", t, "°C"), qty("humidity", h, "%")


def make(dev):
    return DHT(dev)
