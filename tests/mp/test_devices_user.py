# Drivers from flash (/drivers/<type>.py) and the device layer on the asyncio loop:
# a user's own part type, a driver that raises or does not load, safe mode, and reads
# that wait (a conversion, a blocking call) without holding the loop.
import sys
import time
from support import write, Ticker
from mimi import board, log
from mimi.config.settings import cfg
import mimi.devices as devices

LEVEL = """# a pin's level times a scale (a test part)
from mimi import board

KIND = "in"
PARAMS = "pin:p scale=1:f:0:100"


def read(dev):
    return dev.pin("pin", board.Pin.IN).value() * dev.params["scale"], "units"
"""
WAITS = """KIND = "in"
PARAMS = "pin:p"
calls = []


def read(dev):
    calls.append(1)
    yield 300  # a conversion: slept by the agent thread, awaited by the loop
    return [("", len(calls), "reads"), ("note", "done", "")]
"""
BLOCKS = """import time
KIND = "in"
PARAMS = "pin:p"
SLOW = %s


def read(dev):
    time.sleep_ms(300)  # one call that holds its caller
    return 7
"""
BOOM = """KIND = "out"
PARAMS = "pin:p"


def read(dev):
    return "idle"


def set(dev, value):
    if value == "full":
        raise MemoryError("memory allocation failed, allocating 636 bytes")
    raise ValueError("boom " + str(value))
"""
SNEAKY = """KIND = "in"
PARAMS = "pin:p other=0:i:0:48"


def read(dev):
    return dev.pin("other").value()
"""


def setup():
    cfg.load()
    board.SIM_PINS.clear()


def table():
    """The device table (tests: a big heap, so its code stays loaded after the block)."""
    with devices.use() as t:
        return t


def call(tool, **args):
    from mimi.tools.registry import registry

    return registry.call(tool, args)


def test_own_type_added_and_read():
    write("/drivers/level.py", LEVEL)
    out = call("device_add", name="x", type="nope", pin=4)
    assert "; from /drivers: level" in out, out
    board.sim_drive(5, 1)
    out = call("device_add", name="tank", type="level", pin=5, scale=2.5)
    assert out == "OK: added tank (level on GPIO5): tank = 2.5 units", out
    board.sim_drive(5, 0)
    assert call("device_read", name="tank") == "tank = 0 units"
    assert call("device_add", name="t2", type="level", pin=0).startswith("Error: GPIO0 is refused")
    assert call("device_add", name="t2", type="level", pin=6, scale=500).startswith(
        "Error: level: 'scale' must be between 0 and 100")
    assert call("device_set", name="tank", value=1) == "Error: tank is a sensor (level): device_read it"


def test_driver_takes_only_its_checked_pins():
    write("/drivers/sneaky.py", SNEAKY)
    out = call("device_add", name="s", type="sneaky", pin=5, other=0)
    assert out.startswith("Error: s (sneaky on GPIO5) failed: ValueError: 'other' is not a pin parameter of PARAMS"), out
    assert out.endswith("; nothing was added"), out
    assert 0 not in board.SIM_PINS


def test_driver_that_raises_or_does_not_load():
    write("/drivers/boom.py", BOOM)
    assert call("device_add", name="b", type="boom", pin=5).startswith("OK: added b (boom on GPIO5)")
    out = call("device_set", name="b", value="on")
    assert out == "Error: b (boom on GPIO5) failed: ValueError: boom on", out
    assert "E devices: b failed" in "\n".join(log.recent(10))
    out = call("device_set", name="b", value="full")  # no room: not the part's fault nor a bug
    assert out == "Error: no room in the board's memory for b (boom on GPIO5) just now " \
        "(memory allocation failed, allocating 636 bytes)", out
    assert log.recent(1)[0].endswith("W devices: b: no room in the heap (memory allocation failed, allocating 636 bytes)")
    assert call("device_read", name="b") == "b = idle"  # the next call works
    write("/drivers/broken.py", "KIND = 'in'\ndef read(dev) return 1\n")
    out = call("device_add", name="c", type="broken", pin=6)
    assert out.startswith("Error: /drivers/broken.py failed to load: SyntaxError"), out
    write("/drivers/empty.py", "X = 1\n")
    out = call("device_add", name="c", type="empty", pin=6)
    assert out.startswith("Error: /drivers/empty.py needs KIND"), out


def test_safe_mode_skips_drivers():
    from mimi import safemode

    write("/drivers/level.py", LEVEL)
    assert call("device_add", name="tank", type="level", pin=5).startswith("OK")
    assert call("device_add", name="lamp", type="relay", pin=6).startswith("OK")
    safemode.active = True
    try:
        import mimi

        for m in [m for m in sys.modules if m.startswith("mimi.devices.") and not m.startswith("mimi.devices.sim")]:
            mimi.unload(m)
        devices.rows = None  # a boot in safe mode
        assert call("device_read", name="tank") == \
            "Error: tank is unusable: /drivers/level.py not loaded: safe mode skips /drivers/"
        assert call("device_set", name="lamp", value="on") == "OK: lamp = on"  # built-in types work
    finally:
        safemode.active = False


async def test_waits_awaited_on_the_loop():
    write("/drivers/waits.py", WAITS)
    write("/drivers/slow.py", BLOCKS % "True")
    write("/drivers/hog.py", BLOCKS % "False")
    for n, t in (("w", "waits"), ("s", "slow"), ("h", "hog")):
        out = call("device_add", name=n, type=t, pin=5 + "wsh".index(n))
        assert out.startswith("OK"), out
    t = table()
    import asyncio

    for name, stalls in (("w", False), ("s", False), ("h", True)):
        tick = Ticker()
        await asyncio.sleep_ms(20)
        before = tick.count
        r = await t.aread(name)
        n = tick.count - before
        tick.stop()
        assert r, r
        if stalls:  # the test can tell: a blocking read without SLOW holds the loop
            assert n <= 2, (name, n)
        else:
            assert n >= 15, (name, n)
    assert t.text(await t.aread("w")) == "3 reads, note done"  # added (1), read above (2)


def test_agent_thread_and_loop_take_turns():
    import _thread
    import asyncio

    write("/drivers/waits.py", WAITS)
    call("device_add", name="w", type="waits", pin=5)
    t = table()
    got = []

    def agent():
        got.append(t.text(t.read("w")))

    async def main():
        _thread.start_new_thread(agent, ())
        await asyncio.sleep_ms(50)  # the thread's measurement is under way
        t0 = time.ticks_ms()
        got.append(t.text(await t.aread("w")))
        return time.ticks_diff(time.ticks_ms(), t0)

    waited = asyncio.run(main())
    assert sorted(got) == ["2 reads, note done", "3 reads, note done"], got
    assert waited >= 450, waited  # its own 300 ms after the thread's rest: one at a time


def test_the_documented_example_driver():
    # docs/hardware.md's /drivers/ example: it loads, its PARAMS are checked, and an
    # INA219 that does not answer is said with the driver's own hint
    from support import REPO

    doc = open(REPO + "/docs/hardware.md").read()
    start = doc.index("```python\n# /drivers/ina219.py") + len("```python\n")
    code = doc[start:doc.index("```", start)]
    assert len(code.strip().splitlines()) <= 22, code
    write("/drivers/ina219.py", code)
    assert call("device_add", name="pv", type="ina219", addr=0x42).startswith(
        "Error: ina219: 'addr' must be 0x40 or 0x41 or 0x44 or 0x45")
    out = call("device_add", name="pv", type="ina219", shunt=0.05)
    assert out.startswith("Error: pv (ina219 at 0x40 on SDA 8 / SCL 9) did not answer: no acknowledge. "
                          "Check the wiring, the address jumpers (A0, A1) and the power"), out
    assert out.endswith("; nothing was added"), out
