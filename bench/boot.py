"""Boot-to-ready of the simulator (tools/sim), fresh image vs existing image, and the
heap in use once the firmware is up (heap_info() on the console, after gc.collect()).

  .venv/bin/python bench/boot.py [-n RUNS]

wall: from starting tools/sim (CPython: image build or sync, then MicroPython) to the
"gateway listening" line. firmware: the log clock of that line (from the import of
mimi.log, i.e. MicroPython's share of the boot).
"""
import re
import tempfile
from pathlib import Path

from common import Sim, Table, cli, median, pct

READY = r"\[\s*([\d.]+)\] I ws: gateway listening on"


def boot_once(fs):
    sim = Sim(fs, "ws_port=0", "ws_token=bench-token", console=True)
    try:
        m, wall, i = sim.wait_for(READY)
        fw = float(m.group(1))
        sim.send("heap_info()\r")
        alloc = int(sim.wait_for(r"^alloc\s+(\d+)", start=i)[0].group(1))
        free = int(sim.wait_for(r"^free\s+(\d+)", start=i)[0].group(1))
        return wall, fw, alloc, free
    finally:
        sim.stop()


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
                    boot_once(fs)
                res.append(boot_once(fs))
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
