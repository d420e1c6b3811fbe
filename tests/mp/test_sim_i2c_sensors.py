# The simulated AHT20, BME280 and BH1750 against their datasheets (reference/hardware.md
# §3.0, 3.3-3.5), spoken to at the I2C level through the host's board.I2C: the
# conversions and CRCs are written here from the datasheets, not taken from the parts.
import math
import time
from support import raises
from datasheet import sensirion_crc as crc8, soon_after
from mimi import board
from mimi.devices.sim import parts


def bus():
    return board.I2C(0, scl=9, sda=8)


def errno(e):
    return e.args[0]


# --- AHT20 ---------------------------------------------------------------------

def aht_decode(f):
    """7 bytes -> (status, RH %, T °C), CRC checked (hardware.md §3.3)."""
    assert crc8(f[:6]) == f[6], f
    rh = f[1] << 12 | f[2] << 4 | f[3] >> 4
    t = (f[3] & 0xF) << 16 | f[4] << 8 | f[5]
    return f[0], rh / 2 ** 20 * 100, t / 2 ** 20 * 200 - 50


def test_aht20_frame_vector():
    st, rh, t = aht_decode(bytes((0x1C, 0x3B, 0x5E, 0x86, 0x88, 0xB2, 0xD2)))
    assert abs(rh - 23.19) < 0.005 and abs(t - 31.67) < 0.005


def test_aht20_measurement():
    parts.attach("aht20", sda=8, scl=9, temp=31.67, hum=23.19)
    i2c = bus()
    assert errno(raises(OSError, i2c.readfrom, 0x38, 1)) == 19  # < 40 ms after power-up
    time.sleep_ms(41)
    assert i2c.scan() == [0x38]
    i2c.writeto(0x38, b"\x71")
    assert i2c.readfrom(0x38, 1)[0] & 0x08  # calibrated
    i2c.writeto(0x38, b"\xac\x33\x00")
    f = i2c.readfrom(0x38, 7)
    assert f[0] & 0x80  # busy for 80 ms
    time.sleep_ms(81)
    st, rh, t = aht_decode(i2c.readfrom(0x38, 7))
    assert not st & 0x80 and st & 0x08
    assert abs(rh - 23.19) < 0.01 and abs(t - 31.67) < 0.01
    parts.set("aht20@0x38", temp=-12.5, hum=88, fault="crc")
    i2c.writeto(0x38, b"\xac\x33\x00")
    time.sleep_ms(81)
    f = i2c.readfrom(0x38, 7)
    assert crc8(f[:6]) != f[6]
    parts.set("aht20@0x38", fault=None)
    _, rh, t = aht_decode(i2c.readfrom(0x38, 7))
    assert abs(rh - 88) < 0.01 and abs(t + 12.5) < 0.01


def test_aht20_calibration_and_reset():
    parts.attach("aht20", sda=8, scl=9, calibrated=0, temp=20, up_ms=50)
    i2c = bus()
    assert not i2c.readfrom(0x38, 1)[0] & 0x08
    i2c.writeto(0x38, b"\xac\x33\x00")
    time.sleep_ms(81)
    assert aht_decode(i2c.readfrom(0x38, 7))[2] == -50  # not a reading until calibrated
    i2c.writeto(0x38, b"\xbe\x08\x00")
    time.sleep_ms(11)
    assert i2c.readfrom(0x38, 1)[0] & 0x08
    i2c.writeto(0x38, b"\xac\x33\x00")
    time.sleep_ms(81)
    assert abs(aht_decode(i2c.readfrom(0x38, 7))[2] - 20) < 0.01
    i2c.writeto(0x38, b"\xba")  # soft reset: 20 ms deaf
    assert errno(raises(OSError, i2c.readfrom, 0x38, 1)) == 19
    time.sleep_ms(21)
    assert i2c.readfrom(0x38, 1)[0] & 0x08


# --- BME280 --------------------------------------------------------------------

def s16(lo, hi):
    v = lo | hi << 8
    return v - 65536 if v & 0x8000 else v


def trims(i2c):
    """The trimming parameters, read and unpacked as the datasheet's Table 16 says."""
    a = i2c.readfrom_mem(0x76, 0x88, 26)
    e = i2c.readfrom_mem(0x76, 0xE1, 7)
    c = {"T1": a[0] | a[1] << 8, "T2": s16(a[2], a[3]), "T3": s16(a[4], a[5]), "P1": a[6] | a[7] << 8}
    for k in range(2, 10):
        c["P%d" % k] = s16(a[6 + 2 * (k - 1)], a[7 + 2 * (k - 1)])
    c["H1"] = a[25]
    c["H2"] = s16(e[0], e[1])
    c["H3"] = e[2]
    h4 = e[3] << 4 | (e[4] & 0xF)
    h5 = e[5] << 4 | e[4] >> 4
    c["H4"] = h4 - 4096 if h4 & 0x800 else h4
    c["H5"] = h5 - 4096 if h5 & 0x800 else h5
    c["H6"] = e[6] - 256 if e[6] & 0x80 else e[6]
    return c


def compensate(c, adc_t, adc_p, adc_h):
    """The datasheet's floating-point formulas (Appendix A, §8.1): °C, Pa, %RH."""
    v1 = (adc_t / 16384 - c["T1"] / 1024) * c["T2"]
    v2 = (adc_t / 131072 - c["T1"] / 8192) ** 2 * c["T3"]
    t_fine = int(v1 + v2)
    t = (v1 + v2) / 5120
    v1 = t_fine / 2 - 64000
    v2 = v1 * v1 * c["P6"] / 32768 + v1 * c["P5"] * 2
    v2 = v2 / 4 + c["P4"] * 65536
    v1 = (c["P3"] * v1 * v1 / 524288 + c["P2"] * v1) / 524288
    v1 = (1 + v1 / 32768) * c["P1"]
    p = 1048576 - adc_p
    p = (p - v2 / 4096) * 6250 / v1
    p = p + (c["P9"] * p * p / 2147483648 + p * c["P8"] / 32768 + c["P7"]) / 16
    h = t_fine - 76800
    h = (adc_h - (c["H4"] * 64 + c["H5"] / 16384 * h)) * \
        (c["H2"] / 65536 * (1 + c["H6"] / 67108864 * h * (1 + c["H3"] / 67108864 * h)))
    h = h * (1 - c["H1"] * h / 524288)
    return t, p, min(100, max(0, h))


def raw(d):
    """0xF7-0xFE (pressure, temperature, humidity) -> (adc_T, adc_P, adc_H)."""
    return d[3] << 12 | d[4] << 4 | d[5] >> 4, d[0] << 12 | d[1] << 4 | d[2] >> 4, d[6] << 8 | d[7]


def bme(**kw):
    parts.attach("bme280", sda=8, scl=9, up_ms=5, **kw)
    return bus()


def test_bme280_id_trims_and_the_datasheet_example():
    i2c = bme()
    assert i2c.readfrom_mem(0x76, 0xD0, 1) == b"\x60"
    c = trims(i2c)
    # Bosch's worked example (the same T and P trims): adc_T 519888 -> 25.08 °C,
    # adc_P 415148 -> 100653.27 Pa. It checks the formulas above, then the part.
    t, p, _ = compensate(c, 519888, 415148, 0)
    assert abs(t - 25.08) < 0.005 and abs(p - 100653.27) < 0.05, (t, p)
    assert 0 < c["H1"] < 256 and 0 < c["H2"] < 1000 and 0 < c["H4"] < 2048


def test_bme280_forced_mode():
    i2c = bme(temp=23.45, press=987.65, hum=61.5)
    c = trims(i2c)
    assert i2c.readfrom_mem(0x76, 0xF7, 8) == b"\x80\x00\x00\x80\x00\x00\x80\x00"  # after reset
    i2c.writeto_mem(0x76, 0xF2, b"\x01")  # osrs_h x1
    i2c.writeto_mem(0x76, 0xF4, b"\x25")  # osrs_t x1, osrs_p x1, forced
    assert i2c.readfrom_mem(0x76, 0xF3, 1)[0] & 0x08  # measuring (about 9.3 ms)
    time.sleep_ms(11)
    assert not i2c.readfrom_mem(0x76, 0xF3, 1)[0] & 0x08
    assert i2c.readfrom_mem(0x76, 0xF4, 1)[0] & 3 == 0  # back to sleep
    d = i2c.readfrom_mem(0x76, 0xF7, 8)
    at, ap, ah = raw(d)
    assert d[2] & 0xF0 == 0 and d[5] & 0xF0 == 0  # x1: 16-bit results
    t, p, h = compensate(c, at, ap, ah)
    assert abs(t - 23.45) < 0.01 and abs(p / 100 - 987.65) < 0.05 and abs(h - 61.5) < 0.1, (t, p, h)


def test_bme280_skips_oversampling_and_ctrl_hum_latch():
    i2c = bme(temp=5, press=1000, hum=30)
    c = trims(i2c)
    i2c.writeto_mem(0x76, 0xF4, b"\xa1")  # T x16, P skipped, forced; ctrl_hum 0: H skipped
    time.sleep_ms(40)
    d = i2c.readfrom_mem(0x76, 0xF7, 8)
    at, ap, ah = raw(d)
    assert ap == 0x80000 and ah == 0x8000
    assert abs(compensate(c, at, 0, 0)[0] - 5) < 0.01
    i2c.writeto_mem(0x76, 0xF2, b"\x01")  # not in effect before a ctrl_meas write ...
    i2c.writeto_mem(0x76, 0xF5, b"\x00")
    time.sleep_ms(1)
    assert i2c.readfrom_mem(0x76, 0xF2, 1) == b"\x01"
    i2c.writeto_mem(0x76, 0xF4, b"\x25")  # ... which latches it
    time.sleep_ms(11)
    assert raw(i2c.readfrom_mem(0x76, 0xF7, 8))[2] != 0x8000
    # a write is (register, value) pairs: two registers in one write
    i2c.writeto(0x76, b"\xf2\x00\xf4\x25")
    time.sleep_ms(11)
    assert raw(i2c.readfrom_mem(0x76, 0xF7, 8))[2] == 0x8000


def test_bme280_normal_mode_and_filter():
    i2c = bme(temp=20, press=1013.25, hum=50)
    c = trims(i2c)
    i2c.writeto_mem(0x76, 0xF2, b"\x01")
    i2c.writeto_mem(0x76, 0xF5, b"\x00")  # standby 0.5 ms, filter off
    i2c.writeto_mem(0x76, 0xF4, b"\x27")  # x1 x1, normal
    time.sleep_ms(12)
    assert abs(compensate(c, *raw(i2c.readfrom_mem(0x76, 0xF7, 8)))[0] - 20) < 0.01
    parts.set("bme280@0x76", temp=30)
    time.sleep_ms(12)
    assert abs(compensate(c, *raw(i2c.readfrom_mem(0x76, 0xF7, 8)))[0] - 30) < 0.01
    # IIR filter x16: a step shows a sixteenth at a time
    i2c.writeto_mem(0x76, 0xF4, b"\x24")  # sleep to write config
    i2c.writeto_mem(0x76, 0xF5, b"\x10")
    i2c.writeto_mem(0x76, 0xF4, b"\x25")
    time.sleep_ms(11)
    first = compensate(c, *raw(i2c.readfrom_mem(0x76, 0xF7, 8)))[0]
    parts.set("bme280@0x76", temp=40)
    i2c.writeto_mem(0x76, 0xF4, b"\x25")
    time.sleep_ms(11)
    t = compensate(c, *raw(i2c.readfrom_mem(0x76, 0xF7, 8)))[0]
    assert abs(first - 30) < 0.01 and 30.3 < t < 31.0, (first, t)


def test_bme280_reset_and_faults():
    i2c = bme()
    i2c.writeto_mem(0x76, 0xF4, b"\x27")
    e = soon_after(lambda: time.sleep_ms(3) or i2c.writeto_mem(0x76, 0xE0, b"\xb6"),
                   lambda: i2c.readfrom_mem(0x76, 0xD0, 1), 2)
    assert isinstance(e, OSError) and errno(e) == 19  # 2 ms start-up
    time.sleep_ms(3)
    assert i2c.readfrom_mem(0x76, 0xF4, 1) == b"\x00"
    assert "faults: nack, stuck" in str(raises(ValueError, parts.set, "bme280@0x76", fault="crc"))
    parts.set("bme280@0x76", fault="nack")
    assert errno(raises(OSError, i2c.readfrom_mem, 0x76, 0xD0, 1)) == 19
    assert "300..1100 hPa" in str(raises(ValueError, parts.set, "bme280@0x76", press=50))
    parts.attach("bme280", sda=8, scl=9, addr=0x77, up_ms=5)
    parts.set("bme280@0x76", fault=None)
    assert i2c.scan() == [0x76, 0x77]


# --- BH1750 --------------------------------------------------------------------

def lux(i2c, addr=0x23):
    d = i2c.readfrom(addr, 2)
    return (d[0] << 8 | d[1]) / 1.2


def test_bh1750_one_time_and_continuous():
    parts.attach("bh1750", sda=8, scl=9, lux=250, up_ms=5)
    i2c = bus()
    assert lux(i2c) == 0  # powered down, nothing measured yet
    i2c.writeto(0x23, b"\x01")
    i2c.writeto(0x23, b"\x20")  # one time, H resolution: up to 180 ms
    time.sleep_ms(50)
    assert lux(i2c) == 0  # read too early: the register still holds the last result
    time.sleep_ms(135)
    assert abs(lux(i2c) - 250) < 1
    assert parts.get("bh1750@0x23")["powered"] == 0  # one time modes power down after
    parts.set("bh1750@0x23", lux=1000)
    i2c.writeto(0x23, b"\x13")  # continuous L resolution: 24 ms
    time.sleep_ms(30)
    assert abs(lux(i2c) - 1000) < 4
    parts.set("bh1750@0x23", lux=40)
    time.sleep_ms(30)
    assert abs(lux(i2c) - 40) < 4
    i2c.writeto(0x23, b"\x11")  # continuous H2: counts in half lux
    time.sleep_ms(185)
    assert abs(lux(i2c) / 2 - 40) < 0.5


def test_bh1750_mtreg_reset_and_address():
    parts.attach("bh1750", sda=8, scl=9, addr=0x5C, lux=100, up_ms=5)
    i2c = bus()
    assert i2c.scan() == [0x5C]
    i2c.writeto(0x5C, b"\x44")  # MTreg 138 = 0b100_01010: 01000_100 then 011_01010
    i2c.writeto(0x5C, b"\x6a")
    i2c.writeto(0x5C, b"\x21")  # one time H2 at MTreg 138: up to 360 ms
    time.sleep_ms(200)
    assert lux(i2c, 0x5C) == 0
    time.sleep_ms(170)
    # lux = counts / 1.2 * 69 / MTreg, halved in H2
    assert abs(lux(i2c, 0x5C) * 69 / 138 / 2 - 100) < 1
    i2c.writeto(0x5C, b"\x07")  # reset: ignored while powered down
    assert lux(i2c, 0x5C) > 0
    i2c.writeto(0x5C, b"\x01\x07")
    assert lux(i2c, 0x5C) == 0
    parts.set("bh1750@0x5C", fault="stuck")  # names take the address in either case
    assert errno(raises(OSError, i2c.readfrom, 0x5C, 2)) == 110
    assert math.isfinite(parts.get("bh1750@0x5C")["lux"])
