# The real micropython-lib onewire, ds18x20, dht and neopixel that the board's
# firmware freezes (extracted from MicroPython's source at test time, see the
# micropython_lib fixture) running on the host's simulated primitives: _onewire
# (board/hostlib/_onewire.py), machine.dht_readinto and machine.bitstream
# (board/host_io.py), and the host Pin. What the host seam gives is what those
# modules expect of the chip; and the host's own versions (board/hostlib/) have their API.
import sys
import time
import support
from support import raises
from mimi import board
from mimi.devices.sim import parts

FIXTURES = ("micropython_lib",)


def setup():
    lib = support.fixture("micropython_lib")
    if not lib["dir"]:
        support.skip(lib["why"])
    from mimi.board import host_io
    from mimi.board.hostlib import _onewire

    sys.modules["machine"] = host_io  # dht: machine.dht_readinto; neopixel: machine.bitstream
    sys.modules["_onewire"] = _onewire
    sys.path.insert(0, board.host_path(lib["dir"]))
    import onewire

    assert onewire.__file__.startswith(board.host_path(lib["dir"])), onewire.__file__


def public(cls):
    return {n for n in dir(cls) if n[:1] != "_" or n in ("__len__", "__getitem__", "__setitem__")}


def test_same_api_as_the_hosts_own():
    import dht
    import ds18x20
    import neopixel
    import onewire
    from mimi.board.hostlib import dht as hdht, ds18x20 as hds, neopixel as hnp, onewire as how

    for real, mine in ((onewire.OneWire, how.OneWire), (ds18x20.DS18X20, hds.DS18X20),
                       (dht.DHT11, hdht.DHT11), (dht.DHT22, hdht.DHT22), (neopixel.NeoPixel, hnp.NeoPixel)):
        assert public(real) <= public(mine), (real, public(real) - public(mine))
    assert issubclass(how.OneWireError, Exception)


def test_real_onewire_and_ds18x20():
    import ds18x20
    import onewire

    for t in (19.5, -7.25, 60.0):
        parts.attach("ds18b20", pin=4, temp=t)
    ow = onewire.OneWire(board.Pin(4))
    roms = ow.scan()
    assert len(roms) == 3 and all(ow.crc8(r) == 0 and r[0] == 0x28 for r in roms)
    mine = board.onewire(4).scan()
    assert sorted(bytes(r) for r in roms) == sorted(bytes(r) for r in mine)
    ds = ds18x20.DS18X20(ow)
    assert [ds.read_temp(r) for r in roms] == [85.0] * 3  # power-on value
    ds.convert_temp()
    time.sleep_ms(760)
    assert sorted(ds.read_temp(r) for r in roms) == [-7.25, 19.5, 60.0]
    ds.write_scratch(roms[0], b"\x00\x00\x1f")  # 9 bits
    ds.convert_temp()
    time.sleep_ms(100)
    assert ds.read_scratch(roms[0])[4] == 0x1F
    name = [n for n in parts.names() if parts.get(n)["rom"] == bytes(roms[1]).hex()][0]
    parts.set(name, fault="crc")
    assert str(raises(Exception, ds.read_temp, roms[1])) == "CRC error"
    for n in parts.names():
        parts.set(n, fault="nack")
    assert ow.reset() is False
    raises(onewire.OneWireError, ds.convert_temp)


def test_real_dht():
    import dht

    parts.attach("dht22", pin=5, temp=-20.4, hum=33.3, up_ms=5000)
    parts.attach("dht11", pin=6, temp=24, hum=50, up_ms=5000)
    d22 = dht.DHT22(board.Pin(5))
    d22.measure()
    assert abs(d22.temperature() + 20.4) < 0.01 and abs(d22.humidity() - 33.3) < 0.01
    d11 = dht.DHT11(board.Pin(6))
    d11.measure()
    assert (d11.temperature(), d11.humidity()) == (24, 50)
    assert raises(OSError, d11.measure).args[0] == 110  # within its 1 s
    time.sleep_ms(2000)
    parts.set("dht22@5", fault="crc")
    assert str(raises(Exception, d22.measure)) == "checksum error"


def test_real_neopixel():
    import neopixel

    parts.attach("rgb_led", pin=48, n=2)
    np = neopixel.NeoPixel(board.Pin(48), 2)
    np[0] = (255, 0, 64)
    np[1] = (1, 2, 3)
    np.write()
    assert parts.get("rgb_led@48") == [(255, 0, 64), (1, 2, 3)]
    np.fill((0, 0, 0))
    np.write()
    assert parts.get("rgb_led@48") == [(0, 0, 0), (0, 0, 0)]
    parts.attach("rgb_led", pin=38, n=1, bpp=4)
    w = neopixel.NeoPixel(board.Pin(38), 1, bpp=4)
    w[0] = (10, 20, 30, 40)
    w.write()
    assert parts.get("rgb_led@38") == [(10, 20, 30, 40)]


class Recorder:
    """A class of the fake machine module: remembers how it was made."""

    made = []

    def __init__(self, *args, **kw):
        self.args, self.kw = args, kw
        Recorder.made.append(self)


def test_board_side_builds_the_firmwares_objects():
    # board/esp32_io.py against a machine module that records its calls, with the real
    # micropython-lib modules on top: what the ESP32-S3 firmware would be asked to do
    class Pin(Recorder):
        OUT, OPEN_DRAIN, PULL_UP = 3, 7, 2

        def init(self, *a, **kw):
            self.inits = getattr(self, "inits", []) + [a]

    class ADC(Recorder):
        ATTN_0DB, ATTN_2_5DB, ATTN_6DB, ATTN_11DB = 0, 1, 2, 3

    class PWM(Recorder):
        pass

    class I2C(Recorder):
        pass

    class Machine:
        pass

    m = Machine()
    m.Pin, m.ADC, m.PWM, m.I2C = Pin, ADC, PWM, I2C
    m.time_pulse_us = m.bitstream = m.dht_readinto = lambda *a: None
    sys.modules["machine"] = m
    sys.modules["esp32"] = Machine()
    sys.modules["esp32"].mcu_temperature = lambda: 41
    for name in ("dht", "neopixel"):  # made again on this machine module
        sys.modules.pop(name, None)
    from mimi.board import esp32_io as io

    assert io.I2C is I2C and io.time_pulse_us is m.time_pulse_us
    a = io.ADC(4, atten=io.ADC.ATTN_6DB)
    assert type(a) is ADC and a.kw == {"atten": 2} and a.args[0].args == (4,)
    assert "atten" in str(raises(TypeError, io.ADC, 4))
    p = io.PWM(5, freq=50, duty_ns=1500000)
    assert type(p) is PWM and p.kw == {"freq": 50, "duty_ns": 1500000} and p.args[0].args == (5,)
    assert io.PWM(6, freq=1000, duty_u16=0).kw == {"freq": 1000, "duty_u16": 0}
    assert "50 %" in str(raises(TypeError, io.PWM, 7, freq=1000))
    ow = io.onewire(8)
    assert type(ow).__name__ == "OneWire" and ow.pin.inits == [(7, 2)]  # OPEN_DRAIN, PULL_UP
    assert type(io.ds18x20(8)).__name__ == "DS18X20"
    d = io.dht(9, 22)
    assert type(d).__name__ == "DHT22" and d.pin.args == (9,)
    raises(ValueError, io.dht, 9, 12)
    np = io.neopixel(48, 3, bpp=4)
    assert type(np).__name__ == "NeoPixel" and np.bpp == 4 and np.pin.args == (48,)
    assert np.timing == (400, 850, 800, 450)
    assert io.mcu_temperature() == 41
