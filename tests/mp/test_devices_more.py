# The other drivers against the simulated parts (mimi/devices/sim/, from the
# datasheets): AHT20, BME280, BH1750, DS18B20, DHT11/22, HC-SR04, the ADC types, servo,
# PWM, buzzer; conversions at the datasheets' known values; and slow parts read on the
# asyncio loop without holding it.
from support import Ticker
from mimi.config.settings import cfg
from mimi.devices.sim import parts
import mimi.devices as devices

TIMEOUT = 120


def setup():
    cfg.load()
    parts.clear()


def call(tool, **args):
    from mimi.tools.registry import registry

    return registry.call(tool, args)


def table():
    with devices.use() as t:
        return t


def value(name):
    return table().read(name)[0][1]


# --- conversions at the datasheets' own numbers (no part needed) --------------------

def test_conversions_at_known_values():
    from mimi.devices.drivers import aht20, bme280, sht3x, bh1750
    from mimi.devices.drivers.i2cpart import crc8

    assert crc8(b"\xbe\xef") == 0x92  # Sensirion's CRC example
    frame = bytes.fromhex("1C3B5E8688B2D2")  # an AHT20 frame (hardware.md §3.0)
    assert crc8(frame, 0, 6) == frame[6]
    t, rh = aht20.convert(frame)
    assert abs(t - 31.67) < 0.01 and abs(rh - 23.19) < 0.01, (t, rh)
    t, rh = sht3x.convert(bytes((0x66, 0x66, 0, 0x80, 0x00, 0)))  # S_T 26214: 25.0 °C
    assert abs(t - 25.0) < 0.01 and abs(rh - 50.0) < 0.01, (t, rh)
    # Bosch's worked example (BMP280 datasheet §3.12): adc_T 519888 -> 25.08 °C,
    # adc_P 415148 -> 100653.27 Pa, with its trimming constants
    cal = [27504, 26435, -1000, 36477, -10685, 3024, 2855, 140, -7, 15500, -14600, 6000] + [None] * 6
    t, p, h = bme280.compensate(cal, 519888, 415148)
    assert t == 25.08 and abs(p * 100 - 100653.27) < 0.05 and h is None, (t, p)
    assert bh1750.convert(b"\x01\x68") == 360 / 1.2


# --- I2C sensors ------------------------------------------------------------------

def test_aht20_reads_and_calibrates():
    parts.attach("aht20", sda=8, scl=9, temp=21.5, hum=40, calibrated=0, up_ms=100)
    out = call("device_add", name="hall", type="aht20")
    assert out == "OK: added hall (aht20 at 0x38 on SDA 8 / SCL 9): hall = 21.5 °C, humidity 40 %", out
    assert parts.get("aht20@0x38")["calibrated"]
    parts.set("aht20@0x38", temp=-12.3, hum=88.8)
    assert call("device_read", name="hall") == "hall = -12.3 °C, humidity 88.8 %"
    parts.set("aht20@0x38", fault="crc")
    assert call("device_read", name="hall").startswith("Error: hall (aht20 at 0x38 on SDA 8 / SCL 9): CRC mismatch twice")
    parts.set("aht20@0x38", fault="nack")
    assert call("device_read", name="hall").startswith(
        "Error: hall (aht20 at 0x38 on SDA 8 / SCL 9) did not answer: no acknowledge. Check the wiring")
    parts.set("aht20@0x38", fault=None)
    assert call("device_read", name="hall") == "hall = -12.3 °C, humidity 88.8 %"


def test_bme280_reads_all_three():
    parts.attach("bme280", sda=8, scl=9, addr=0x76, temp=21.5, press=1013.25, hum=40, up_ms=10)
    out = call("device_add", name="weather", type="bme280")
    assert out.startswith("OK: added weather (bme280 at 0x76 on SDA 8 / SCL 9): weather = 21.5 °C, "
                          "humidity 40 %, pressure 1013."), out
    parts.set("bme280@0x76", temp=-5.25, press=875.5, hum=71.2)
    r = table().read("weather")
    assert abs(r[0][1] - -5.25) < 0.02 and abs(r[1][1] - 71.2) < 0.1 and abs(r[2][1] - 875.5) < 0.05, r
    for fault, why in (("nack", "did not answer: no acknowledge"), ("stuck", "did not answer: the bus is stuck")):
        parts.set("bme280@0x76", fault=fault)
        assert why in call("device_read", name="weather"), fault
    parts.set("bme280@0x76", fault=None)
    r = table().read("weather")
    assert abs(r[0][1] - -5.25) < 0.02 and abs(r[2][1] - 875.5) < 0.05, r


def test_bh1750_light():
    parts.attach("bh1750", sda=8, scl=9, addr=0x23, lux=300)
    assert call("device_add", name="light", type="bh1750").endswith("light = 300 lx")
    for lux in (0, 1, 54612):
        parts.set("bh1750@0x23", lux=lux)
        assert abs(value("light") - lux) <= 1, lux
    parts.set("bh1750@0x23", fault="nack")
    assert "did not answer" in call("device_read", name="light")


# --- 1-Wire and DHT --------------------------------------------------------------

def test_ds18b20_one_line_two_sensors():
    parts.attach("ds18b20", pin=4, temp=21.0)
    parts.attach("ds18b20", pin=4, temp=-10.5)
    a = call("device_add", name="tank", type="ds18b20", pin=4)
    b = call("device_add", name="cellar", type="ds18b20", pin=4)
    assert a.startswith("OK: added tank (ds18b20 on GPIO4): tank = ") and b.startswith("OK: added cellar")
    got = sorted((a.rsplit("= ", 1)[1], b.rsplit("= ", 1)[1]))
    assert got == ["-10.5 °C", "21 °C"], got
    roms = [d.params["rom"] for d in table().listed() if d.type == "ds18b20"]
    assert len(set(roms)) == 2 and all(len(r) == 16 for r in roms), roms  # each its own, saved
    from mimi import fs, limits

    assert all(r in fs.read_text(limits.DEVICES_PATH) for r in roms)
    out = call("device_add", name="third", type="ds18b20", pin=4)
    assert out.startswith("Error: third (ds18b20 on GPIO4) did not answer: every DS18B20 on the line (2)"), out
    tank = [p for p in ("ds18b20@4", "ds18b20@4#2") if parts.get(p)["rom"] == roms[0]][0]
    parts.set(tank, temp=124.5)
    assert call("device_read", name="tank") == "tank = 124.5 °C"
    parts.set(tank, fault="crc")
    assert call("device_read", name="tank").startswith("Error: tank (ds18b20 on GPIO4): CRC mismatch")
    parts.set(tank, fault="nack")
    out = call("device_read", name="tank")
    assert out.startswith("Error: tank (ds18b20 on GPIO4) did not answer: ") and "4.7 kOhm pull-up" in out, out
    parts.set(tank, fault=None)
    assert call("device_read", name="tank") == "tank = 124.5 °C"


def test_ds18b20_nothing_on_the_line():
    out = call("device_add", name="t", type="ds18b20", pin=5)
    assert out.startswith("Error: t (ds18b20 on GPIO5) did not answer: no DS18B20 found on the line"), out


def test_dht22_dht11():
    parts.attach("dht22", pin=5, temp=-12.3, hum=55.5, up_ms=5000)
    parts.attach("dht11", pin=6, temp=23, hum=41, up_ms=5000)
    assert call("device_add", name="porch", type="dht22", pin=5).endswith("porch = -12.3 °C, humidity 55.5 %")
    assert call("device_add", name="shed", type="dht11", pin=6).endswith("shed = 23 °C, humidity 41 %")
    parts.set("dht22@5", temp=30.1)
    assert call("device_read", name="porch") == "porch = 30.1 °C, humidity 55.5 %"  # waited its 2 s
    parts.set("dht22@5", fault="timeout")
    out = call("device_read", name="porch")
    assert out.startswith("Error: porch (dht22 on GPIO5) did not answer: no reply (timed out). Check"), out
    parts.set("dht22@5", fault="crc")
    assert call("device_read", name="porch").startswith("Error: porch (dht22 on GPIO5): checksum mismatch twice")


def test_dht_right_after_power_up_is_retried():
    parts.attach("dht22", pin=5, temp=20, hum=50)  # powered just now: no answer for 1 s
    assert call("device_add", name="d", type="dht22", pin=5).endswith("d = 20 °C, humidity 50 %")


def farthest(name):
    """The longest of three readings: time_pulse_us times from its call when the echo has
    already risen (as the chip's does), and on a loaded host the scheduler can make the
    call late by more than the part's 200 µs burst (tests/mp/test_sim_analog_pwm's ping)."""
    return max(value(name) for _ in range(3))


def test_hcsr04_distance():
    parts.attach("hcsr04", trig=12, echo=13, distance=100)
    out = call("device_add", name="front", type="hcsr04", trig=12, echo=13)
    assert out.startswith("OK: added front (hcsr04 on trig GPIO12 / echo GPIO13): front = "), out
    assert abs(farthest("front") - 100) < 0.5
    parts.set("hcsr04@12", distance=250)
    assert abs(farthest("front") - 250) < 0.5
    parts.set("hcsr04@12", distance=None)
    assert call("device_read", name="front").startswith("Error: front (hcsr04 on trig GPIO12 / echo GPIO13): nothing within 310 cm")
    parts.set("hcsr04@12", fault="nack")
    assert call("device_read", name="front").startswith(
        "Error: front (hcsr04 on trig GPIO12 / echo GPIO13) did not answer: no echo pulse started")


# --- ADC ------------------------------------------------------------------------------

def test_analog_types():
    parts.attach("analog_in", pin=1, volts=1.234)
    parts.attach("analog_in", pin=7, volts=1.234)
    parts.attach("ntc", pin=2, temp=25)
    parts.attach("ldr", pin=4, lux=100)
    parts.attach("soil", pin=5, moisture=50)
    assert call("device_add", name="v", type="analog_in", pin=1).endswith("v = 1.234 V")
    assert call("device_add", name="level", type="analog_in", pin=7, unit="%", vmin=0, vmax=2.5,
                min=0, max=100).endswith("level = 49.36 %")
    assert call("device_add", name="room", type="ntc", pin=2).endswith("room = 25 °C")
    for t in (0, 50, -10):
        parts.set("ntc@2", temp=t)
        assert abs(value("room") - t) < 0.3, (t, value("room"))
    out = call("device_add", name="sun", type="ldr", pin=4, r10=15000)
    assert out.startswith("OK: added sun (ldr on GPIO4): sun = about "), out
    assert 90 < value("sun") < 110
    out = call("device_add", name="pot", type="soil", pin=5)
    assert out.endswith("pot = 50 %, probe 1.5 V"), out
    parts.set("soil@5", moisture=0)  # in air: calibrate
    assert call("device_set", name="pot", value="dry").startswith("OK: pot = 0 %")
    parts.set("soil@5", moisture=100)
    assert call("device_set", name="pot", value="dry").startswith("Error: pot reads 0.7 V, too close to its wet")
    assert call("device_set", name="pot", value=5).startswith("Error: pot is a sensor (soil): device_read it; to calibrate")
    assert call("device_set", name="v", value="dry") == "Error: v is a sensor (analog_in): device_read it"


def test_adc_rails_said():
    parts.attach("ntc", pin=2, temp=25)
    call("device_add", name="room", type="ntc", pin=2)
    parts.detach("ntc@2")  # unplugged: the pin floats to its logic level
    out = call("device_read", name="room")
    assert out.startswith("Error: room (ntc on GPIO2): ") and "open or shorted" in out, out


# --- PWM ------------------------------------------------------------------------------

def test_servo_no_blip_and_angles():
    parts.attach("servo", pin=14, min_us=500, max_us=2400)
    out = call("device_add", name="arm", type="servo", pin=14)
    assert out.endswith("arm = limp (no position set)"), out
    assert parts.get("servo@14")["angle"] is None
    assert call("device_set", name="arm", value=90) == "OK: arm = 90 °"
    st = parts.get("servo@14")
    assert st["angle"] == 90 and st["moves"] == [90], st  # the first pulse was already 90°
    assert call("device_set", name="arm", value="45 degrees") == "OK: arm = 45 °"
    for bad in (200, -5, "left"):
        assert call("device_set", name="arm", value=bad).startswith("Error: arm takes"), bad
    assert parts.get("servo@14")["moves"] == [90, 45]  # nothing sent on a refused value
    assert call("device_set", name="arm", value="off") == "OK: arm = limp (no position set)"
    assert parts.get("servo@14")["angle"] is None


def test_pwm_and_buzzer():
    parts.attach("pwm", pin=15)
    parts.attach("buzzer", pin=16)
    parts.attach("buzzer", pin=17, active=1)
    call("device_add", name="lamp", type="pwm", pin=15, freq=2000)
    assert call("device_set", name="lamp", value="40%") == "OK: lamp = 40 %"
    st = parts.get("pwm@15")
    assert st["freq"] == 2000 and abs(st["duty"] - 40) < 0.1, st
    assert call("device_set", name="lamp", value=150).startswith("Error: lamp takes 0 to 100 (%), not 150")
    assert call("device_set", name="lamp", value="off") == "OK: lamp = 0 %"
    call("device_add", name="beep", type="buzzer", pin=16)
    assert call("device_set", name="beep", value="440 100") == "OK: beep = played 440 Hz for 100 ms"
    tones = parts.get("buzzer@16")["tones"]
    assert tones[-1][0] == 440 and 90 <= tones[-1][1] <= 200, tones
    assert parts.get("buzzer@16")["tone_hz"] is None  # quiet again
    assert call("device_set", name="beep", value="440 9000").startswith("Error: beep takes 20 to 20000 Hz for 10 to 5000 ms")
    call("device_add", name="alarm", type="buzzer", pin=17, active=True)
    assert call("device_set", name="alarm", value="beep") == "OK: alarm = played 2000 Hz for 200 ms"
    assert parts.get("buzzer@17")["tones"], parts.get("buzzer@17")


# --- the loop ---------------------------------------------------------------------------

async def test_slow_parts_do_not_hold_the_loop():
    import asyncio
    import time

    parts.attach("ds18b20", pin=4, temp=21.0)
    parts.attach("dht22", pin=5, temp=20, hum=50, up_ms=5000)
    parts.attach("sht3x", sda=8, scl=9, addr=0x44)
    parts.attach("hcsr04", trig=12, echo=13, distance=300)
    for args in ({"name": "w", "type": "ds18b20", "pin": 4}, {"name": "d", "type": "dht22", "pin": 5},
                 {"name": "s", "type": "sht3x"}, {"name": "h", "type": "hcsr04", "trig": 12, "echo": 13}):
        assert call("device_add", **args).startswith("OK"), args
    await asyncio.sleep_ms(2100)  # the DHT's rest since it was added
    t = table()
    for name, least_ms in (("w", 750), ("d", 250), ("s", 15), ("h", 17)):
        tick = Ticker()
        await asyncio.sleep_ms(30)
        n0, t0 = tick.count, time.ticks_ms()
        r = await t.aread(name)
        took = time.ticks_diff(time.ticks_ms(), t0)
        n = tick.count - n0
        tick.stop()
        assert r and took >= least_ms, (name, took)
        assert n >= took // 10 - 3, (name, took, n)  # the 10 ms ticker kept going


# --- HC-SR04: a thread switched out between the trigger and time_pulse_us ----------------

def _late(*script):
    """board.time_pulse_us standing in for a thread switched out after the trigger: its
    calls take script's (µs slept first, answer) in turn, answer None: the part's own
    answer, after the sleep -> the calls made, as the echo's level at each."""
    from mimi import board

    real = board.time_pulse_us
    script = list(script)
    calls = []

    def pulse(pin, level, timeout):
        import time

        calls.append(pin.value())
        wait, answer = script.pop(0) if script else (0, None)
        time.sleep_us(wait)
        return real(pin, level, timeout) if answer is None else answer

    board.time_pulse_us = pulse
    return calls


def test_hcsr04_a_reading_cut_short_is_taken_again():
    # back 5 ms after the trigger, time_pulse_us caught the end of a 100 cm echo (1 ms of
    # its 5.8): 17 cm was said. A reading that came back that long after the trigger
    # beyond its width is taken again after the part's rest, and the longer one kept.
    parts.attach("hcsr04", trig=12, echo=13, distance=100)
    call("device_add", name="front", type="hcsr04", trig=12, echo=13)
    calls = _late((5000, 1000), (0, 5800))
    assert value("front") == 100.0
    assert len(calls) == 2
    parts.set("hcsr04@12", fault="nack")  # (its echo silent: the script is all there is)
    calls = _late((0, 5800))  # a reading on time: one ping
    assert value("front") == 100.0 and len(calls) == 1


def test_hcsr04_an_echo_over_before_the_call_is_taken_again():
    # back 7 ms after the trigger, the 100 cm echo (5.8 ms from 0.2 ms) was over:
    # time_pulse_us found no pulse, said as "no echo pulse started"; a part that truly
    # sends none still says so (two pings)
    parts.attach("hcsr04", trig=12, echo=13, distance=100)
    call("device_add", name="front", type="hcsr04", trig=12, echo=13)
    calls = _late((7000, None), (0, 5800))
    assert value("front") == 100.0 and len(calls) == 2
    parts.set("hcsr04@12", fault="nack")
    calls = _late()
    assert call("device_read", name="front").startswith(
        "Error: front (hcsr04 on trig GPIO12 / echo GPIO13) did not answer: no echo pulse started")
    assert len(calls) == 2


def test_hcsr04_a_busy_part_is_waited_for_before_the_trigger():
    # the echo still high from a ping before (nothing in range: 38 ms): a trigger then is
    # ignored by the part, and time_pulse_us timed the rest of that echo. The driver waits
    # the part's rest first, so its trigger is the one measured.
    import time

    parts.attach("hcsr04", trig=12, echo=13, distance=100)
    call("device_add", name="front", type="hcsr04", trig=12, echo=13)
    parts.set("hcsr04@12", distance=None)
    time.sleep_ms(60)  # (the part's rest after device_add's reading)
    from mimi import board

    trig = board.Pin(12, board.Pin.OUT, value=0)
    trig.value(1)
    time.sleep_us(10)
    trig.value(0)  # a ping of its own: the part is busy for 38 ms
    time.sleep_ms(1)  # (its echo high from 0.2 ms)
    parts.set("hcsr04@12", distance=100)  # (for the driver's pings: the echo in flight stays)
    pings = parts.get("hcsr04@12")["pings"]
    calls = _late((0, 5800))
    assert abs(value("front") - 100) < 0.5
    assert parts.get("hcsr04@12")["pings"] == pings + len(calls), (pings, calls)  # each trigger taken
