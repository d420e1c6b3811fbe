# Device logging (SPEC §14): a device added with log_min is read by the rules' loop
# (services/rules/__init__.py) every log_min minutes, its readings kept in batches by the
# history store; device_history then gives the right min, max and mean. Simulated
# hours: the wall clock stands still (the ESP32's 2000 epoch) and is moved by skew, the
# loop's passes run at ticks the test chooses; nothing is waited for.
import json
import time
import mimi
from support import FakeTime, rules_load, rules_pass
from mimi import board, fs, limits
from mimi.board.clock import Clock
from mimi.config.settings import cfg
from mimi.devices.sim import parts

T0 = 1767225600 + 6 * 3600  # 2026-01-01 06:00 UTC
HOME = ("websocket", "home")


def setup():
    cfg.load()
    parts.clear()
    board.clock = Clock(FakeTime(2000, T0))


def call(tool, **args):
    from mimi.tools.registry import registry, Ctx

    return registry.call(tool, args, Ctx(*HOME))


def temp(k):
    """The room's temperature k minutes in: down from 22 to 14.5 at minute 150 (08:30),
    then up (22.86 at 11:59)."""
    return round(22 - k * 0.05, 2) if k <= 150 else round(14.5 + (k - 150) * 0.04, 2)


async def run(minutes, log_min, name="room"):
    """The loop's passes each minute for `minutes`, the part following temp(); -> the
    readings the device gave (minute, value)."""
    engine = rules_load()
    now = time.ticks_ms()
    read = []
    for k in range(minutes):
        parts.set("sht3x@0x44", temp=temp(k))
        before = engine.logs[name][4:8]  # (its next reading's ticks)
        await rules_pass(now)
        if engine.logs[name][4:8] != before:
            read.append((k, temp(k)))
        board.clock.skew += 60
        now = time.ticks_add(now, 60000)
    return read


def numbers(text):
    """min, max, mean of device_history's second line ("min 14.5 °C at 08:30, max ...")."""
    line = text.split("\n")[1].replace(",", "").split()
    return float(line[1]), float(line[line.index("max") + 1]), float(line[line.index("mean") + 1])


async def test_device_history_after_simulated_hours():
    parts.attach("sht3x", sda=8, scl=9, addr=0x44, temp=22)
    out = call("device_add", name="room", type="sht3x", log_min=1)
    assert out.startswith("OK: added room (sht3x at 0x44 on SDA 8 / SCL 9)"), out
    assert json.loads(fs.read_text(limits.DEVICES_PATH))["devices"][0]["log_min"] == 1
    read = await run(6 * 60, 1)
    assert len(read) == 360
    out = call("device_history", name="room", hours=6)
    vals = [v for _, v in read]
    lo, hi, mean = numbers(out)
    assert (lo, hi) == (14.5, max(vals)) and max(vals) == 22.86, out
    assert abs(mean - sum(vals) / len(vals)) < 0.01, (mean, sum(vals) / len(vals))
    assert "360 readings" in out and "min 14.5 \u00b0C at 08:30" in out, out
    # the newest readings wait in RAM for their batch, and are read all the same
    import mimi.services.rules as engine

    assert 0 < (len(engine.logs["room"]) - 8) // 12 < limits.HISTORY_BATCH
    assert fs.isdir(limits.HISTORY_DIR) and list(fs.entries(limits.HISTORY_DIR))
    # the last hour only: from 11:01 to 12:00
    lo, hi, mean = numbers(call("device_history", name="room", hours=1))
    last = vals[-60:]
    assert (lo, hi) == (min(last), max(last)) and abs(mean - sum(last) / 60) < 0.01
    # a reset writes what waits; the next boot reads it from the flash
    mimi.close()
    assert len(engine.logs["room"]) == 8  # (the head: its period, its next reading)
    mimi.unload("mimi.services.rules")
    lo, hi, mean = numbers(call("device_history", name="room", hours=6))
    assert (lo, hi) == (14.5, 22.86) and abs(mean - sum(vals) / len(vals)) < 0.01


async def test_at_rest_the_body_makes_no_llm_call_and_opens_no_connection():
    # issue 24's budget: rules and history at rest, no LLM call, no TLS connection; three
    # hours of a device logged every minute with a set rule that switches and a notify
    # rule that is not met: not a module of the network or the agent loaded for it
    import sys
    from mimi import bus

    parts.attach("sht3x", sda=8, scl=9, addr=0x44, temp=22)
    parts.attach("relay", pin=21)
    call("device_add", name="room", type="sht3x", log_min=1)
    call("device_add", name="fan", type="relay", pin=21)
    assert call("rule_add", name="warm", device="room", when="below", value=18, every_s=60, then="set",
                target="fan", to="on", otherwise="off").startswith("OK")
    assert call("rule_add", name="hot", device="room", when="above", value=30, every_s=60, then="notify",
                text="hot").startswith("OK")
    loaded = set(sys.modules)
    read = await run(180, 1)
    assert len(read) == 180 and parts.get("relay@21")["on"] is True  # (below 18 since minute 80)
    assert list(fs.entries(limits.HISTORY_DIR))  # batches written
    new = sorted(m for m in set(sys.modules) - loaded if m.startswith(("mimi.net", "mimi.llm", "mimi.agent",
                                                                          "mimi.channels", "ssl", "tls", "socket")))
    assert new == [], new
    assert "mimi.net.tls" not in sys.modules and "mimi.net.http" not in sys.modules, loaded
    assert bus.inbound.get_nowait() is None and bus.outbound.get_nowait() is None  # no turn, no notice


async def test_every_five_minutes_the_long_tier_and_the_hourly_batch():
    parts.attach("sht3x", sda=8, scl=9, addr=0x44, temp=22)
    call("device_add", name="room", type="sht3x", log_min=5)
    read = await run(5 * 60, 5)
    assert [k for k, _ in read] == list(range(0, 300, 5))
    import mimi.services.rules as engine

    assert (len(engine.logs["room"]) - 8) // 12 < 12  # an hour's readings at most wait
    out = call("device_history", name="room", hours=5)
    vals = [v for _, v in read]
    lo, hi, mean = numbers(out)
    assert (lo, hi) == (min(vals), max(vals)) and abs(mean - sum(vals) / len(vals)) < 0.01, out
    assert "60 readings" in out


async def test_log_min_is_checked_and_removing_the_device_removes_its_history():
    parts.attach("sht3x", sda=8, scl=9, addr=0x44, temp=22)
    parts.attach("button", pin=4)
    for bad, why in ((-1, "between 0 and 1440"), (1441, "between 0 and 1440"), ("often", "a whole number"),
                     (1.5, "a whole number")):
        out = call("device_add", name="room", type="sht3x", log_min=bad)
        assert out.startswith("Error: sht3x: 'log_min' must be") and why in out, out
    assert call("device_add", name="door", type="button", pin=4, log_min=5) == \
        "Error: button takes pin, pull; not 'log_min'"
    call("device_add", name="room", type="sht3x", log_min=1)
    await run(40, 1)
    mimi.close()
    assert list(fs.entries(limits.HISTORY_DIR))
    assert call("device_remove", name="room").startswith("OK: removed room")
    assert not [p for p, _, _ in fs.entries(limits.HISTORY_DIR) if "room" in p]
    assert call("device_history", name="room").startswith("Error: no history for room")


async def test_the_history_is_the_system_s_space_not_the_file_tools():
    from mimi.tools import files

    parts.attach("sht3x", sda=8, scl=9, addr=0x44, temp=22)
    call("device_add", name="room", type="sht3x")  # (the device file: before the first count)
    cfg.set("files_quota_kb", 0)  # no quota: the file tools may take the flash's room
    files.recount()
    used0, room0 = files.usage()
    call("device_remove", name="room")
    call("device_add", name="room", type="sht3x", log_min=1)
    await run(90, 1)
    mimi.close()
    kept = sum(n for p, d, n in fs.entries(limits.HISTORY_DIR) if not d)
    assert kept > 0
    files.recount()
    used1, room1 = files.usage()
    assert used1 == used0  # its files are not the file tools'
    # the file tools leave the room the history may still grow into: its whole cap (a
    # block a segment of both tiers, and one a new segment briefly adds), less what it took
    cap = (limits.HISTORY_SEGMENTS + 1 + limits.HISTORY_FINE_SEGMENTS + 1) * limits.BLOCK_SIZE
    assert cap - 2 * limits.BLOCK_SIZE <= room0 - room1 <= cap + 2 * limits.BLOCK_SIZE, (room0 - room1, cap)
    assert call("write_file", path="/spiffs/big.md", content="x" * 100).startswith("OK")


async def test_the_boot_prunes_the_history_of_devices_gone_and_loads_the_store_only_then():
    import sys
    import mimi.services.rules as engine

    parts.attach("sht3x", sda=8, scl=9, addr=0x44, temp=22)
    call("device_add", name="room", type="sht3x", log_min=1)
    await run(40, 1)
    mimi.close()
    mine = [p for p, d, _ in fs.entries(limits.HISTORY_DIR) if not d]
    assert mine and all(p.startswith(limits.HISTORY_DIR + "/room.") for p in mine), mine
    pruned = []

    class Store:  # (in the store's place: is it asked?)
        remove = pruned.append

    sys.modules["mimi.services.history.store"] = Store
    engine.rules, engine.stale = None, True  # a boot: the first pass prunes, then loads
    await rules_pass(time.ticks_ms())
    del sys.modules["mimi.services.history.store"]
    assert pruned == []  # every file is a device's that remains: the store is not loaded
    assert [p for p, d, _ in fs.entries(limits.HISTORY_DIR) if not d] == mine
    gone = mine[0].replace("/room.", "/attic.")  # a device removed while its history was not
    fs.write_atomic(gone, fs.read_head(mine[0], 4096))
    engine.rules, engine.stale = None, True
    await rules_pass(time.ticks_ms())
    assert [p for p, d, _ in fs.entries(limits.HISTORY_DIR) if not d] == mine
