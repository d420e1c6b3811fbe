# BH1750FVI ambient light sensor on I2C, from ROHM's datasheet (reference/hardware.md
# §3.5): 0x23 (ADDR low) or 0x5C; one-byte opcodes: power down 0x00, power on 0x01,
# reset 0x07 (clears the data register, only when powered on), continuous H / H2 / L
# resolution 0x10 / 0x11 / 0x13, one time 0x20 / 0x21 / 0x23 (then power down), the
# measurement time register MTreg (31..254, default 69) as 01000_MT[7:5] and
# 011_MT[4:0]. A read gives the data register, 2 bytes big-endian: lux x 1.2 x MTreg/69
# (x 2 in H2 mode), updated when a measurement ends: max 180 ms (H, H2) or 24 ms (L)
# at MTreg 69, longer with it. It powers up in power down; reads always get an ACK.
from mimi.devices.sim.parts import PIN, I2CPart

_MODES = {0x10: (180, 1), 0x11: (180, 2), 0x13: (24, 1)}  # opcode -> (ms at MTreg 69, counts per 1.2 lx)


class BH1750(I2CPart):
    KEYS = (("sda", PIN), ("scl", PIN), ("addr", 0x23), ("lux", 300.0))
    VALUES = ("lux",)
    ADDRS = (0x23, 0x5C)
    FAULTS = ("nack", "stuck")

    def __init__(self, type_, params):
        I2CPart.__init__(self, type_, params)
        self.powered = 0
        self.mtreg = 69
        self._mode = None  # (opcode, one time?) of the running measurement
        self._start = 0
        self._ms = 0
        self.data = 0

    def check(self):
        I2CPart.check(self)
        if not 0 <= self.lux <= 100000:
            raise ValueError("bh1750 measures 0..100000 lx")

    def _counts(self, op):
        lo = op == 0x13
        counts = self.lux * 1.2 * _MODES[op][1] * self.mtreg / 69
        counts = min(65535, int(counts))
        return counts & ~3 if lo else counts  # L resolution: 4 lx steps (chosen: low 2 bits 0)

    def _sync(self, t):
        if self._mode is None:
            return
        op, once = self._mode
        done = int((t - self._start) // self._ms)
        if done >= 1:
            self.data = self._counts(op)
            if once:
                self._mode = None
                self.powered = 0
            else:
                self._start += done * self._ms

    def write(self, data):
        t = self.clock()
        for b in data:
            self._sync(t)
            if b == 0x00:
                self.powered = 0
                self._mode = None
            elif b == 0x01:
                self.powered = 1
            elif b == 0x07:
                if self.powered:
                    self.data = 0
            elif b in (0x10, 0x11, 0x13, 0x20, 0x21, 0x23):  # 0x1x continuous, 0x2x one time
                op = b if b < 0x20 else b - 0x10
                self.powered = 1
                self._mode = (op, b >= 0x20)
                self._start = t
                self._ms = _MODES[op][0] * self.mtreg / 69
            elif b & 0xF8 == 0x40:
                self.mtreg = (b & 7) << 5 | (self.mtreg & 0x1F)
            elif b & 0xE0 == 0x60:
                self.mtreg = (self.mtreg & 0xE0) | (b & 0x1F)
        return True

    def read(self, n):
        self._sync(self.clock())
        return bytes((bytes((self.data >> 8, self.data & 0xFF)) + b"\xff" * n)[:n])

    def state(self):
        out = I2CPart.state(self)
        out.update(powered=self.powered, mtreg=self.mtreg)
        return out


TYPES = {"bh1750": BH1750}
