# MicroPython side of bench/devices.py: the device layer on simulated parts (the firmware's
# code, from the compiled tree, on a fresh LittleFS image).
#   micropython bench/mp/devices.py ARGS.json   ({"lib", "image", "mp_dir", "runs"})
# "BENCH {json}" lines:
#   {"case": "read", "type", "first_ms", "median_ms", "cold_ms"}  device_read through the
#     registry as the agent calls it: the first (code loaded), then the median of `runs`;
#     cold: the median when the code is dropped after each (a short heap)
#   {"case": "stall", "type", "took_ms", "worst_ms", "how"}  the asyncio loop's longest
#     gap (bench/mp/loopgap.py) while one read runs: how = "awaited" (aread) or
#     "blocking" (read() called on the loop, what a naive rule would do)
import sys
import json

with open(sys.argv[1]) as f:
    A = json.load(f)
sys.path[:] = [A["lib"], ".frozen", A["mp_dir"]]
from mimi import board  # noqa: E402

board.mount_image(A["image"], 256, mkfs=True)
import time  # noqa: E402
import asyncio  # noqa: E402
import mimi  # noqa: E402
from mimi.config import settings as config  # noqa: E402
from mimi.devices.sim import parts  # noqa: E402
from mimi.tools.registry import registry  # noqa: E402
import mimi.devices as devices  # noqa: E402
import loopgap  # noqa: E402  (bench/mp/)

config.cfg.load()
DEVICES = (  # (part spec, device_add arguments)
    ("sht3x:sda=8,scl=9,addr=0x44", {"name": "sht", "type": "sht3x"}),
    ("aht20:sda=8,scl=9,up_ms=100", {"name": "aht", "type": "aht20"}),
    ("bme280:sda=8,scl=9,addr=0x76,up_ms=10", {"name": "bme", "type": "bme280"}),
    ("bh1750:sda=8,scl=9,addr=0x23", {"name": "bh", "type": "bh1750"}),
    ("ds18b20:pin=4", {"name": "ds", "type": "ds18b20", "pin": 4}),
    ("dht22:pin=5,up_ms=5000", {"name": "dht", "type": "dht22", "pin": 5}),
    ("hcsr04:trig=12,echo=13,distance=150", {"name": "sonar", "type": "hcsr04", "trig": 12, "echo": 13}),
    ("relay:pin=21", {"name": "relay", "type": "relay", "pin": 21}),
    (None, {"name": "chip_temp"}),
)


REST_MS = {"dht": 2100, "sonar": 60}  # a part's own rest between two reads (a DHT22's 2 s)
_last = {}  # name: ticks_ms when it was last read (or added)


def rest_left(name):
    """ms until `name` may be read again: its rest less the time since its last read
    (the other parts' reads in between count)."""
    if name not in _last:
        return 0
    return max(0, REST_MS.get(name, 0) - time.ticks_diff(time.ticks_ms(), _last[name]))


def out(rec):
    print("BENCH " + json.dumps(rec))


for spec, args in DEVICES:
    if spec:
        parts.attach_spec(spec)
        r = registry.call("device_add", args)
        assert r.startswith("OK"), r
        _last[args["name"]] = time.ticks_ms()  # (adding reads it)


def read(name):
    time.sleep_ms(rest_left(name))
    t0 = time.ticks_us()
    r = registry.call("device_read", {"name": name})
    _last[name] = time.ticks_ms()
    assert " = " in r and not r.startswith("Error"), r
    return time.ticks_diff(time.ticks_us(), t0) / 1000


for _, args in DEVICES:
    name = args["name"]
    mimi.unload("mimi.tools.devices")
    first = read(name)
    times = [read(name) for _ in range(A["runs"])]
    cold = []
    short = mimi.short
    mimi.short = lambda measure=False: True  # as on a board without PSRAM: code dropped after each
    try:
        for _ in range(A["runs"]):
            cold.append(read(name))
    finally:
        mimi.short = short
    times.sort()
    cold.sort()
    out({"case": "read", "type": name, "first_ms": first, "median_ms": times[len(times) // 2],
         "cold_ms": cold[len(cold) // 2]})


async def stall(name, how, label=None):
    probe = loopgap.Probe()
    await asyncio.sleep_ms(20)
    probe.worst = 0
    t0 = time.ticks_ms()
    err = None
    with devices.use() as t:
        try:
            if name is None:  # nothing read: the host's own noise over as long as a DS18B20 takes
                await asyncio.sleep_ms(770)
            elif how == "awaited":
                await t.aread(name)
            else:
                t.read(name)
        except Exception as e:  # the stuck bus: the read fails, the loop's gap still counts
            err = str(e)
    took = time.ticks_diff(time.ticks_ms(), t0)
    _last[name] = time.ticks_ms()
    await asyncio.sleep_ms(5)
    worst = await probe.stop()
    out({"case": "stall", "type": label or name, "how": how, "took_ms": took, "worst_ms": worst,
         "error": err})


async def stalls():
    for _ in range(A["runs"]):
        for _, args in DEVICES:
            for how in ("awaited", "blocking"):
                await asyncio.sleep_ms(max(100, rest_left(args["name"])))
                await stall(args["name"], how)
        parts.set("sht3x@0x44", fault="stuck")  # a bus held low: each transfer waits the I2C timeout
        for how in ("awaited", "blocking"):
            await stall("sht", how, "sht (stuck bus)")
        parts.set("sht3x@0x44", fault=None)
        for how in ("awaited", "blocking"):
            await stall(None, how, "(nothing read, 770 ms)")


asyncio.run(stalls())
