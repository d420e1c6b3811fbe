# DHT11 and DHT22 (AM2302) on one open-drain pin, from Aosong's datasheets
# (reference/hardware.md §3.7): after the host's start signal (low for at least 18 ms
# on the DHT11, 1 ms on the DHT22) the sensor answers 80 µs low, 80 µs high and 40
# bits: RH high, RH low, T high, T low, then the low byte of their sum. DHT11: whole
# %RH and °C in bytes 0 and 2 (tenths of °C in byte 3), 20..90 %RH and 0..50 °C;
# DHT22: RH x 10 and T x 10 as 16 bits, T's bit 15 the sign (sign and magnitude),
# 0..100 %RH and -40..80 °C. It does not answer within 1 s of power-up, nor a start
# sooner than 1 s (DHT11) / 2 s (DHT22) after the one it last answered (chosen: no
# answer, not the old reading). The reading is the one at the time of the start.
from mimi.devices.sim.parts import PIN, Part


class DHT(Part):
    KEYS = (("pin", PIN), ("temp", 21.5), ("hum", 40.0))
    VALUES = ("temp", "hum")
    FAULTS = ("timeout", "nack", "crc", "stuck")
    START_US = 1000
    INTERVAL_MS = 2000

    def __init__(self, type_, params):
        Part.__init__(self, type_, params)
        self._last = None

    def check(self):
        if not -40 <= self.temp <= 80 or not 0 <= self.hum <= 100:
            raise ValueError("%s: temp is -40..80 °C, hum 0..100 %%RH" % self.type)

    def drive(self, pin):
        return 0 if self.fault == "stuck" else None

    def dht_frame(self, start_us):
        """The 5 bytes it answers a start signal of start_us with, or None (silent)."""
        t = self.clock()
        if self.fault in ("timeout", "nack", "stuck") or start_us < self.START_US or t < 1000:
            return None
        if self._last is not None and t - self._last < self.INTERVAL_MS:
            return None
        self._last = t
        f = bytearray(self.encode())
        f.append((f[0] + f[1] + f[2] + f[3] + (1 if self.fault == "crc" else 0)) & 0xFF)
        return bytes(f)

    def encode(self):
        rh = min(1000, round(self.hum * 10))
        t = round(self.temp * 10)
        m = abs(t)
        return (rh >> 8, rh & 0xFF, m >> 8 | (0x80 if t < 0 else 0), m & 0xFF)

    def state(self):
        out = Part.state(self)
        out["last_read_ms_ago"] = None if self._last is None else int(self.clock() - self._last)
        return out


class DHT11(DHT):
    START_US = 18000
    INTERVAL_MS = 1000

    def encode(self):
        rh = min(90, max(20, round(self.hum)))
        t = min(500, max(0, round(self.temp * 10)))
        return (rh, 0, t // 10, t % 10)


TYPES = {"dht11": DHT11, "dht22": DHT}
