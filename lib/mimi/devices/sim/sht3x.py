# SHT3x-DIS (SHT30/31/35) humidity and temperature sensor on I2C, from Sensirion's
# datasheet (reference/hardware.md §3.1): 16-bit commands MSB first; single shot
# with clock stretching (SCL held until the data is ready) or without (the read
# header is NACKed until then); periodic mode with fetch and break; status register,
# heater, soft reset; results as T, CRC, RH, CRC with the CRC-8 0x31 / 0xFF. It needs
# 1 ms after power-up and between commands, and 1.5 ms after a soft reset.
from mimi.devices.sim.parts import PIN, I2CPart

# single shot: command -> (max duration ms, clock stretching)
_SINGLE = {0x2C06: (15, True), 0x2C0D: (6, True), 0x2C10: (4, True),
           0x2400: (15, False), 0x240B: (6, False), 0x2416: (4, False)}
# periodic: command MSB -> (period ms, LSBs for high / medium / low repeatability)
_PERIODIC = {0x20: (2000, (0x32, 0x24, 0x2F)), 0x21: (1000, (0x30, 0x26, 0x2D)),
             0x22: (500, (0x36, 0x20, 0x2B)), 0x23: (250, (0x34, 0x22, 0x29)),
             0x27: (100, (0x37, 0x21, 0x2A))}
_DURATION = (15, 6, 4)
_STATUS_RESET = 0x8010  # alert pending, system reset detected
_STATUS_CLEARED = 0x8C10  # bits the clear-status command resets
_HEATER = 0x2000
_NOT_PROCESSED = 0x0002


class SHT3x(I2CPart):
    KEYS = (("sda", PIN), ("scl", PIN), ("addr", 0x44), ("temp", 21.5), ("hum", 40.0))
    VALUES = ("temp", "hum")
    ADDRS = (0x44, 0x45)

    def __init__(self, type_, params):
        I2CPart.__init__(self, type_, params)
        self._reset()

    def _reset(self):
        self.status = _STATUS_RESET
        self._single = None  # (ready at ms, stretching) of a single shot
        self._out = None  # what the next read returns
        self._periodic = None  # (started ms, period ms, duration ms)
        self._fetched = 0
        self._cmd_at = -10.0

    def check(self):
        I2CPart.check(self)
        if not -40 <= self.temp <= 125 or not 0 <= self.hum <= 100:
            raise ValueError("sht3x measures -40..125 °C and 0..100 %RH")

    def ack(self, reading):
        if not I2CPart.ack(self, reading):
            return False
        t = self.clock()
        s = self._single
        if s is not None and t < s[0]:  # measuring: deaf, but with clock stretching it
            return reading and s[1]  # takes the read header and holds SCL until done
        if reading:
            return s is not None or self._out is not None
        return t - self._cmd_at >= 1

    def stretch_us(self):
        if self._single is None:
            return 0
        return max(0, int((self._single[0] - self.clock()) * 1000))

    def read(self, n):
        if self._single is not None:
            self._out = self._result()
            self._single = None
        out = self._out or b""
        self._out = None
        return (out + b"\xff" * n)[:n]

    def write(self, data):
        if len(data) < 2:  # an address probe (scan) or a lone byte: no command
            return True
        t = self.clock()
        cmd = data[0] << 8 | data[1]
        self._cmd_at = t
        self._out = self._single = None  # a result not read is gone
        if cmd == 0xF32D:  # the status as the command before left it
            s = self.status
            self._out = bytes((s >> 8, s & 0xFF, self.crc(bytes((s >> 8, s & 0xFF)))))
            return True
        self.status &= ~_NOT_PROCESSED
        if cmd == 0x30A2:  # soft reset
            self._reset()
            self._cmd_at = t
            self.quiet = t + 1.5
        elif cmd == 0x3093:  # break: back to single shot
            self._periodic = None
        elif cmd == 0x3041:
            self.status &= ~_STATUS_CLEARED
        elif cmd in (0x306D, 0x3066):
            self.status = self.status | _HEATER if cmd == 0x306D else self.status & ~_HEATER
        elif cmd == 0xE000:
            self._fetch(t)
        elif self._periodic is not None:  # only the commands above while it runs
            self.status |= _NOT_PROCESSED
        elif cmd in _SINGLE:
            ms, stretch = _SINGLE[cmd]
            self._single = (t + ms, stretch)
        elif cmd == 0x2B32:  # ART: 4 Hz
            self._start(t, 250, 15)
        elif cmd >> 8 in _PERIODIC and (cmd & 0xFF) in _PERIODIC[cmd >> 8][1]:
            period, lsbs = _PERIODIC[cmd >> 8]
            self._start(t, period, _DURATION[lsbs.index(cmd & 0xFF)])
        else:
            self.status |= _NOT_PROCESSED
        return True

    def _start(self, t, period, duration):
        self._periodic = (t, period, duration)
        self._fetched = 0

    def _fetch(self, t):
        """Periodic data: the latest measurement if one finished since the last fetch
        (none: the read header gets a NACK)."""
        if self._periodic is None:
            return
        start, period, duration = self._periodic
        done = int((t - start - duration) // period) + 1 if t >= start + duration else 0
        if done > self._fetched:
            self._fetched = done
            self._out = self._result()

    def _result(self):
        out = bytearray(6)
        for i, raw in ((0, (self.temp + 45) * 65535 / 175), (3, self.hum * 65535 / 100)):
            w = min(65535, max(0, round(raw)))
            out[i], out[i + 1] = w >> 8, w & 0xFF
            out[i + 2] = self.crc(out[i:i + 2])
        return bytes(out)

    def state(self):
        out = I2CPart.state(self)
        out["heater"] = 1 if self.status & _HEATER else 0
        out["periodic"] = self._periodic is not None
        return out


TYPES = {"sht3x": SHT3x}
