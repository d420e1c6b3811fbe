# BME280 pressure, temperature and humidity sensor on I2C, from Bosch's datasheet
# BST-BME280-DS002 (reference/hardware.md §3.4): 0x76 / 0x77; chip id 0x60 at 0xD0;
# reset 0xB6 to 0xE0 (2 ms before it answers again); trimming parameters at 0x88-0xA1
# and 0xE1-0xE7; ctrl_hum 0xF2 (takes effect at the next ctrl_meas write), status
# 0xF3 (bit 3 measuring), ctrl_meas 0xF4 (osrs_t, osrs_p, mode: sleep, forced, normal),
# config 0xF5 (standby time, IIR filter); raw ADC values at 0xF7-0xFE, 0x80000 (0x8000)
# for a channel skipped. A read auto-increments the register address; a write is
# (register, value) pairs. The raw values come from inverting the datasheet's
# compensation formulas (§4.2.3, integer) with this part's trimming parameters, so the
# datasheet's formulas give back the temperature, pressure and humidity set.
from mimi.devices.sim.parts import PIN, I2CPart

# Trimming parameters: T and P those of Bosch's worked example (BMP280 datasheet §3.12),
# H values typical of real parts (each part has its own; any set with dig_H2 > 0 works).
T1, T2, T3 = 27504, 26435, -1000
P1, P2, P3, P4, P5, P6, P7, P8, P9 = 36477, -10685, 3024, 2855, 140, -7, 15500, -14600, 6000
H1, H2, H3, H4, H5, H6 = 75, 362, 0, 313, 50, 30

_OSRS = (0, 1, 2, 4, 8, 16, 16, 16)  # oversampling code -> times (0: skipped)
_STANDBY_MS = (0.5, 62.5, 125, 250, 500, 1000, 10, 20)
_IIR = (1, 2, 4, 8, 16, 16, 16, 16)


def _le(v):
    return bytes((v & 0xFF, v >> 8 & 0xFF))


def _nvm():
    """The trimming registers as the chip holds them (little-endian words)."""
    regs = bytearray(256)
    regs[0x88:0xA0] = b"".join(_le(v) for v in (T1, T2, T3, P1, P2, P3, P4, P5, P6, P7, P8, P9))
    regs[0xA1] = H1
    regs[0xE1:0xE3] = _le(H2)
    regs[0xE3] = H3
    regs[0xE4] = H4 >> 4 & 0xFF
    regs[0xE5] = (H5 & 0xF) << 4 | (H4 & 0xF)
    regs[0xE6] = H5 >> 4 & 0xFF
    regs[0xE7] = H6 & 0xFF
    regs[0xD0] = 0x60
    return regs


def t_fine(adc_t):
    v1 = (((adc_t >> 3) - (T1 << 1)) * T2) >> 11
    v2 = (((((adc_t >> 4) - T1) * ((adc_t >> 4) - T1)) >> 12) * T3) >> 14
    return v1 + v2


def temp_x100(adc_t):
    """§4.2.3 BME280_compensate_T_int32: 0.01 °C."""
    return (t_fine(adc_t) * 5 + 128) >> 8


def press_q8(adc_p, tf):
    """§4.2.3 BME280_compensate_P_int64: Pa in Q24.8."""
    v1 = tf - 128000
    v2 = v1 * v1 * P6 + ((v1 * P5) << 17) + (P4 << 35)
    v1 = ((v1 * v1 * P3) >> 8) + ((v1 * P2) << 12)
    v1 = (((1 << 47) + v1) * P1) >> 33
    if v1 == 0:
        return 0
    p = 1048576 - adc_p
    n = ((p << 31) - v2) * 3125
    p = n // v1 if n >= 0 else -(-n // v1)  # C's division truncates
    v1 = (P9 * (p >> 13) * (p >> 13)) >> 25
    v2 = (P8 * p) >> 19
    return ((p + v1 + v2) >> 8) + (P7 << 4)


def hum_q10(adc_h, tf):
    """§4.2.3 bme280_compensate_H_int32: %RH in Q22.10."""
    x = tf - 76800
    x = ((((adc_h << 14) - (H4 << 20) - (H5 * x)) + 16384) >> 15) * \
        (((((((x * H6) >> 10) * (((x * H3) >> 11) + 32768)) >> 10) + 2097152) * H2 + 8192) >> 14)
    x -= ((((x >> 15) * (x >> 15)) >> 7) * H1) >> 4
    return min(419430400, max(0, x)) >> 12


def _solve(f, want, rising, top):
    """The smallest ADC value in 0..top whose f() reaches want (f monotonic)."""
    lo, hi = 0, top
    while lo < hi:
        mid = (lo + hi) // 2
        v = f(mid)
        if (v >= want) if rising else (v <= want):
            hi = mid
        else:
            lo = mid + 1
    return lo


class BME280(I2CPart):
    KEYS = (("sda", PIN), ("scl", PIN), ("addr", 0x76), ("temp", 21.5), ("press", 1013.25),
            ("hum", 40.0))
    VALUES = ("temp", "press", "hum")
    ADDRS = (0x76, 0x77)
    BOOT_MS = 2
    FAULTS = ("nack", "stuck")

    def __init__(self, type_, params):
        I2CPart.__init__(self, type_, params)
        self._reset()

    def _reset(self):
        self.regs = _nvm()
        self.regs[0xF7:0xFF] = b"\x80\x00\x00\x80\x00\x00\x80\x00"
        self._ptr = 0
        self._osrs_h = 0  # ctrl_hum as latched by the last ctrl_meas write
        self._done = None  # when the running measurement ends
        self._cycle = 0  # normal mode: ms from one measurement's start to the next
        self._iir = None  # the filter's memory (adc_t, adc_p)

    def check(self):
        I2CPart.check(self)
        if not (-40 <= self.temp <= 85 and 300 <= self.press <= 1100 and 0 <= self.hum <= 100):
            raise ValueError("bme280 measures -40..85 °C, 300..1100 hPa and 0..100 %RH")

    def adc(self):
        """The raw ADC values (20, 20, 16 bits) the set values read as."""
        at = _solve(temp_x100, round(self.temp * 100), True, 0xFFFFF)
        tf = t_fine(at)
        ap = _solve(lambda a: press_q8(a, tf), round(self.press * 25600), False, 0xFFFFF)
        ah = _solve(lambda a: hum_q10(a, tf), round(self.hum * 1024), True, 0xFFFF)
        return at, ap, ah

    def _measure(self):
        meas = self.regs[0xF4]
        ot, op, oh = _OSRS[meas >> 5], _OSRS[meas >> 2 & 7], _OSRS[self._osrs_h]
        at, ap, ah = self.adc()
        coef = _IIR[self.regs[0xF5] >> 2 & 7]
        if coef > 1:  # §3.4.4: filtered = (old * (coef - 1) + new) / coef, T and P
            old = self._iir or (at, ap)
            at = (old[0] * (coef - 1) + at) // coef
            ap = (old[1] * (coef - 1) + ap) // coef
            self._iir = (at, ap)
        out = bytearray(8)
        for i, v, os in ((0, ap, op), (3, at, ot)):
            if not os:
                v = 0x80000
            elif coef == 1:  # without the filter: 16 bits at x1, one more each doubling
                drop = 5 - _OSRS.index(os)
                v = v >> drop << drop
            out[i:i + 3] = bytes((v >> 12, v >> 4 & 0xFF, (v & 0xF) << 4))
        out[6:8] = bytes((ah >> 8, ah & 0xFF)) if oh else b"\x80\x00"
        self.regs[0xF7:0xFF] = out

    def _t_meas(self):
        meas = self.regs[0xF4]
        ot, op, oh = _OSRS[meas >> 5], _OSRS[meas >> 2 & 7], _OSRS[self._osrs_h]
        return 1.25 + 2.3 * ot + (2.3 * op + 0.575 if op else 0) + (2.3 * oh + 0.575 if oh else 0)

    def _sync(self, t):
        """Measurements that ended by t: data registers updated, forced mode back to sleep."""
        while self._done is not None and t >= self._done:
            self._measure()
            if self._cycle:
                self._done += self._cycle
            else:
                self._done = None
                self.regs[0xF4] &= 0xFC

    def _status(self, t):
        if self._done is None:
            return 0
        return 0x08 if t >= self._done - self._t_meas() else 0

    def write(self, data):
        if not data:
            return True
        t = self.clock()
        self._sync(t)
        self._ptr = data[0]
        for i in range(0, len(data) - 1, 2):
            reg, v = data[i], data[i + 1]
            if reg == 0xE0 and v == 0xB6:
                self._reset()
                self.quiet = t + 2
                return True
            if reg == 0xF2:
                self.regs[0xF2] = v & 7
            elif reg == 0xF5:
                self.regs[0xF5] = v & 0xFD
            elif reg == 0xF4:
                self.regs[0xF4] = v
                self._osrs_h = self.regs[0xF2]
                mode = v & 3
                self._cycle = 0
                self._done = None
                if mode == 3:
                    self._cycle = self._t_meas() + _STANDBY_MS[self.regs[0xF5] >> 5]
                if mode:
                    self._done = t + self._t_meas()
        return True

    def read(self, n):
        t = self.clock()
        self._sync(t)
        out = bytearray(n)
        for i in range(n):
            reg = (self._ptr + i) & 0xFF
            out[i] = self._status(t) if reg == 0xF3 else self.regs[reg]
        self._ptr = (self._ptr + n) & 0xFF
        return bytes(out)


TYPES = {"bme280": BME280}
