# The device layer as an attacker drives it (a prompt-injected model calling the tools
# with hostile arguments) and as the owner's mistakes reach it (a hand-edited device
# file, a /drivers/ file that misbehaves): each test here failed before its fix, but
# test_pins_and_addresses_of_every_shape (what held, kept so it stays so).
# docs/reliability.md "Issue 23: the device layer under attack" has what was tried.
from mimi import board, fs, limits, log
from mimi.config.settings import cfg
from mimi.devices.sim import parts
import mimi.devices as devices


def setup():
    cfg.load()
    parts.clear()
    board.SIM_PINS.clear()


def call(tool, **args):
    from mimi.tools.registry import registry

    return registry.call(tool, args)


def table():
    with devices.use() as t:
        return t


def fresh(load=True):
    """The table as a new boot finds it (modules and state dropped, loaded again)."""
    import sys
    import mimi

    for m in [m for m in sys.modules if m.startswith("mimi.devices.") and not m.startswith("mimi.devices.sim")]:
        mimi.unload(m)
    devices._file = devices.problem = devices.rows = None
    return table() if load else None


def test_i2c_tools_take_pins_written_as_text():
    # the schema leaves sda/scl untyped, so a model may send "8": the tools checked the
    # number but used the text (a crash, and an I2C controller kept for "8"/"9" until
    # reboot: the second bus was gone for the devices)
    from mimi.devices import state

    parts.attach("sht3x", sda=8, scl=9, addr=0x44)
    parts.attach("sht3x", sda=10, scl=11, addr=0x44)
    assert call("device_add", name="t", type="sht3x").startswith("OK")
    out = call("i2c_io", addr=0x44, read=2, sda="8", scl="9")
    assert out.startswith("Error: 0x44 on SDA 8 / SCL 9 is t (sht3x): its driver owns it"), out
    out = call("i2c_io", addr=0x44, write="30a2", sda="GPIO8", scl=9.0)
    assert out.startswith("Error: 0x44 on SDA 8 / SCL 9 is t (sht3x): its driver owns it"), out
    out = call("i2c_scan", sda="8", scl="9")
    assert out.startswith("I2C on SDA 8 / SCL 9, 1 answering: 0x44"), out
    out = call("i2c_scan", sda=" gpio12", scl="13")
    assert out.startswith("No I2C part answered on SDA 12 / SCL 13"), out
    assert state.i2c_ids == {8 << 8 | 9: 0}, state.i2c_ids  # no controller kept for a scan
    out = call("device_add", name="u", type="sht3x", sda=10, scl=11)
    assert out.startswith("OK: added u (sht3x at 0x44 on SDA 10 / SCL 11)"), out


def test_on_off_refuses_numbers_beyond_floats():
    # JSON's 1e999 is infinity: int() of it raised OverflowError, said as the driver's
    # own failure (with a traceback in the log) instead of what the relay takes
    parts.attach("relay", pin=21)
    assert call("device_add", name="fan", type="relay", pin=21).startswith("OK")
    for v in (float("inf"), float("-inf"), float("nan"), 1e300):
        out = call("device_set", name="fan", value=v)
        assert out.startswith("Error: fan takes on or off (or 1 / 0), not "), (v, out)
    assert "E devices" not in "\n".join(log.recent(20))
    assert call("device_set", name="fan", value=1.0) == "OK: fan = on"


EXITS = """import sys
KIND = "in"
PARAMS = "pin:p when=read:c:read|load"
if %r == "load":
    sys.exit(2)


def read(dev):
    sys.exit(3)
"""


def test_driver_that_calls_exit_stops_nothing():
    # SystemExit is no Exception: it went through the tool, the turn and the agent
    # thread's loop (the thread ended) and, read on the loop, out of asyncio.run
    from support import write

    write("/drivers/quits.py", EXITS % "read")
    write("/drivers/quitload.py", EXITS % "load")
    out = call("device_add", name="q", type="quits", pin=5)
    assert out == "Error: q (quits on GPIO5) failed: RuntimeError: /drivers/quits.py called sys.exit(3); " \
        "nothing was added", out
    out = call("device_add", name="l", type="quitload", pin=6)
    assert out == "Error: /drivers/quitload.py failed to load: RuntimeError: it called sys.exit(2)", out
    # a device kept in the file whose driver quits on a read: on the loop too
    import json
    import asyncio

    fs.write_atomic(limits.DEVICES_PATH, json.dumps({"devices": [{"name": "q", "type": "quits", "pin": 5}]}))
    t = fresh()
    assert call("device_read", name="q").startswith("Error: q (quits on GPIO5) failed: RuntimeError: "
                                                    "/drivers/quits.py called sys.exit(3)")

    async def loop_read():
        try:
            await t.aread("q")
        except Exception as e:
            return t.said(t.find("q"), e)

    assert asyncio.run(loop_read()).startswith("Error: q (quits on GPIO5) failed: RuntimeError")


HOLDS = """import time
KIND = "in"
PARAMS = "sda=8:d scl=9:k addr=0x45:x:0x45"
done = []


def read(dev):
    dev.i2c.writeto(dev.addr, b"\\xf3\\x2d")  # an SHT3x's status register
    t0 = time.ticks_ms()
    while time.ticks_diff(time.ticks_ms(), t0) < 400:  # a driver busy between transfers
        pass
    st = dev.i2c.readfrom(dev.addr, 3)
    done.append(1)
    return st[0] << 8 | st[1]
"""


def test_driver_holds_the_bus_only_for_a_transfer():
    # a /drivers/ read held the bus's lock for its whole call: the loop's next read of a
    # part on that bus waited for it (1.5 s for a 1.5 s driver), and forever for one
    # that never returns
    import _thread
    import asyncio
    import time
    from support import write

    parts.attach("sht3x", sda=8, scl=9, addr=0x44, temp=20)
    parts.attach("sht3x", sda=8, scl=9, addr=0x45)
    write("/drivers/holds.py", HOLDS)
    assert call("device_add", name="t", type="sht3x").startswith("OK")
    assert call("device_add", name="h", type="holds").startswith("OK")
    t = table()
    drv = t.find("h").driver()
    got = []

    async def main():
        assert len(drv.ns["done"]) == 1  # the add's read
        _thread.start_new_thread(lambda: got.append(call("device_read", name="h")), ())
        await asyncio.sleep_ms(100)  # the agent's driver is in its busy wait now
        r = t.text(await t.aread("t"))
        return r, len(drv.ns["done"])

    r, finished = asyncio.run(main())
    assert r == "20 °C, humidity 40 %", r
    assert finished == 1, "the loop's read waited for the driver's whole call"
    while not got:
        time.sleep_ms(10)
    assert got[0].startswith("h = "), got


def test_device_file_too_big_for_the_heap_is_moved_aside():
    # 8 KB of valid JSON made 2,724 entries (each an unusable device) or 4,000 nested
    # lists: parsing and checking them took more than a board without PSRAM has, so
    # MemoryError at boot, and again at every turn's prompt and every device or GPIO tool
    many = '{"devices": [' + ",".join(["{}"] * ((limits.DEVICES_FILE_MAX - 20) // 3)) + "]}"
    deep = '{"devices": [{"name": "a", "type": "relay", "pin": ' + "[" * 3000 + "]" * 3000 + "}]}"
    for text in (many, deep):
        assert len(text) <= limits.DEVICES_FILE_MAX
        fs.write_atomic(limits.DEVICES_PATH, text)
        if fs.exists(limits.DEVICES_BAD):
            fs.remove(limits.DEVICES_BAD)
        fresh(False)
        from mimi import app

        app.devices_off()  # the boot pass
        assert not fs.exists(limits.DEVICES_PATH) and fs.exists(limits.DEVICES_BAD)
        assert devices.problem.startswith("/devices.json was corrupt (more lists and objects than "), devices.problem
        out = call("device_list")
        assert out.startswith("chip_temp (chip_temp inside the chip): ") and "Note: /devices.json was corrupt" in out, out
    # a full file of 16 devices is far from the bound
    import json

    full = {"devices": [{"name": "r%d" % i, "type": "relay", "pin": p, "inverted": False}
                        for i, p in enumerate((1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17))]}
    fs.write_atomic(limits.DEVICES_PATH, json.dumps(full))
    assert len(fresh().listed()) == 17 and devices.problem is None


def test_colour_with_brightness_as_people_write_it():
    # the LED's own answer reads "red (#ff0000) at 20 %": "red 20 %", "red, 20%" and
    # "20% red" were refused ("brightness is a percentage" / "unknown colour")
    parts.attach("rgb_led", pin=48, n=1)
    assert call("device_add", name="led", type="rgb_led", pin=48, max=100).startswith("OK")
    for value in ("red 20 %", "red, 20%", "20% red", "Red at 20 %", "#FF0000 20%"):
        out = call("device_set", name="led", value=value)
        assert out == "OK: led = red (#ff0000) at 20 %", (value, out)
        assert parts.get("rgb_led@48") == [(51, 0, 0)], value
    assert call("device_set", name="led", value="warm white 10 %") == "OK: led = warm white (#ffb060) at 10 %"
    assert call("device_set", name="led", value="50 %") == "OK: led = warm white (#ffb060) at 50 %"
    for value, why in (("red 20 % 30 %", "led: brightness"), ("red 120 %", "led: brightness is 0 to 100 %"),
                       ("chartreuse 20 %", "led: unknown colour 'chartreuse'"), ("red % 20", "led: "),
                       ("nan %", "led: brightness is 0 to 100 %")):
        out = call("device_set", name="led", value=value)
        assert out.startswith("Error: " + why), (value, out)
    assert parts.get("rgb_led@48") == [(128, 88, 48)]  # nothing changed on a refused value


def test_ds18b20_rom_is_checked():
    # a ROM that is not 16 hex digits failed in the driver ("failed: ValueError: non-hex
    # digit", a traceback in the log) instead of saying what the parameter takes
    parts.attach("ds18b20", pin=4, temp=19.5)
    for rom in ("../../x", "28ff", "28" * 9, "zz" * 8):
        out = call("device_add", name="w", type="ds18b20", pin=4, rom=rom)
        assert out.startswith("Error: ds18b20: 'rom' must be 16 hex digits"), (rom, out)
    out = call("device_add", name="w", type="ds18b20", pin=4)
    assert out == "OK: added w (ds18b20 on GPIO4): w = 19.5 °C", out
    rom = table().find("w").params["rom"]
    call("device_remove", name="w")
    assert call("device_add", name="w", type="ds18b20", pin=4, rom=rom.upper()).startswith("OK")


CHATTY = """KIND = "in"
PARAMS = "pin:p"


def read(dev):
    return "x" * 20000, "units"
"""


def test_a_drivers_long_answer_is_cut():
    # a /drivers/ read answering 20 KB of text: kept whole as the last reading, and the
    # prompt's ## Devices part stopped at it, every device after it left out
    from support import write
    from mimi.devices import lines, state

    write("/drivers/chatty.py", CHATTY)
    assert call("device_add", name="c", type="chatty", pin=5).startswith("OK")
    assert call("device_add", name="lamp", type="relay", pin=6).startswith("OK")
    out = call("device_read", name="c")
    assert out.startswith("c = xxx") and len(out) < 200 and out.endswith("... units"), out
    assert len(state.last["c"]) < 204  # (its ticks, then its text)
    part = lines.part(limits.DEVICES_PROMPT_MAX)
    assert "- lamp (relay on GPIO6): off" in part and "- chip_temp" in part, part


ODD = """KIND = "in"
PARAMS = "pin:p what=0:i:0:3"


def read(dev):
    w = dev.params["what"]
    if w == 0:
        return ((1, 2),)  # a tuple of pairs: kept as a reading, its text made later
    if w == 1:
        return [("a", 1, "u", "more")]
    if w == 2:
        return [("t", float("nan"), "C")] * 300
    return {"a": 1}
"""


def test_a_drivers_odd_answers_do_not_poison_the_prompt():
    # a /drivers/ read answering a tuple of pairs was kept as it was: every later text of
    # it (device_list, the prompt's ## Devices part of every turn) failed with IndexError;
    # four-item entries failed in the driver's name; 300 entries were all kept
    from support import write
    from mimi.devices import lines

    write("/drivers/odd.py", ODD)
    for w in range(4):
        out = call("device_add", name="o%d" % w, type="odd", pin=4 + w, what=w)
        assert out.startswith("OK: added o%d (odd on GPIO%d): o%d = " % (w, 4 + w, w)), out
    assert call("device_read", name="o0") == "o0 = 1 2"
    assert call("device_read", name="o1") == "o1 = a 1 u"
    out = call("device_read", name="o2")
    assert out.count("t nan C") == limits.READING_ITEMS, out
    assert call("device_read", name="o3") == "o3 = {'a': 1}"
    part = lines.part(limits.DEVICES_PROMPT_MAX)
    for w in range(4):
        assert "- o%d (odd on GPIO%d): " % (w, 4 + w) in part, part
    assert "- chip_temp" in part, part


def test_parameters_that_only_work_together():
    # a soil probe with dry == wet read 0 % whatever its volts (a division by their
    # difference, avoided by saying 0); analog_in scaled over a zero volts span read
    # min; a unit with a Unicode line break went into the prompt as a new line
    out = call("device_add", name="s", type="soil", pin=5, dry=1, wet=1.05)
    assert out.startswith("Error: soil: 'dry' and 'wet' must be at least 0.1 V apart"), out
    out = call("device_add", name="a", type="analog_in", pin=5, vmin=1, vmax=1, min=0, max=100)
    assert out.startswith("Error: analog_in: 'vmin' and 'vmax' must differ"), out
    for unit in ("\u2028## x", "a\x85b", "\x7f"):
        out = call("device_add", name="a", type="analog_in", pin=5, unit=unit)
        assert out.startswith("Error: analog_in: 'unit' must be text of at most 8"), (unit, out)
    assert not fs.exists(limits.DEVICES_PATH)
    # what still makes sense is taken: a span scaled upside down, a unit of its own
    assert call("device_add", name="a", type="analog_in", pin=5, vmin=3, vmax=0.5, min=0, max=100,
                unit="%RH").startswith("OK: added a (analog_in on GPIO5)")
    assert call("device_add", name="s", type="soil", pin=6, dry=2, wet=1).startswith("OK")


def test_pins_and_addresses_of_every_shape():
    # what a model or a hand-edited call sends for a pin: refused with what it takes,
    # or understood when it means one GPIO; the refused pins stay refused however written
    # (this held before the fixes of this file; kept so it stays so)
    parts.attach("relay", pin=4)
    for pin in (True, [4], 4.5, "4.0", "48,0", "0x30", "GPIO 4", "\u0664", {"pin": 4}, None):
        out = call("device_add", name="r", type="relay", pin=pin)
        assert out.startswith("Error: relay: 'pin' must be a GPIO number") or \
            out.startswith("Error: relay needs 'pin'") and pin is None, (pin, out)
    for pin, why in ((0, "GPIO0 is refused: strapping pin"), ("GPIO19", "GPIO19 is refused: reserved for the USB"),
                     (" gpio43 ", "GPIO43 is refused: UART0 TX"), (35.0, "GPIO35 is refused: octal PSRAM"),
                     (-4, "GPIO-4 does not exist"), (2 ** 64, "GPIO18446744073709551616 does not exist"),
                     (22, "GPIO22 does not exist")):
        out = call("device_add", name="r", type="relay", pin=pin)
        assert out.startswith("Error: " + why), (pin, out)
        out = call("i2c_scan", sda=pin, scl=9)
        assert out.startswith("Error: " + why), (pin, out)
    for addr in ("0x40", 0x46, 68.5, True):
        out = call("device_add", name="t", type="sht3x", addr=addr)
        assert out.startswith("Error: sht3x: 'addr' must be 0x44 or 0x45"), (addr, out)
    assert not fs.exists(limits.DEVICES_PATH)
    assert call("device_add", name="r", type="relay", pin="04").startswith("OK: added r (relay on GPIO4)")
    out = call("device_add", name="s", type="servo", pin=" GPIO4")
    assert out.startswith("Error: GPIO4 is already used by r (relay on GPIO4)"), out
    out = call("i2c_scan", sda=4.0, scl=9)
    assert out.startswith("Error: GPIO4 is used by r (relay on GPIO4)"), out


def test_scan_while_a_part_measures_still_finds_it():
    # an SHT3x does not acknowledge its address while it measures (15 ms at high
    # repeatability): an i2c_scan meanwhile (the rules' loop reading it) left it out, and
    # the model was told the device was gone from its own bus
    parts.attach("sht3x", sda=8, scl=9, addr=0x44)
    parts.attach("bme280", sda=8, scl=9, addr=0x76)
    assert call("device_add", name="t", type="sht3x").startswith("OK")
    t = table()
    steps = t.find("t").driver().read()
    assert next(steps) > 0  # the measurement command sent: the part is busy now
    out = call("i2c_scan")
    assert out.startswith("I2C on SDA 8 / SCL 9, 2 answering: 0x44 "), out
    assert ": device t" in out and "0x76 BME280" in out, out
    try:
        next(steps)
    except StopIteration as e:
        assert t.text(e.value).startswith("21.5 °C"), e.value
