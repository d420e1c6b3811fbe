# The device table without simulated parts: names, types and parameters, the pin
# policy, one pin one device, persistence, a corrupt file, the tools offered.
import sys
from mimi import board, fs, limits, log
from mimi.config.settings import cfg
import mimi.devices as devices



def table():
    """The device table (tests: a big heap, so its code stays loaded after the block)."""
    with devices.use() as t:
        return t

def setup():
    cfg.load()
    board.SIM_PINS.clear()


def fresh(load=True):
    """The table as a new boot finds it: modules and state dropped (and loaded again)."""
    import mimi

    for m in [m for m in sys.modules if m.startswith("mimi.devices.") and not m.startswith("mimi.devices.sim")]:
        mimi.unload(m)
    devices._file = devices.rows = None
    devices.problem = None
    devices.scanned = False
    return table() if load else None


def call(tool, **args):
    from mimi.tools.registry import registry

    return registry.call(tool, args)


def test_relay_added_saved_and_driven():
    assert not devices.attached()
    out = call("device_add", name="lamp", type="relay", pin=21)
    assert out.startswith("OK: added lamp (relay on GPIO21): lamp = off"), out
    assert board.SIM_PINS[21]["mode"] == board.Pin.OUT and board.SIM_PINS[21]["level"] == 0
    assert devices.attached()
    assert call("device_set", name="lamp", value="on") == "OK: lamp = on"
    assert board.SIM_PINS[21]["level"] == 1
    assert call("device_read", name="lamp") == "lamp = on"
    import json

    saved = json.loads(fs.read_text(limits.DEVICES_PATH))
    assert saved == {"devices": [{"name": "lamp", "type": "relay", "pin": 21, "inverted": False}]}, saved
    t = fresh()
    assert [d.name for d in t.listed()] == ["lamp", "chip_temp"]


def test_inverted_relay_is_off_high_and_read_back():
    out = call("device_add", name="pump", type="relay", pin=5, inverted=True)
    assert out == "OK: added pump (relay on GPIO5): pump = off", out
    assert board.SIM_PINS[5]["level"] == 1  # active-low: off is HIGH
    assert call("device_set", name="pump", value=1) == "OK: pump = on"
    assert board.SIM_PINS[5]["level"] == 0
    for bad in ("maybe", 5, "2"):
        assert call("device_set", name="pump", value=bad).startswith("Error: pump takes on or off"), bad
    assert board.SIM_PINS[5]["level"] == 0  # nothing changed on a refused value


def test_unknown_type_lists_the_types():
    out = call("device_add", name="x", type="sht31", sda=8, scl=9)
    assert out.startswith("Error: unknown type 'sht31'. Types: sensors digital_in, button,"), out
    for t in ("sht3x", "aht20", "bme280", "bh1750", "ds18b20", "dht22", "hcsr04", "relay",
              "servo", "rgb_led", "buzzer"):
        assert t in out, t
    assert call("device_add", name="x", type="chip_temp").startswith("Error: chip_temp is always there")
    assert not fs.exists(limits.DEVICES_PATH)


def test_refused_pins_say_which_and_why():
    cases = {0: "GPIO0 is refused: strapping pin", 3: "GPIO3 is refused: strapping pin",
             19: "GPIO19 is refused: reserved for the USB", 20: "GPIO20 is refused",
             26: "GPIO26 is refused: SPI flash", 35: "GPIO35 is refused: octal PSRAM",
             43: "GPIO43 is refused: UART0", 45: "GPIO45 is refused", 46: "GPIO46 is refused",
             23: "GPIO23 does not exist", 99: "GPIO99 does not exist"}
    for pin, why in cases.items():
        for typ in ("relay", "button", "pwm", "servo", "rgb_led", "buzzer", "dht22", "ds18b20"):
            out = call("device_add", name="x", type=typ, pin=pin)
            assert out.startswith("Error: " + why), (typ, out)
        out = call("device_add", name="x", type="sht3x", sda=pin, scl=9)
        assert out.startswith("Error: " + why), out
        out = call("device_add", name="x", type="hcsr04", trig=12, echo=pin)
        assert out.startswith("Error: " + why), out
        assert call("i2c_scan", sda=8, scl=pin).startswith("Error: " + why)
    cfg.set("gpio_allow", "4-10")
    out = call("device_add", name="x", type="relay", pin=21)
    assert out == "Error: GPIO21 is not in gpio_allow (the pins the owner allows)", out
    assert call("i2c_io", addr=0x44, read=2, sda=8, scl=21).startswith("Error: GPIO21 is not in gpio_allow")
    assert not fs.exists(limits.DEVICES_PATH) and not board.SIM_PINS


def test_adc_types_take_adc1_pins_only():
    for typ in ("analog_in", "ntc", "ldr", "soil"):
        out = call("device_add", name="a", type=typ, pin=12)
        assert out.startswith("Error: GPIO12 is on ADC2, which reads nothing while WiFi is on"), out
        assert "GPIO1-10" in out
        assert call("device_add", name="a", type=typ, pin=40).startswith("Error: GPIO40 has no ADC")


def test_one_pin_one_device():
    assert call("device_add", name="lamp", type="relay", pin=21).startswith("OK")
    out = call("device_add", name="fan", type="pwm", pin=21)
    assert out == "Error: GPIO21 is already used by lamp (relay on GPIO21)", out
    out = call("device_add", name="lamp", type="relay", pin=4)
    assert out.startswith("Error: there is already a device named 'lamp'"), out
    assert call("device_add", name="x", type="hcsr04", trig=12, echo=12).startswith(
        "Error: hcsr04 needs different pins for trig and echo")
    assert call("device_add", name="x", type="sht3x", sda=21, scl=9).startswith(
        "Error: GPIO21 is already used by lamp")
    assert call("i2c_scan", sda=21, scl=9).startswith("Error: GPIO21 is used by lamp")


def test_names_parameters_and_ranges_checked():
    for bad in ("", "Lamp", "a-b", "x" * 25, "lamp!", "chip_temp"):
        assert call("device_add", name=bad, type="relay", pin=4).startswith(
            "Error: there is already" if bad == "chip_temp" else "Error: a device name is"), bad
    assert call("device_add", name=5, type="relay", pin=4).startswith("Error: a device name is 1-24 characters")
    assert call("device_add", name="x", type="relay").startswith("Error: relay needs 'pin'")
    assert call("device_add", name="x", type="relay", pin=4, colour=1) == \
        "Error: relay takes pin, inverted, log_min; not 'colour'"
    assert call("device_add", name="x", type="relay", pin=4.5).startswith("Error: relay: 'pin' must be a GPIO")
    assert call("device_add", name="x", type="relay", pin=True).startswith("Error: relay: 'pin' must be a GPIO")
    assert call("device_add", name="x", type="relay", pin=4, inverted="maybe").startswith(
        "Error: relay: 'inverted' must be true or false")
    assert call("device_add", name="x", type="pwm", pin=4, freq=0).startswith(
        "Error: pwm: 'freq' must be between 1 and 40000")
    assert call("device_add", name="x", type="rgb_led", pin=4, n=1000).startswith(
        "Error: rgb_led: 'n' must be between 1 and 150")
    assert call("device_add", name="x", type="sht3x", addr=0x40).startswith(
        "Error: sht3x: 'addr' must be 0x44 or 0x45")
    assert call("device_add", name="x", type="servo", pin=4, max_us=9000).startswith(
        "Error: servo: 'max_us' must be between")
    assert not fs.exists(limits.DEVICES_PATH)
    # strings a person types are understood
    assert call("device_add", name="x", type="Relay", pin="GPIO4", inverted="yes").startswith(
        "OK: added x (relay on GPIO4)")


def test_at_most_16_devices():
    for i in range(limits.DEVICES_MAX):
        pin = (1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17)[i]
        assert call("device_add", name="r%d" % i, type="relay", pin=pin).startswith("OK"), i
    out = call("device_add", name="more", type="relay", pin=18)
    assert out == "Error: at most 16 devices; remove one first", out
    assert call("device_remove", name="r0").startswith("OK: removed r0")
    assert call("device_add", name="more", type="relay", pin=18).startswith("OK")


def test_remove_and_builtins():
    call("device_add", name="lamp", type="relay", pin=21)
    call("device_set", name="lamp", value="on")
    assert call("device_remove", name="lamp") == "OK: removed lamp (relay on GPIO21) (left off)"
    assert board.SIM_PINS[21]["level"] == 0
    assert not fs.exists(limits.DEVICES_PATH) and not devices.attached()  # none left: no file
    assert call("device_remove", name="lamp").startswith("Error: no device named 'lamp'")
    assert call("device_remove", name="chip_temp").startswith("Error: chip_temp is part of the board")
    assert call("device_read", name="nothing").startswith("Error: no device named 'nothing' (devices: chip_temp)")
    assert call("device_read").startswith("Error: 'name' required")


def test_a_sensor_is_not_set():
    call("device_add", name="door", type="digital_in", pin=6, pull="up")
    assert call("device_read", name="door") == "door = HIGH"
    board.sim_drive(6, 0)
    assert call("device_read", name="door") == "door = LOW"
    assert call("device_set", name="door", value="on") == \
        "Error: door is a sensor (digital_in): device_read it"


def test_corrupt_file_moved_aside():
    for bad in ("{not json", '{"devices": 5}', '[1, 2]', '{"devices": [1]}', "x" * (limits.DEVICES_FILE_MAX + 1)):
        fs.write_atomic(limits.DEVICES_PATH, bad)
        t = fresh()
        assert [d.name for d in t.listed()] == ["chip_temp"]
        assert not fs.exists(limits.DEVICES_PATH) and fs.exists(limits.DEVICES_BAD)
        assert "/devices.json was corrupt" in devices.problem and "moved to /devices.bad.json" in devices.problem
        assert "Note: /devices.json was corrupt" in call("device_list")
    from mimi import log

    assert "W devices: /devices.json was corrupt" in "\n".join(log.recent(20))
    # the firmware goes on: a device can be added again
    assert call("device_add", name="lamp", type="relay", pin=21).startswith("OK")


def test_bad_entry_kept_unusable():
    import json

    fs.write_atomic(limits.DEVICES_PATH, json.dumps({"devices": [
        {"name": "boot", "type": "relay", "pin": 0},  # a hand-edited refused pin
        {"name": "lamp", "type": "relay", "pin": 21},
        {"name": "weird", "type": "flux", "pin": 4}]}))
    t = fresh()
    assert [d.name for d in t.listed()] == ["boot", "lamp", "weird", "chip_temp"]
    assert call("device_set", name="boot", value="on").startswith(
        "Error: boot is unusable: GPIO0 is refused: strapping pin")
    assert 0 not in board.SIM_PINS  # no back door
    lst = call("device_list")
    assert "boot (relay): unusable: GPIO0 is refused" in lst and "weird (flux): unusable: unknown type" in lst
    call("device_remove", name="lamp")  # the others are saved back as they were
    assert [e["name"] for e in json.loads(fs.read_text(limits.DEVICES_PATH))["devices"]] == ["boot", "weird"]
    call("device_remove", name="boot")
    call("device_remove", name="weird")
    assert not fs.exists(limits.DEVICES_PATH)


def test_outputs_off_at_boot():
    import json
    from mimi import app

    fs.write_atomic(limits.DEVICES_PATH, json.dumps({"devices": [
        {"name": "pump", "type": "relay", "pin": 5, "inverted": True},
        {"name": "lamp", "type": "digital_out", "pin": 6},
        {"name": "fan", "type": "pwm", "pin": 7},
        {"name": "bad", "type": "relay", "pin": 45, "inverted": True},
        {"name": "door", "type": "button", "pin": 4},
        {"name": "twin", "type": "relay", "pin": 5},  # a hand-edited second use of GPIO5
        {"name": "s", "type": "servo", "pin": 8},
        {"name": "b", "type": "buzzer", "pin": 9}]}))
    cfg.set("gpio_allow", "1,2,4-10,21")
    board.SIM_PINS.clear()
    fresh(False)
    app.devices_off()
    assert board.SIM_PINS[5]["mode"] == board.Pin.OUT and board.SIM_PINS[5]["level"] == 1
    assert board.SIM_PINS[6]["mode"] == board.Pin.OUT and board.SIM_PINS[6]["level"] == 0
    assert board.SIM_PINS[7]["mode"] == board.Pin.OUT and board.SIM_PINS[7]["level"] == 0
    assert 45 not in board.SIM_PINS and 4 not in board.SIM_PINS
    assert board.SIM_PINS[8]["level"] == 0 and board.SIM_PINS[9]["level"] == 0
    # the code all dropped, devices/state.py too (it loads with the first use of a device);
    # what the table found kept in the package, with the two it refuses
    assert [m for m in sys.modules if m.startswith("mimi.devices.")] == []
    import json

    assert [r[0] for r in json.loads(devices.rows) if r[10]] == ["bad", "twin"]  # (err)
    assert "W devices: twin is unusable: GPIO5 is already used by pump" in "\n".join(log.recent(10))


def test_corrupt_file_moved_aside_at_boot():
    from mimi import app

    fs.write_atomic(limits.DEVICES_PATH, '{"devices": [{"name": "x", "type": "relay", "pin": 5}')
    fresh(False)
    app.devices_off()
    assert not fs.exists(limits.DEVICES_PATH) and fs.exists(limits.DEVICES_BAD)
    assert devices.problem.startswith("/devices.json was corrupt")
    assert 5 not in board.SIM_PINS
    assert "Note: /devices.json was corrupt" in call("device_list")


def test_tools_offered():
    from mimi.tools.registry import registry

    def names():
        return [n for n in (str(s[0], "utf-8") for s in registry.specs()) if n.startswith(("device", "i2c"))]

    assert names() == ["device_list", "device_add", "i2c_scan"]
    k = registry.key()
    call("device_add", name="lamp", type="relay", pin=21)
    assert registry.key() != k
    assert names() == ["device_list", "device_add", "i2c_scan", "device_read", "device_set", "device_remove",
                       "device_history"]
    devices.scanned = True
    assert names()[-2] == "i2c_io"
    call("device_remove", name="lamp")
    assert names() == ["device_list", "device_add", "i2c_scan", "i2c_io"]
    devices.scanned = False
    cfg.set("board", "devkitc1")
    assert "device_read" in names()
    assert "led (rgb_led on GPIO48)" in call("device_list")


def test_atoms3_lite_led_on_gpio35():
    # GPIO35 is refused on every board for octal PSRAM (N8R8/N16R8 modules), but the
    # AtomS3 Lite's ESP32-S3FN8 has no PSRAM and its WS2812 is on 35: the board setting
    # had no AtomS3 Lite, and no way to name its LED
    from mimi.devices.sim import parts

    parts.clear()
    parts.attach("rgb_led", pin=35, n=1)
    cfg.set("board", "atoms3_lite")
    assert "led (rgb_led on GPIO35): off (as at boot)" in call("device_list")
    assert call("device_set", name="led", value="green 20 %") == "OK: led = green (#00ff00) at 20 %"
    assert parts.get("rgb_led@35") == [(0, 51, 0)]
    # the board's own part only: 35 stays refused for anything else, and so do 33-37
    for pin in (35, 33, 37):
        out = call("device_add", name="r", type="relay", pin=pin)
        assert out == "Error: GPIO%d is refused: octal PSRAM bus (N16R8/N8R8 modules)" % pin, out
    assert call("i2c_scan", sda=35, scl=9).startswith("Error: GPIO35 is refused")
    assert call("gpio_write", pin=35, state=1).startswith("Error: pin 35 is not in allowed list")
    cfg.set("board", "devkitc1")  # another board: 35 is no LED's
    assert "GPIO35" not in call("device_list")


def test_hand_edited_file_taken_by_devices():
    # /devices.json edited by hand (or copied with mpremote) was seen only after a
    # restart: the tools went on with the table as it was. devices() reads it again: a
    # device gone or changed lets go of its pins (left off), a new actuator is off at
    # once, the unchanged ones keep their state
    import json
    from support import Capture
    from mimi import repl

    call("device_add", name="fan", type="relay", pin=21)
    call("device_add", name="lamp", type="relay", pin=6)
    call("device_add", name="heat", type="relay", pin=7)
    for name in ("fan", "lamp", "heat"):
        call("device_set", name=name, value="on")
    data = json.loads(fs.read_text(limits.DEVICES_PATH))
    data["devices"] = [e for e in data["devices"] if e["name"] != "lamp"]  # lamp removed
    data["devices"][1]["pin"] = 8  # heat moved to GPIO8
    data["devices"].append({"name": "pump", "type": "relay", "pin": 5, "inverted": True})
    fs.write_atomic(limits.DEVICES_PATH, json.dumps(data))
    assert call("device_read", name="lamp") == "lamp = on"  # the tools do not look at the file
    with Capture() as out:
        repl.devices()
    assert out.lines[0] == "Read /devices.json again: added pump; removed lamp; changed heat\n", out.text
    assert "fan (relay on GPIO21): on\n" in out.text and "pump (relay on GPIO5): off\n" in out.text, out.text
    assert "heat (relay on GPIO8): off\n" in out.text and "lamp" not in out.lines[1], out.text
    pins = board.SIM_PINS
    assert pins[21]["level"] == 1 and pins[6]["level"] == 0 and pins[7]["level"] == 0 and pins[5]["level"] == 1
    assert call("device_read", name="lamp").startswith("Error: no device named 'lamp'")
    with Capture() as out:
        repl.devices()  # nothing changed: nothing said, nothing switched
    assert out.lines[0].startswith("fan (relay on GPIO21): on"), out.text
    assert pins[21]["level"] == 1


def test_gpio_tools_leave_devices_pins_alone():
    call("device_add", name="pump", type="relay", pin=5, inverted=True)
    call("device_set", name="pump", value="on")
    assert call("gpio_write", pin=5, state=1) == "Error: pin 5 is device pump: use device_read / device_set"
    assert call("gpio_read", pin=5) == "Error: pin 5 is device pump: use device_read / device_set"
    out = call("gpio_read_all")
    assert ", 5=" not in out and out.endswith("(devices' pins left out: 5=pump)"), out
    assert board.SIM_PINS[5]["mode"] == board.Pin.OUT and board.SIM_PINS[5]["level"] == 0  # still on
    assert call("gpio_write", pin=6, state=1) == "Pin 6 set to HIGH"


def test_two_threads_load_and_drop_the_table_at_once():
    # on a short heap each use loads the table and the last user drops it: the agent's
    # thread and the loop's (or a slow part's) thread doing so at once must each find
    # whole modules (MicroPython has no import lock: a module being imported sits
    # half-made in sys.modules, where the other thread took it: "no attribute 'Use'",
    # a name read before its module had set it). mimi.load(), run() and unload() take one
    # lock. (The tests import the firmware from the host's disk: an ENOENT opening a
    # driver's .mpy, or `json` without loads, was the host mount's VfsPosix building
    # both threads' paths in one buffer: board/host_sys.py mount_image.)
    import _thread
    import time
    import mimi

    call("device_add", name="lamp", type="relay", pin=21)
    fresh(load=False)
    errors, done = [], []

    def user(n):
        for _ in range(n):
            try:
                with devices.use() as t:
                    t.read("lamp")
            except Exception as e:
                errors.append(repr(e))
        done.append(1)

    mimi._short = True
    try:
        for _ in range(2):
            _thread.start_new_thread(user, (150,))
        t0 = time.ticks_ms()
        while len(done) < 2 and time.ticks_diff(time.ticks_ms(), t0) < 60000:
            time.sleep_ms(10)
    finally:
        mimi._short = False
    assert len(done) == 2 and not errors, errors[:3]
