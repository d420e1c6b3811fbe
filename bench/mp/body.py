# MicroPython side of bench/body.py: the rules and the history's logging at work, and a
# week's chart sent the way /chart sends it on Telegram. Modes:
#   stall  four simulated parts logged and four rules checked every second by the rules'
#          loop (devices.body(); the logging sped up to every second so that
#          batches go to the flash during the run), the loop's longest gap meanwhile
#          (bench/mp/loopgap.py); and the same probe alone
#   chart  a week of readings (2,016, every 5 minutes), then the Telegram channel's
#          chart path (channels/telegram/photo.py: the chart drawn into a file, then sent
#          with sendPhoto to the fake Bot API over HTTP): its live heap sampled (after
#          gc.collect()) at every read and write of the flash, its time, and the loop's
#          longest gap meanwhile
#   micropython bench/mp/body.py ARGS.json
import sys
import json

with open(sys.argv[1]) as _f:
    A = json.load(_f)
sys.path[:] = [".frozen", A["lib"], A["mp_dir"]]
import gc  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
import asyncio  # noqa: E402
import mimi  # noqa: E402
from mimi import board, log  # noqa: E402
import loopgap  # noqa: E402  (bench/mp/)

T0 = 1767225600  # 2026-01-01 00:00 UTC
WEEK = 2016


def out(rec):
    print("BENCH " + json.dumps(rec))


def mount():
    board.mount_image(A["image"], 512, mkfs=True)  # (a fresh flash each run; the code stays the build's .mpy)
    from mimi.config.settings import cfg

    cfg.load()


async def stall_mode():
    from mimi.config.settings import cfg
    from mimi.devices.sim import parts
    from mimi.services import wifi
    from mimi.tools.registry import registry, Ctx

    log.info = lambda *a: None
    mount()
    wifi.supervisor._online = True
    if A["case"] == "rules":
        cfg.update({"gpio_allow": "4,5,8,9,21"})
        parts.attach("sht3x", sda=8, scl=9, addr=0x44, temp=25, hum=50)
        parts.attach("bh1750", sda=8, scl=9, addr=0x23, lux=300)
        parts.attach("relay", pin=21)
        parts.attach("ntc", pin=5, temp=21)
        ctx = Ctx("websocket", "bench")
        for args in ({"name": "room", "type": "sht3x", "log_min": 1}, {"name": "light", "type": "bh1750", "log_min": 1},
                     {"name": "fan", "type": "relay", "pin": 21, "log_min": 1},
                     {"name": "pipe", "type": "ntc", "pin": 5, "log_min": 1}):
            r = registry.call("device_add", args, ctx)
            assert r.startswith("OK"), r
        for args in (dict(name="fan", device="room", when="above", value=28, hysteresis=1, then="set",
                          target="fan", to="on", otherwise="off"),
                     dict(name="dark", device="light", when="below", value=50, then="notify", text="dark"),
                     dict(name="pipe", device="pipe", when="changes", hysteresis=0.5, then="notify", text="{value}"),
                     dict(name="damp", device="room.humidity", when="above", value=70, then="notify", text="damp")):
            r = registry.call("rule_add", dict(args, every_s=1), ctx)
            assert r.startswith("OK"), r
        import mimi.devices as devices
        import mimi.services.rules as engine

        task = asyncio.create_task(devices.body())
        await asyncio.sleep_ms(100)
        import struct

        for k, lg in engine.logs.items():  # logged every second: batches of 30 go to the flash during the run
            engine.logs[k] = struct.pack("<I", 1000) + lg[4:]
    probe = loopgap.Probe()
    end = time.ticks_add(time.ticks_ms(), A["seconds"] * 1000)
    k = 0
    from mimi import bus

    while time.ticks_diff(end, time.ticks_ms()) > 0:
        await asyncio.sleep_ms(250)
        k += 1
        if A["case"] == "rules" and k % 8 == 0:  # the parts change: the rules fire now and then
            parts.set("sht3x@0x44", temp=26 + (k // 8) % 4, hum=60 + (k // 8) % 20)
            parts.set("ntc@5", temp=20 + (k // 8) % 3)
        while bus.outbound.get_nowait() is not None:
            pass
    rec = {"case": A["case"], "worst_ms": await probe.stop()}
    if A["case"] == "rules":
        from mimi.services.history import store

        rec["kept"] = sum(len(list(store.records(n))) for n in ("room", "light", "fan", "pipe"))
        task.cancel()
    out(rec)


def week(name):
    from mimi.services.history import store

    for i in range(WEEK):
        store.add(name, 20 + 6 * math.sin(i / 40) + (i % 7) * 0.05, 45 + i % 9, t=T0 + i * 300)
    store.flush()
    mimi.drop("services.history.store")  # (not resident: loaded by who reads or writes it)


async def chart_mode():
    mount()
    week("room")
    board.set_unix(T0 + WEEK * 300)
    from mimi.channels.telegram import poller

    bot = poller.install()
    bot.token = A["tg_token"]
    bot.poll_api = poller.Api(A["tg_base"], A["tg_token"], 10)
    await bot.poll_api.call("getMe")  # the poll connection up, as in a running firmware
    from mimi.channels.telegram import send  # noqa: F401  (loaded with the first message out)

    peak = [0]
    if A["sample"]:  # the live heap after every flash read and write (host_vfs.LockedFile): the
        # store's reads and the PNG's writes while it is drawn, the file's reads as it is sent
        import os

        with open("/sample.bin", "wb") as f:
            cls = type(f)
        os.remove("/sample.bin")

        def sampled(fn):
            def call(self, *a):
                gc.collect()
                peak[0] = max(peak[0], gc.mem_alloc())
                return fn(self, *a)

            return call

        cls.write = sampled(cls.write)
        cls.readinto = sampled(cls.readinto)
    import micropython

    micropython.qstr_info()  # (its "n_total_bytes": the names' pool, before and after the first chart)
    gc.collect()
    before = gc.mem_alloc()
    mods = set(sys.modules)
    probe = loopgap.Probe()
    t = time.ticks_ms()
    from mimi import channels

    await channels.load("telegram.photo").chart(bot, "42", ["room", 168])
    took = time.ticks_diff(time.ticks_ms(), t)
    worst = await probe.stop()
    gc.collect()
    after = gc.mem_alloc()
    micropython.qstr_info()
    rec = {"case": "chart", "peak": peak[0] - before if A["sample"] else None, "after": after - before,
           "took_ms": took, "worst_ms": worst, "left": sorted(set(sys.modules) - mods)}
    if A["sample"]:  # a second chart: its names are interned, the send connection open
        peak[0] = 0
        await channels.load("telegram.photo").chart(bot, "42", ["room", 168])
        rec["peak2"] = peak[0] - after
    out(rec)


asyncio.run({"stall": stall_mode, "chart": chart_mode}[A["mode"]]())
