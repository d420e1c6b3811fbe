# The simulated DHT11 / DHT22 against Aosong's datasheets (reference/hardware.md §3.7),
# through the host's primitive (board.host_signals.dht_readinto, the firmware's C reader)
# and board.dht(): the 5-byte frame and its checksum, both formats (DHT22's negative
# temperatures in sign and magnitude), the minimum intervals, and the faults.
import time
from support import raises
from mimi import board
from mimi.board.host_signals import dht_readinto
from mimi.devices.sim import parts


def checksum_ok(b):
    return (b[0] + b[1] + b[2] + b[3]) & 0xFF == b[4]


def test_dht22_frame_and_negative_temperature():
    parts.attach("dht22", pin=5, temp=-12.3, hum=65.2, up_ms=3000)
    buf = bytearray(5)
    t0 = time.ticks_ms()
    dht_readinto(board.Pin(5), buf)
    assert time.ticks_diff(time.ticks_ms(), t0) >= 268  # 250 ms high, 18 ms start, the frame
    assert checksum_ok(buf)
    assert buf[0] << 8 | buf[1] == 652  # RH x 10
    assert buf[2] & 0x80 and (buf[2] & 0x7F) << 8 | buf[3] == 123  # sign bit, then |T| x 10
    time.sleep_ms(2000)
    parts.set("dht22@5", temp=35.5, hum=100)
    d = board.dht(5, 22)
    d.measure()
    assert abs(d.temperature() - 35.5) < 0.01 and abs(d.humidity() - 100) < 0.01


def test_dht22_minimum_interval_and_power_up():
    parts.attach("dht22", pin=5)
    buf = bytearray(5)
    assert raises(OSError, dht_readinto, board.Pin(5), buf).args[0] == 110  # < 1 s after power-up
    time.sleep_ms(1000)
    dht_readinto(board.Pin(5), buf)
    assert checksum_ok(buf)
    assert raises(OSError, dht_readinto, board.Pin(5), buf).args[0] == 110  # < 2 s after the last
    time.sleep_ms(1800)
    dht_readinto(board.Pin(5), buf)


def test_dht11_format():
    parts.attach("dht11", pin=6, temp=23.7, hum=41.4, up_ms=3000)
    buf = bytearray(5)
    dht_readinto(board.Pin(6), buf)
    assert checksum_ok(buf) and buf[:4] == bytes((41, 0, 23, 7))
    assert raises(OSError, dht_readinto, board.Pin(6), buf).args[0] == 110  # < 1 s
    time.sleep_ms(800)
    parts.set("dht11@6", temp=-5, hum=99)  # outside its range: it reads its limits
    d = board.dht(6, 11)
    d.measure()
    assert (d.temperature(), d.humidity()) == (0, 90)


def test_dht_faults():
    parts.attach("dht22", pin=7, up_ms=3000)
    d = board.dht(7, 22)
    parts.set("dht22@7", fault="crc")
    assert str(raises(Exception, d.measure)) == "checksum error"
    time.sleep_ms(2000)
    for fault in ("timeout", "nack", "stuck"):
        parts.set("dht22@7", fault=fault)
        assert raises(OSError, d.measure).args[0] == 110
    parts.set("dht22@7", fault=None)
    d.measure()
    assert abs(d.temperature() - 21.5) < 0.01
    raises(ValueError, board.dht, 7, 21)
    assert str(raises(ValueError, dht_readinto, board.Pin(7), bytearray(4))) == "buffer too small"


def test_nothing_on_the_pin():
    d = board.dht(8, 22)
    assert raises(OSError, d.measure).args[0] == 110
