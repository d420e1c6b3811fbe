# Bosch BME280 (temperature, humidity, pressure) and BMP280 (no humidity), I2C
# 0x76/0x77 (datasheets BST-BME280-DS002, BST-BMP280-DS001): chip id 0xD0 (0x60 / 0x58),
# trimming constants read once, then a forced measurement at 1x oversampling (ctrl_hum
# 0xF2, ctrl_meas 0xF4; 9.3 ms at most; status 0xF3 bit 3 while measuring), 8 bytes from
# 0xF7, and the datasheet's integer compensation (§4.2.3): exact on every interpreter,
# no float rounding (the board's floats are single precision).
import struct
from micropython import const
from mimi.devices.drivers.i2cpart import Part
from mimi.devices.table import Fault, qty

_ID = const(0xD0)
_CTRL_HUM = const(0xF2)
_STATUS = const(0xF3)
_CTRL_MEAS = const(0xF4)
_DATA = const(0xF7)
_FORCED_1X = const(0x25)  # osrs_t 1x, osrs_p 1x, forced mode
_MEASURING = const(0x08)
_SKIPPED = const(0x80000)
CHIPS = {0x60: "BME280", 0x58: "BMP280"}


def _s8(b):
    return b - 256 if b > 127 else b


def calibration(c, h1=None, e=None):
    """The trimming constants: c = 24 bytes from 0x88; for a BME280 also h1 (0xA1) and
    e = 7 bytes from 0xE1. -> (T1..T3, P1..P9, H1..H6 or None)."""
    cal = list(struct.unpack("<HhhHhhhhhhhh", c))
    if e is None:
        return cal + [None] * 6
    h2 = struct.unpack("<h", e[0:2])[0]
    h4 = _s8(e[3]) * 16 | (e[4] & 0x0F)
    h5 = _s8(e[5]) * 16 | (e[4] >> 4)
    return cal + [h1, h2, e[2], h4, h5, _s8(e[6])]


def compensate(cal, adc_t, adc_p, adc_h=None):
    """(°C, hPa, %RH or None) from raw readings, by the datasheet's integer formulas."""
    t1, t2, t3, p1, p2, p3, p4, p5, p6, p7, p8, p9, h1, h2, h3, h4, h5, h6 = cal
    v1 = (((adc_t >> 3) - (t1 << 1)) * t2) >> 11
    v2 = (((((adc_t >> 4) - t1) * ((adc_t >> 4) - t1)) >> 12) * t3) >> 14
    t_fine = v1 + v2
    t = ((t_fine * 5 + 128) >> 8) / 100
    v1 = t_fine - 128000
    v2 = v1 * v1 * p6 + ((v1 * p5) << 17) + (p4 << 35)
    v1 = ((v1 * v1 * p3) >> 8) + ((v1 * p2) << 12)
    v1 = (((1 << 47) + v1) * p1) >> 33
    p = None
    if v1:
        p = 1048576 - adc_p
        p = _div(((p << 31) - v2) * 3125, v1)
        v1 = (p9 * (p >> 13) * (p >> 13)) >> 25
        v2 = (p8 * p) >> 19
        p = (((p + v1 + v2) >> 8) + (p7 << 4)) / 25600
    h = None
    if adc_h is not None and h1 is not None:
        v = t_fine - 76800
        v = ((((adc_h << 14) - (h4 << 20) - (h5 * v)) + 16384) >> 15) * \
            (((((((v * h6) >> 10) * (((v * h3) >> 11) + 32768)) >> 10) + 2097152) * h2 + 8192) >> 14)
        v -= ((((v >> 15) * (v >> 15)) >> 7) * h1) >> 4
        v = min(max(v, 0), 419430400)
        h = (v >> 12) / 1024
    return t, p, h


def _div(a, b):
    """C's integer division (towards zero)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


class BME280(Part):
    def get(self, reg, n):
        return self.io("readfrom_mem", reg, n)

    def put(self, reg, data):
        self.io("writeto_mem", reg, data)

    def setup(self, m):
        """The chip id and the trimming constants, read once (kept in the device's state)."""
        cid = self.get(_ID, 1)[0]
        if cid not in CHIPS:
            raise Fault("answer", "0x%02x answers with chip id 0x%02x, not a BME280 (0x60) or a "
                        "BMP280 (0x58)" % (self.addr, cid))
        hum = cid == 0x60
        c = self.get(0x88, 24)
        m["cal"] = calibration(c, self.get(0xA1, 1)[0], self.get(0xE1, 7)) if hum else calibration(c)
        m["hum"] = hum

    def read(self):
        m = self.dev.mem
        if m.get("cal") is None:
            yield from self.cmd(bytes((_ID,)))  # answering at all (deaf ~2 ms after power-up)
            self.setup(m)
        hum = m["hum"]
        if hum:
            self.put(_CTRL_HUM, b"\x01")  # 1x; takes effect with the ctrl_meas write
        self.put(_CTRL_MEAS, bytes((_FORCED_1X,)))
        yield 10
        for _ in range(5):
            if not self.get(_STATUS, 1)[0] & _MEASURING:
                break
            yield 2
        d = self.get(_DATA, 8)
        adc_p = d[0] << 12 | d[1] << 4 | d[2] >> 4
        adc_t = d[3] << 12 | d[4] << 4 | d[5] >> 4
        if adc_t == _SKIPPED:
            m["cal"] = None
            raise Fault("data", "no measurement was made (it reads 0x80000: reset?)")
        t, p, h = compensate(m["cal"], adc_t, adc_p, d[6] << 8 | d[7] if hum else None)
        if not -40 <= t <= 85:
            raise Fault("range", "%.1f °C, outside the %s's -40 to 85 °C" % (t, "BME280" if hum else "BMP280"))
        if p is None or not 300 <= p <= 1100:
            raise Fault("range", "pressure %s hPa, outside 300 to 1100 hPa" % (p if p is None else "%.1f" % p))
        out = [qty("", t, "°C")]
        if h is not None:
            out.append(qty("humidity", h, "%"))
        out.append(qty("pressure", p, "hPa"))
        return tuple(out)


def make(dev):
    return BME280(dev)
