# The drivers against the simulated parts (mimi/devices/sim/, written from the
# datasheets): good readings, conversions at known values, CRC errors, no answer, a
# stuck bus, values out of range, through the tools the model calls.
from mimi import log
from mimi.config.settings import cfg
from mimi.devices.sim import parts
import mimi.devices as devices



def table():
    """The device table (tests: a big heap, so its code stays loaded after the block)."""
    with devices.use() as t:
        return t

def setup():
    cfg.load()
    parts.clear()


def call(tool, **args):
    from mimi.tools.registry import registry

    return registry.call(tool, args)


# --- SHT3x ------------------------------------------------------------------------

def test_sht3x_reads_like_the_spec():
    parts.attach("sht3x", sda=8, scl=9, addr=0x44, temp=21.5, hum=40)
    out = call("device_add", name="living_temp", type="sht3x", sda=8, scl=9, addr=0x44)
    assert out == ("OK: added living_temp (sht3x at 0x44 on SDA 8 / SCL 9): "
                   "living_temp = 21.5 °C, humidity 40 %"), out
    assert call("device_read", name="living_temp") == "living_temp = 21.5 °C, humidity 40 %"
    for temp, hum, want in ((-10.2, 99.5, "-10.2 °C, humidity 99.5 %"), (0, 0, "0 °C, humidity 0 %"),
                            (124.9, 100, "124.9 °C, humidity 100 %"), (-39.9, 12.3, "-39.9 °C, humidity 12.3 %")):
        parts.set("sht3x@0x44", temp=temp, hum=hum)
        out = call("device_read", name="living_temp")
        assert out == "living_temp = " + want, (temp, hum, out)
    t = table()
    r = t.read("living_temp")
    assert abs(r[0][1] - -39.9) < 0.01 and abs(r[1][1] - 12.3) < 0.01, r


def test_sht3x_defaults_and_second_address():
    parts.attach("sht3x", sda=8, scl=9, addr=0x44, temp=20)
    parts.attach("sht3x", sda=8, scl=9, addr=0x45, temp=30)
    assert call("device_add", name="a", type="sht3x").startswith("OK: added a (sht3x at 0x44 on SDA 8 / SCL 9): a = 20 °C")
    assert call("device_add", name="b", type="sht3x", addr="0x45").startswith(
        "OK: added b (sht3x at 0x45 on SDA 8 / SCL 9): b = 30 °C")
    assert call("device_add", name="c", type="sht3x", addr=0x45).startswith(
        "Error: 0x45 on SDA 8 / SCL 9 is already b (sht3x)")


def test_sht3x_crc_retried_once_then_said():
    parts.attach("sht3x", sda=8, scl=9, addr=0x44, temp=21.5, hum=40)
    call("device_add", name="t", type="sht3x")
    from mimi.devices import state

    before = state.last["t"]
    parts.set("sht3x@0x44", fault="crc")
    out = call("device_read", name="t")
    assert out.startswith("Error: t (sht3x at 0x44 on SDA 8 / SCL 9): CRC mismatch twice"), out
    assert state.last["t"] is before  # a bad reading is never kept
    parts.set("sht3x@0x44", fault=None)
    assert call("device_read", name="t") == "t = 21.5 °C, humidity 40 %"


def test_sht3x_no_answer_and_stuck_bus():
    parts.attach("sht3x", sda=8, scl=9, addr=0x44)
    call("device_add", name="living_temp", type="sht3x")
    parts.set("sht3x@0x44", fault="nack")
    out = call("device_read", name="living_temp")
    assert out == ("Error: living_temp (sht3x at 0x44 on SDA 8 / SCL 9) did not answer: no acknowledge. "
                   "Check the wiring (SDA to SDA, SCL to SCL), the address, the pull-ups (4.7 kOhm to 3V3) "
                   "and the power (3.3 V)"), out
    parts.set("sht3x@0x44", fault="stuck")
    out = call("device_read", name="living_temp")
    assert out.startswith("Error: living_temp (sht3x at 0x44 on SDA 8 / SCL 9) did not answer: "
                          "the bus is stuck (SDA or SCL held low)"), out
    parts.set("sht3x@0x44", fault=None)
    assert call("device_read", name="living_temp").startswith("living_temp = 21.5 °C")


def test_part_that_does_not_answer_is_not_added():
    out = call("device_add", name="t", type="sht3x", sda=8, scl=9)
    assert out.startswith("Error: t (sht3x at 0x44 on SDA 8 / SCL 9) did not answer: no acknowledge"), out
    assert out.endswith("; nothing was added"), out
    parts.attach("sht3x", sda=8, scl=9, addr=0x44)
    out = call("device_add", name="t", type="sht3x", sda=9, scl=8)  # swapped
    assert "did not answer" in out and "nothing was added" in out, out
    assert not devices.attached()
    assert call("device_add", name="t", type="sht3x").startswith("OK")


def test_i2c_scan_and_raw_io():
    parts.attach("sht3x", sda=8, scl=9, addr=0x44)
    parts.attach("sht3x", sda=8, scl=9, addr=0x45)
    out = call("i2c_scan")
    assert out.startswith("I2C on SDA 8 / SCL 9, 2 answering: 0x44 SHT3x/SHT4x temperature and humidity (sht3x); "
                          "0x45 SHT3x temperature and humidity (sht3x)."), out
    assert "i2c_io" in out and devices.scanned
    call("device_add", name="t", type="sht3x")
    assert "0x44 SHT3x/SHT4x temperature and humidity (sht3x): device t" in call("i2c_scan", sda=8, scl=9)
    # raw: the status register of the second SHT3x (0xF32D: 2 bytes + CRC)
    out = call("i2c_io", addr=0x45, write="f3 2d", read=3)
    assert out.startswith("OK: 0x45 on SDA 8 / SCL 9: wrote 2 bytes, read "), out
    got = bytes.fromhex(out.rsplit("read ", 1)[1].replace(" ", ""))
    from mimi.devices.drivers.i2cpart import crc8

    assert len(got) == 3 and crc8(got) == got[2], out
    assert call("i2c_io", addr=0x44, read=2).startswith(
        "Error: 0x44 on SDA 8 / SCL 9 is t (sht3x): its driver owns it")
    assert call("i2c_io", addr=0x50, read=2).startswith(
        "Error: 0x50 on SDA 8 / SCL 9 did not answer: no acknowledge")
    assert call("i2c_io", addr=0x45, write="zz").startswith("Error: 'write' must be 1 to 32 bytes in hex")
    assert call("i2c_io", addr=0x45, read=33).startswith("Error: 'read' must be a count of bytes, 1 to 32")
    assert call("i2c_io", addr=0x45).startswith("Error: give 'write'")
    assert call("i2c_io", addr=0x100, read=1).startswith("Error: 'addr' must be an I2C address")
    assert call("i2c_scan", sda=10, scl=11) .startswith("No I2C part answered on SDA 10 / SCL 11")


def test_two_buses_at_most():
    parts.attach("sht3x", sda=8, scl=9, addr=0x44)
    parts.attach("sht3x", sda=10, scl=11, addr=0x44)
    parts.attach("sht3x", sda=12, scl=13, addr=0x44)
    assert call("device_add", name="a", type="sht3x").startswith("OK")
    assert call("device_add", name="b", type="sht3x", sda=10, scl=11).startswith("OK")
    out = call("device_add", name="c", type="sht3x", sda=12, scl=13)
    assert out.startswith("Error: the ESP32-S3 has two I2C controllers, both in use"), out
    out = call("i2c_scan", sda=12, scl=13)
    assert out.startswith("Error: both I2C controllers are in use"), out
    call("device_remove", name="b")  # its controller is free again
    assert call("device_add", name="c", type="sht3x", sda=12, scl=13).startswith("OK")


# --- pins ---------------------------------------------------------------------------

def test_button_pressed_released_and_counted():
    parts.attach("button", pin=4)
    out = call("device_add", name="doorbell", type="button", pin=4)
    assert out == "OK: added doorbell (button on GPIO4): doorbell = released", out
    parts.set("button@4", pressed=1)
    out = call("device_read", name="doorbell")
    assert out == "doorbell = pressed, pressed 1 time since the last reading", out
    parts.set("button@4", pressed=0)
    import time

    for _ in range(3):
        time.sleep_ms(60)  # the driver's debounce: an edge within 50 ms of the last is a bounce
        parts.set("button@4", pressed=1)
        parts.set("button@4", pressed=0)
    assert call("device_read", name="doorbell") == "doorbell = released, pressed 3 times since the last reading"
    assert call("device_read", name="doorbell") == "doorbell = released"


def test_button_bounces_count_once():
    import time

    parts.attach("button", pin=4, bounce=5)
    call("device_add", name="b", type="button", pin=4)
    time.sleep_ms(60)
    parts.set("button@4", pressed=1)
    parts.set("button@4", pressed=0)
    assert call("device_read", name="b") == "b = released, pressed 1 time since the last reading"


def test_button_wired_to_vcc():
    parts.attach("button", pin=5, wiring="vcc", pull="down")
    assert call("device_add", name="b", type="button", pin=5, pull="down").endswith("b = released")
    parts.set("button@5", pressed=1)
    assert call("device_read", name="b").startswith("b = pressed")


def test_relay_module_active_low():
    parts.attach("relay", pin=21, active_low=1)
    out = call("device_add", name="pump", type="relay", pin=21, inverted=True)
    assert out == "OK: added pump (relay on GPIO21): pump = off", out
    assert parts.get("relay@21")["on"] is False or parts.get("relay@21")["on"] == 0
    assert call("device_set", name="pump", value="on") == "OK: pump = on"
    assert parts.get("relay@21")["on"]
    assert call("device_set", name="pump", value="off") == "OK: pump = off"
    assert not parts.get("relay@21")["on"]


def test_rgb_led_colours_and_brightness():
    parts.attach("rgb_led", pin=48, n=1)
    assert call("device_add", name="led", type="rgb_led", pin=48).endswith("led = off")
    assert parts.get("rgb_led@48") == [(0, 0, 0)]
    assert call("device_set", name="led", value="red") == "OK: led = red (#ff0000) at 50 %"
    assert parts.get("rgb_led@48") == [(128, 0, 0)]
    assert call("device_set", name="led", value="#00FF80 20%") == "OK: led = #00ff80 at 20 %"
    assert parts.get("rgb_led@48") == [(0, 51, 26)]
    out = call("device_set", name="led", value="blue 90%")
    assert out == "OK: led = blue (#0000ff) at 50 %, (brightness capped at 50 %, the device's max)", out
    assert parts.get("rgb_led@48") == [(0, 0, 128)]
    assert call("device_set", name="led", value="off") == "OK: led = off"
    assert parts.get("rgb_led@48") == [(0, 0, 0)]
    assert call("device_set", name="led", value="on") == "OK: led = blue (#0000ff) at 50 %"
    for bad, why in (("chartreuse", "unknown colour 'chartreuse'"), ("red 120%", "brightness is 0 to 100 %"),
                     ("#12345", "unknown colour"), ("red x%", "brightness is a percentage")):
        out = call("device_set", name="led", value=bad)
        assert out.startswith("Error: led: " + why), (bad, out)
    assert parts.get("rgb_led@48") == [(0, 0, 128)]  # nothing written on error


def test_rgb_strip_full_brightness_cap():
    parts.attach("rgb_led", pin=40, n=8)
    call("device_add", name="strip", type="rgb_led", pin=40, n=8, max=100)
    assert call("device_set", name="strip", value="warm white") == "OK: strip = warm white (#ffb060) at 100 %"
    assert parts.get("rgb_led@40") == [(255, 176, 96)] * 8


def test_digital_out_load_and_read_back():
    parts.attach("digital_out", pin=6)
    call("device_add", name="lamp", type="digital_out", pin=6)
    assert call("device_set", name="lamp", value=True) == "OK: lamp = on"
    assert parts.get("digital_out@6")["on"]
    assert call("device_read", name="lamp") == "lamp = on"


def test_output_that_does_not_follow_is_reported():
    # a pin the firmware drives HIGH that reads LOW (shorted to GND): never called done
    call("device_add", name="lamp", type="digital_out", pin=7)
    dev = table().find("lamp")
    pin = dev.drv.pin

    class Shorted:
        def value(self, v=None):
            return pin.value(v) if v is not None else 0

    dev.drv.pin = Shorted()
    out = call("device_set", name="lamp", value="on")
    assert out.startswith("Error: lamp (digital_out on GPIO7) did not answer: GPIO7 was set HIGH but reads LOW"), out


def test_chip_temp_always_there():
    parts.set("chip_temp", temp=45)
    assert call("device_read", name="chip_temp") == "chip_temp = 45 °C"
    assert "chip_temp (chip_temp inside the chip): 45 °C" in call("device_list")
    assert not devices.attached()
    assert "E " not in "\n".join(log.recent(10))


def test_short_heap_code_goes_state_stays():
    # a board without PSRAM: after each use the device code is dropped (as the tools'
    # modules are); readings, actuator states and button presses survive it
    import sys
    import time
    import mimi
    from mimi.agent import context
    from mimi.devices import state

    def loaded():  # (a button's interrupt handler, devices/button.py, stays with its count)
        return sorted(m for m in sys.modules if m.startswith("mimi.devices.") and
                      not m.startswith(("mimi.devices.sim", "mimi.devices.state", "mimi.devices.button")))

    parts.attach("sht3x", sda=8, scl=9, addr=0x44, temp=22.5, hum=50)
    parts.attach("relay", pin=21)
    parts.attach("button", pin=4)
    parts.attach("rgb_led", pin=48)
    was = mimi.short
    mimi.short = lambda measure=False: True
    try:
        for args in ({"name": "t", "type": "sht3x"}, {"name": "fan", "type": "relay", "pin": 21},
                     {"name": "bell", "type": "button", "pin": 4}, {"name": "led", "type": "rgb_led", "pin": 48},
                     {"name": "dim", "type": "pwm", "pin": 5}):
            assert call("device_add", **args).startswith("OK"), args
            assert loaded() == [], loaded()
        assert call("device_set", name="fan", value="on") == "OK: fan = on"
        assert call("device_set", name="led", value="green 20%") == "OK: led = green (#00ff00) at 20 %"
        assert call("device_set", name="dim", value=30) == "OK: dim = 30 %"
        assert loaded() == []
        assert parts.get("relay@21")["on"] and parts.get("rgb_led@48") == [(0, 51, 0)]
        time.sleep_ms(60)
        parts.set("button@4", pressed=1)
        parts.set("button@4", pressed=0)  # counted while no driver code is loaded
        p = context.build_system_prompt("websocket", "x")
        assert loaded() == []  # the prompt's part came from the kept state
        assert "- fan (relay on GPIO21): on\n" in p and "- t (sht3x at 0x44 on SDA 8 / SCL 9): 22.5 °C" in p, p
        assert call("device_read", name="bell") == "bell = released, pressed 1 time since the last reading"
        # reloaded drivers take up the state they left: nothing switches
        assert call("device_read", name="fan") == "fan = on" and parts.get("relay@21")["on"]
        assert call("device_set", name="led", value="on") == "OK: led = green (#00ff00) at 50 %"
        assert call("device_read", name="dim") == "dim = 30 %"
        assert abs(board_pwm(5) - 30 * 65535 / 100) < 16, parts.get("pin5")  # (the LEDC's steps)
        assert call("device_read", name="t") == "t = 22.5 °C, humidity 50 %"
        assert loaded() == [] and state.users == 0 and "mimi.devices.button" in sys.modules
    finally:
        mimi.short = was


def board_pwm(pin):
    from mimi.devices.sim import parts as p

    return p.get("pin%d" % pin).get("duty_u16")


def test_repl_commands():
    from support import Capture
    from mimi import repl, fs, limits

    parts.attach("sht3x", sda=8, scl=9, addr=0x44, temp=19, hum=60)
    parts.attach("relay", pin=21, active_low=1)
    with Capture() as out:
        repl.device_add("living_temp", "sht3x", sda=8, scl=9)
        repl.device_add("fan", "relay", pin=21, inverted=True)
        repl.device_set("fan", "on")
        repl.device_read("living_temp")
        repl.devices()
        repl.device_add("boot", "relay", pin=0)
        repl.device_remove("fan")
        repl.help()
    text = out.text
    assert "OK: added living_temp (sht3x at 0x44 on SDA 8 / SCL 9): living_temp = 19 °C, humidity 60 %" in text
    assert "OK: fan = on" in text and "living_temp = 19 °C, humidity 60 %\n" in text
    assert "fan (relay on GPIO21): on\n" in text and "chip_temp (chip_temp inside the chip): 37 °C (now)" in text
    assert "Error: GPIO0 is refused: strapping pin" in text
    assert "OK: removed fan (relay on GPIO21) (left off)" in text and not parts.get("relay@21")["on"]
    assert "device_add(name, type, **params)" in text
    # a device file gone bad: the REPL says what happened
    fs.write_atomic(limits.DEVICES_PATH, "{oops")
    import sys
    import mimi

    for m in [m for m in sys.modules if m.startswith("mimi.devices.") and not m.startswith("mimi.devices.sim")]:
        mimi.unload(m)
    devices._file = devices.rows = None
    with Capture() as out:
        repl.devices()
    assert "Note: /devices.json was corrupt" in out.text and "moved to /devices.bad.json" in out.text, out.text
