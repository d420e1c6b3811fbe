"""Boot-to-ready of the simulator (tools/sim), fresh image vs existing image, and the
heap in use once the firmware is up (heap_info() on the console, after gc.collect());
then the heap a settled boot holds per interpreter (the whole firmware, with and
without Telegram configured, a cron job each), and what each resident module costs.

  .venv/bin/python bench/boot.py [-n RUNS]

wall: from starting tools/sim (CPython: image build or sync, then MicroPython) to the
"gateway listening" line. firmware: the log clock of that line (from the import of
mimi.log, i.e. MicroPython's share of the boot).
"""
import re
import tempfile
import time
from pathlib import Path

from common import (BUILD, Sim, Table, cli, interpreters, make_image, median, mkimage, mp_args, pct,
                    run_mp, smoke)

READY = r"\[\s*([\d.]+)\] I ws: gateway listening on"


def boot_once(tmp):
    """One start of tools/sim on tmp/fs.img -> (wall s, firmware s, alloc, free)."""
    with Sim.start(tmp, "ws_port=0", "ws_token=bench-gateway-token", console=True) as sim:
        m = sim.wait_for(READY)
        wall = time.monotonic() - sim.started
        fw = float(m.group(1))
        sim.send("heap_info()\r")
        # up to heap_info()'s last line: a stop while it still runs would interrupt the
        # console command instead of the firmware
        h = sim.wait_for(re.compile(r"^heap free\s+(\d+) bytes \(in use (\d+)\)[\s\S]*?^flash .*free",
                                    re.M),
                         start=m.end())
        return wall, fw, int(h.group(2)), int(h.group(1))


def tables(n=None):
    n = n or 7
    t = Table("Boot to ready (tools/sim, %d runs each)" % n,
              ["image", "wall median ms", "wall p90 ms", "firmware median ms",
               "heap in use after boot", "heap total"])
    with tempfile.TemporaryDirectory() as tmp:
        fs = Path(tmp) / "fs.img"
        for kind in ("fresh", "existing"):
            res = []
            for k in range(n):
                if kind == "fresh" and fs.exists():
                    fs.unlink()
                if kind == "existing" and not fs.exists():
                    boot_once(tmp)
                res.append(boot_once(tmp))
            walls = [r[0] * 1000 for r in res]
            fws = [r[1] * 1000 for r in res]
            alloc = median([r[2] for r in res])
            t.add(kind, median(walls), pct(walls, 90), median(fws),
                  "%d B (%.1f KB)" % (alloc, alloc / 1024), "%d KB" % ((res[0][2] + res[0][3]) // 1024))
    t.notes = ("fresh = no image file (tools/sim builds an 8 MB LittleFS image first); existing = "
               "image kept from the previous run (tools/sim syncs the code into it). Heap: "
               "heap_info() on the serial console once ready (gc.collect() first).")
    return [t] + settled_tables()


# A cron job in its chat: the target configuration of issue 12 (gateway, Telegram with
# a token and an allow-list, cron with a job, heartbeat, agent thread, console).
CRON = '{"jobs": [{"kind": "every", "interval_s": 3600, "message": "check the plants", "channel": "%s", "chat_id": "42"}]}'
SETTLED = re.compile(r"boot marked healthy \(heap in use (\d+)\)")
HEAP = re.compile(r"^heap free\s+(\d+) bytes \(in use (\d+)\)", re.M)
# The modules a settled boot with Telegram holds (a WebSocket connection's code, net/httpserver
# and net/wsproto, loads with the first one; Telegram's sending side with the first message out)
RESIDENT = ("mimi mimi.limits mimi.log mimi.fs mimi.config.settings mimi.board.clock mimi.board "
            "mimi.app mimi.channels mimi.bus mimi.agent.worker mimi.services.loopwatch mimi.services.wifi "
            "mimi.services.watchdog mimi.channels.dispatch mimi.services.ntp mimi.services.cron "
            "mimi.services.heartbeat mimi.console.serial mimi.net mimi.channels.websocket.gateway "
            "mimi.utf8 mimi.jsonutil mimi.net.dns mimi.net.http mimi.net.tls mimi.net.asynchttp asyncio.lock "
            "mimi.channels.telegram.poller mimi.repl").split()


def settled_once(tmp, mp, telegram, clients=0):
    """The firmware on interpreter mp with a cron job (and Telegram on the fake Bot API;
    and `clients` WebSocket clients connected from its ready line on, idle):
    -> (heap in use settled, nobody at the console; the same after heap_info() typed on
    the console, which loads the REPL commands)."""
    from contextlib import ExitStack
    from fakes import telegram as fake
    from websockets.sync.client import connect

    tg = fake.start() if telegram else None
    sets = ["ws_port=0", "ws_token=bench-token-123"]
    if tg:
        sets += ["tg_api_base=" + tg["base_url"], "tg_token=" + tg["token"], "tg_allow=42"]
    try:
        with Sim.start(tmp, *sets, console=True, micropython=mp) as sim:
            sim.wait_for(r"I app: ready")
            # closed before the firmware stops: LittleFS commits a file when it is closed
            sim.send("f = open('/spiffs/cron.json', 'w'); f.write(%r); f.close(); print('written', 1)\r" % (
                CRON % ("telegram" if tg else "websocket")))
            sim.wait_for(r"written \d+")
        with Sim.start(tmp, *sets, console=True, micropython=mp) as sim, ExitStack() as held:
            sim.wait_for(r"I app: ready")
            for _ in range(clients):  # the library answers the gateway's pings by itself
                held.enter_context(connect(sim.url + "?token=bench-token-123"))
            if smoke():  # not the 60 s to the healthy mark: heap_info()'s figure twice
                m = sim.wait_for(r"tg: .*polling" if tg else r"I app: ready")
            else:
                m = sim.wait_for(SETTLED, timeout=180)
            if tg:
                assert "polling" in sim.output(), sim.output()
            sim.send("heap_info()\r")
            h = sim.wait_for(HEAP, start=m.end())
            assert "1 job(s) loaded" in sim.output(), sim.output()  # the target configuration
            return int(h.group(2) if smoke() else m.group(1)), int(h.group(2))
    finally:
        if tg:
            tg.close()


def settled_tables():
    t = Table("Heap after boot, settled (60 s up: the healthy-boot log line)",
              ["interpreter", "Telegram", "WebSocket clients", "heap in use, nobody at the console",
               "after heap_info() on the console"])
    per = {}
    for label, mp in interpreters():
        for telegram, clients in ((False, 0), (False, 1), (True, 0)):
            with tempfile.TemporaryDirectory() as tmp:
                quiet, typed = settled_once(tmp, mp, telegram, clients)
            t.add(label, "token + allow-list" if telegram else "not set", clients,
                  "%d B (%.1f KB)" % (quiet, quiet / 1024), "%d B (%.1f KB)" % (typed, typed / 1024))
        with tempfile.TemporaryDirectory() as tmp:
            mkimage.compile_tree(BUILD)
            img = make_image(Path(tmp) / "fs.img")
            rc, recs, out = run_mp("imports.py", mp_args(img, modules=RESIDENT), mp=mp)
            if rc:
                raise RuntimeError(out[-2000:])
            per[label] = {r["module"]: r["bytes"] for r in recs}
    t.notes = ("Whole firmware in tools/sim on that interpreter: gateway, heartbeat, agent thread, console, "
               "a cron job (in the Telegram chat when Telegram is set: the fake Bot API of "
               "tests/fakes/telegram.py, the poller connected; a WebSocket client connected from the ready line on, "
               "idle, when counted). First column: the log's "
               "'boot marked healthy (heap in use N)' (gc.collect() first, 60 s after boot); second: "
               "heap_info() typed on the console after it, which also loads the REPL commands.")
    m = Table("Heap each resident module adds (imported in boot order after its dependencies)",
              ["module"] + [label for label in per])
    for name in RESIDENT:
        m.add(name, *["%.1f KB" % (per[label][name] / 1024) for label in per])
    m.notes = ("bench/mp/imports.py: the qstr pool grown first (a pool doubling is not charged to one "
               "module); mimi.board.clock brings the board layer (board/host.py here, board/esp32.py on "
               "the board), mimi.app brings asyncio's state.")
    return [t, m]


if __name__ == "__main__":
    cli(tables)
