"""Boot-to-ready of the simulator (tools/sim), fresh image vs existing image, and the
heap in use once the firmware is up (heap_info() on the console, after gc.collect()).

  .venv/bin/python bench/boot.py [-n RUNS]

wall: from starting tools/sim (CPython: image build or sync, then MicroPython) to the
"gateway listening" line. firmware: the log clock of that line (from the import of
mimi.log, i.e. MicroPython's share of the boot).
"""
import re
import tempfile
import time
from pathlib import Path

from common import Sim, Table, cli, median, pct

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
    return [t]


if __name__ == "__main__":
    cli(tables)
