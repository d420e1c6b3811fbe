# The simulated SHT3x against Sensirion's datasheet (reference/hardware.md §3.0-3.1),
# spoken to at the I2C level through the host's board seam (board.I2C), as a driver
# would on the chip: commands, NACKs while it measures, clock stretching, CRCs,
# status, soft reset, periodic mode, and the faults sim_set gives it.
import time
from support import raises
from datasheet import sensirion_crc as crc8, soon_after
from mimi import board
from mimi.devices.sim import parts


def sht3x(**kw):
    parts.attach("sht3x", sda=8, scl=9, up_ms=10, **kw)
    return board.I2C(0, scl=9, sda=8)


def errno(exc):
    return exc.args[0]


def words(d):
    """6 bytes -> (T °C, RH %), both CRCs checked."""
    assert crc8(d[0:2]) == d[2] and crc8(d[3:5]) == d[5], d
    return -45 + 175 * (d[0] << 8 | d[1]) / 65535, 100 * (d[3] << 8 | d[4]) / 65535


def test_crc_vector():
    assert crc8(b"\xbe\xef") == 0x92  # the datasheet's example
    from mimi.devices.sim.crc import sensirion

    assert sensirion(b"\xbe\xef") == 0x92


def test_single_shot_without_stretching():
    i2c = sht3x(temp=21.5, hum=40)
    assert i2c.scan() == [0x44]
    # high repeatability without clock stretching: until the data is ready (15 ms) the
    # read header is NACKed
    e = soon_after(lambda: i2c.writeto(0x44, b"\x24\x00"), lambda: i2c.readfrom(0x44, 6), 15)
    assert isinstance(e, OSError) and errno(e) == 19
    time.sleep_ms(16)
    d = i2c.readfrom(0x44, 6)
    t, rh = words(d)
    assert abs(t - 21.5) < 0.01 and abs(rh - 40) < 0.01
    assert d[0] << 8 | d[1] == round(66.5 * 65535 / 175)  # S_T = (T + 45) * 65535 / 175
    # read once: nothing more to read
    assert errno(raises(OSError, i2c.readfrom, 0x44, 6)) == 19


def test_known_values_and_limits():
    i2c = sht3x(temp=-40, hum=0)
    for temp, hum, st, srh in ((-40, 0, round(5 * 65535 / 175), 0), (25, 50, round(70 * 65535 / 175), 32768),
                               (125, 100, round(170 * 65535 / 175), 65535)):
        parts.set("sht3x@0x44", temp=temp, hum=hum)
        time.sleep_ms(2)
        i2c.writeto(0x44, b"\x24\x16")  # low repeatability: 4 ms
        time.sleep_ms(5)
        d = i2c.readfrom(0x44, 6)
        words(d)
        assert (d[0] << 8 | d[1], d[3] << 8 | d[4]) == (st, srh), (temp, hum, d)
    e = raises(ValueError, parts.set, "sht3x@0x44", temp=130)
    assert "-40..125" in str(e)
    assert parts.get("sht3x@0x44")["temp"] == 125  # a refused value changes nothing


def test_clock_stretching_waits_for_the_data():
    i2c = sht3x(temp=30, hum=55)
    i2c.writeto(0x44, b"\x2c\x06")  # high repeatability, clock stretching: up to 15 ms
    t0 = time.ticks_ms()
    d = i2c.readfrom(0x44, 6)
    assert time.ticks_diff(time.ticks_ms(), t0) >= 14
    t, rh = words(d)
    assert abs(t - 30) < 0.01 and abs(rh - 55) < 0.01
    # SCL held longer than the controller allows: a timeout, not data
    short = board.I2C(0, scl=9, sda=8, timeout=5000)
    time.sleep_ms(2)
    short.writeto(0x44, b"\x2c\x06")
    assert errno(raises(OSError, short.readfrom, 0x44, 6)) == 110


def test_first_word_only_and_medium_repeatability():
    i2c = sht3x(temp=0, hum=100)
    i2c.writeto(0x44, b"\x24\x0b")  # medium: 6 ms
    time.sleep_ms(7)
    d = i2c.readfrom(0x44, 3)  # T and its CRC, then a NACK ends the read
    assert len(d) == 3 and crc8(d[:2]) == d[2]
    assert abs(-45 + 175 * (d[0] << 8 | d[1]) / 65535) < 0.01


def test_busy_and_command_spacing():
    i2c = sht3x()
    i2c.writeto(0x44, b"\x24\x00")
    assert errno(raises(OSError, i2c.writeto, 0x44, b"\xf3\x2d")) == 19  # measuring: deaf
    time.sleep_ms(16)
    i2c.readfrom(0x44, 6)
    e = soon_after(lambda: time.sleep_ms(2) or i2c.writeto(0x44, b"\x30\x41"),
                   lambda: i2c.writeto(0x44, b"\xf3\x2d"), 1)
    assert isinstance(e, OSError) and errno(e) == 19  # < 1 ms after a command
    time.sleep_ms(2)
    i2c.writeto(0x44, b"\xf3\x2d")


def status(i2c):
    # the part's deaf windows are judged by soon_after(); here a write the host's
    # scheduler put back inside one (a CI run: ENODEV) is made again once
    time.sleep_ms(2)
    try:
        i2c.writeto(0x44, b"\xf3\x2d")
    except OSError:
        time.sleep_ms(20)
        i2c.writeto(0x44, b"\xf3\x2d")
    d = i2c.readfrom(0x44, 3)
    assert crc8(d[:2]) == d[2]
    return d[0] << 8 | d[1]


def test_status_heater_clear_and_soft_reset():
    i2c = sht3x()
    assert status(i2c) == 0x8010  # after power-up: alert pending, reset detected
    time.sleep_ms(2)
    i2c.writeto(0x44, b"\x30\x41")  # clear status
    assert status(i2c) == 0
    time.sleep_ms(2)
    i2c.writeto(0x44, b"\x30\x6d")  # heater on
    assert status(i2c) == 0x2000 and parts.get("sht3x@0x44")["heater"] == 1
    time.sleep_ms(2)
    i2c.writeto(0x44, b"\x12\x34")  # no such command: status bit 1
    assert status(i2c) == 0x2002
    # soft reset: deaf for 1.5 ms, then as after power-up
    e = soon_after(lambda: time.sleep_ms(2) or i2c.writeto(0x44, b"\x30\xa2"),
                   lambda: i2c.writeto(0x44, b"\xf3\x2d"), 1.5)
    assert isinstance(e, OSError) and errno(e) == 19
    assert status(i2c) == 0x8010


def test_periodic_mode_fetch_and_break():
    i2c = sht3x(temp=18, hum=60)
    i2c.writeto(0x44, b"\x27\x37")  # 10 measurements a second, high repeatability
    time.sleep_ms(2)
    i2c.writeto(0x44, b"\xe0\x00")  # fetch before the first result: read header NACKed
    assert errno(raises(OSError, i2c.readfrom, 0x44, 6)) == 19
    time.sleep_ms(120)
    i2c.writeto(0x44, b"\xe0\x00")
    t, rh = words(i2c.readfrom(0x44, 6))
    assert abs(t - 18) < 0.01 and abs(rh - 60) < 0.01
    time.sleep_ms(2)
    i2c.writeto(0x44, b"\xe0\x00")  # nothing new since
    assert errno(raises(OSError, i2c.readfrom, 0x44, 6)) == 19
    time.sleep_ms(2)
    i2c.writeto(0x44, b"\x24\x00")  # ignored while periodic runs
    assert status(i2c) & 2
    time.sleep_ms(2)
    i2c.writeto(0x44, b"\x30\x93")  # break
    time.sleep_ms(2)
    i2c.writeto(0x44, b"\x24\x00")
    time.sleep_ms(16)
    words(i2c.readfrom(0x44, 6))


def test_second_address_and_wrong_bus():
    parts.attach("sht3x", sda=8, scl=9, addr=0x45, up_ms=10)
    assert parts.names() == ["sht3x@0x45"]
    assert board.I2C(1, scl=9, sda=8).scan() == [0x45]
    swapped = board.I2C(0, scl=8, sda=9)
    assert swapped.scan() == []
    assert errno(raises(OSError, swapped.writeto, 0x45, b"\x24\x00")) == 19
    e = raises(ValueError, parts.attach, "sht3x", sda=8, scl=9, addr=0x46)
    assert "0x44 or 0x45" in str(e)


def test_faults_nack_crc_stuck():
    i2c = sht3x(temp=20)
    parts.set("sht3x@0x44", fault="nack")
    assert i2c.scan() == []
    assert errno(raises(OSError, i2c.writeto, 0x44, b"\x24\x00")) == 19
    parts.set("sht3x@0x44", fault="crc")
    i2c.writeto(0x44, b"\x24\x00")
    time.sleep_ms(16)
    d = i2c.readfrom(0x44, 6)
    assert crc8(d[0:2]) != d[2] and crc8(d[3:5]) != d[5]
    parts.set("sht3x@0x44", fault="stuck")  # SDA held low: everything on the bus times out
    slow = board.I2C(0, scl=9, sda=8, timeout=20000)
    t0 = time.ticks_ms()
    assert errno(raises(OSError, slow.writeto, 0x44, b"\x24\x00")) == 110
    assert time.ticks_diff(time.ticks_ms(), t0) >= 19
    assert slow.scan() == []
    e = raises(ValueError, parts.set, "sht3x@0x44", fault="smoke")
    assert "nack, stuck, crc" in str(e)
    parts.set("sht3x@0x44", fault=None)
    time.sleep_ms(2)
    i2c.writeto(0x44, b"\x24\x00")
    time.sleep_ms(16)
    assert abs(words(i2c.readfrom(0x44, 6))[0] - 20) < 0.01
    assert parts.get("sht3x@0x44")["fault"] is None


def test_power_up_and_readfrom_mem():
    parts.attach("sht3x", sda=8, scl=9)
    i2c = board.I2C(0, scl=9, sda=8)
    time.sleep_ms(2)  # 1 ms after power-up before it answers
    # a register-style read of the status (repeated start) works as a command + read
    d = i2c.readfrom_mem(0x44, 0xF32D, 3, addrsize=16)
    assert d[:2] == b"\x80\x10" and crc8(d[:2]) == d[2]


def test_i2c_seam_errors():
    raises(ValueError, board.I2C, 2, scl=9, sda=8)
    raises(ValueError, board.I2C, 0, scl=22, sda=8)  # no GPIO22 on the S3
    assert board.I2C(0, scl=9, sda=8).scan() == []  # nothing on the bus
