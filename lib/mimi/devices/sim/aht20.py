# AHT20 humidity and temperature sensor on I2C, from ASAIR's AHT20 datasheet
# (reference/hardware.md §3.3): address 0x38; a status byte (bit 7 busy, bit 3
# calibrated) starts every read; 0xBE 0x08 0x00 calibrates (10 ms), 0xAC 0x33 0x00
# triggers a measurement (80 ms, busy meanwhile), 0xBA resets (20 ms, deaf), 0x71
# asks for the status. The 7-byte result: status, 20 bits of RH, 20 bits of T, and
# the CRC-8 0x31 / 0xFF over the six bytes before it. Deaf for 40 ms after power-up.
from mimi.devices.sim.parts import PIN, I2CPart

_BUSY = 0x80
_CALIBRATED = 0x08
_IDLE = 0x10  # bit 4, set on the parts seen


class AHT20(I2CPart):
    KEYS = (("sda", PIN), ("scl", PIN), ("addr", 0x38), ("temp", 21.5), ("hum", 40.0),
            ("calibrated", 1))
    VALUES = ("temp", "hum")
    ADDRS = (0x38,)
    BOOT_MS = 40

    def __init__(self, type_, params):
        I2CPart.__init__(self, type_, params)
        self._busy_until = 0
        self._measuring = False
        self._cal_at = None  # when a calibration command completes
        self._data = bytes(5)  # the last measurement (zeros before the first)

    def check(self):
        I2CPart.check(self)
        if not -40 <= self.temp <= 85 or not 0 <= self.hum <= 100 or self.calibrated not in (0, 1):
            raise ValueError("aht20 measures -40..85 °C and 0..100 %RH; calibrated is 0 or 1")

    def _sync(self, t):
        if self._cal_at is not None and t >= self._cal_at:
            self.calibrated = 1
            self._cal_at = None
        if self._measuring and t >= self._busy_until:
            self._measuring = False
            self._data = self._measure()

    def _measure(self):
        if not self.calibrated:  # uncalibrated: not a reading (chosen: all zeros, -50 °C / 0 %)
            return bytes(5)
        rh = min(0xFFFFF, round(self.hum / 100 * 0x100000))
        t = min(0xFFFFF, max(0, round((self.temp + 50) / 200 * 0x100000)))
        return bytes((rh >> 12, rh >> 4 & 0xFF, (rh & 0xF) << 4 | t >> 16, t >> 8 & 0xFF, t & 0xFF))

    def status(self):
        t = self.clock()
        self._sync(t)
        busy = t < self._busy_until
        return (_BUSY if busy else 0) | _IDLE | (_CALIBRATED if self.calibrated else 0)

    def write(self, data):
        if not data:
            return True
        t = self.clock()
        self._sync(t)
        if t < self._busy_until and data[0] != 0xBA:  # busy: a new command is not taken
            return True
        cmd = bytes(data[:3])
        if cmd == b"\xac\x33\x00":
            self._measuring = True
            self._busy_until = t + 80
        elif cmd == b"\xbe\x08\x00":
            self._cal_at = self._busy_until = t + 10
        elif data[0] == 0xBA:  # soft reset: the calibration is in its OTP, it stays
            self._measuring = False
            self._cal_at = None
            self._busy_until = 0
            self.quiet = t + 20
        return True  # 0x71 (status) and anything else: the next read starts with the status

    def read(self, n):
        out = bytearray((self.status(),) + tuple(self._data))
        out.append(self.crc(out))
        return bytes((out + b"\xff" * n)[:n])

    def state(self):
        out = I2CPart.state(self)
        out["calibrated"] = self.calibrated
        return out


TYPES = {"aht20": AHT20}
