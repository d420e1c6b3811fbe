"""The sensor history (lib/mimi/services/history/, issue 24): a week's chart drawn on the
board (2,016 readings: its peak heap on each interpreter, the smallest free heap it is
drawn in, found by bisection, and its render time on the host), and the bytes the store
writes to the flash per device per day (a flash chip in RAM counting every program and
erase under MicroPython's own VfsLfs2, 6 MB like an 8 MB board's partition).

  .venv/bin/python bench/readings.py [-n RUNS]     (-n 1: the short form)
"""
import tempfile
from pathlib import Path

from common import ROOT, Table, cli, interpreters, make_image, mp_args, run_mp

LO, HI = 8 * 1024, 48 * 1024  # the free-heap scan's bounds
FLASH = [("every 5 min, 1 device", 300, 1), ("every 5 min, 4 devices", 300, 4),
         ("every 1 min, 1 device", 60, 1), ("every 1 min, 4 devices", 60, 4)]


def smallest(args, mp, step):
    """The smallest free heap (bytes, to `step`) the week's chart is drawn in."""
    def works(b):
        rc, recs, _ = run_mp("readings.py", dict(args, mode="budget", budget=b), heap="1m", mp=mp)
        return rc == 0 and recs and recs[0]["size"] > 0
    lo, hi = LO, HI
    if not works(hi):
        return None
    while hi - lo > step:
        mid = (lo + hi) // 2 // 256 * 256
        if works(mid):
            hi = mid
        else:
            lo = mid
    return hi


def tables(n=None):
    short = n == 1
    n = n or 9
    kb = lambda b: "%.1f KB" % (b / 1024)  # noqa: E731
    charts = Table("History chart: a week (2,016 readings) drawn as a PNG on the board (median of %d)" % n,
                   ["interpreter", "PNG bytes", "7-day chart ms", "24-h chart ms", "summary ms (7 days)",
                    "chart JSON ms / bytes", "code loaded for it", "its state", "live peak",
                    "smallest free heap", "store's code"])
    flash = Table("History writes to the flash per device per day (a 6 MB LittleFS in RAM)",
                  ["logging", "readings a day", "payload a day", "programmed a day", "blocks erased a day",
                   "read a day", "kept on flash", "span kept"])
    with tempfile.TemporaryDirectory() as tmp:
        img = make_image(Path(tmp) / "fs.img")
        for label, mp in interpreters():
            args = mp_args(img, n=n, tests_mp=str(ROOT / "tests" / "mp"))
            rc, recs, out = run_mp("readings.py", dict(args, mode="chart"), heap="1m", mp=mp, timeout=600)
            if rc or not recs:
                raise RuntimeError(out[-3000:])
            r = recs[0]
            least = smallest(args, mp, 4096 if short else 256)
            charts.add(label, r["size"], r["week_us"] / 1000, r["day_us"] / 1000, r["summary_us"] / 1000,
                       "%.1f / %d" % (r["json_us"] / 1000, r["json_bytes"]), kb(r["code"]), kb(r["state"]),
                       kb(r["peak"]), kb(least) if least else "> %d KB" % (HI // 1024), kb(r["store_code"]))
        days, measure = (3, 1) if short else (10, 3)
        for what, every_s, devices in FLASH[:2] if short else FLASH:
            rc, recs, out = run_mp("readings.py", mp_args(img, tests_mp=str(ROOT / "tests" / "mp"), mode="flash",
                                                          blocks=1536, every_s=every_s, devices=devices,
                                                          days=days, measure_days=measure),
                                   heap="16m", timeout=1800)
            if rc or not recs:
                raise RuntimeError(out[-3000:])
            r = recs[0]
            flash.add(what, r["readings_day"], kb(r["readings_day"] * 12), kb(r["prog_day"]),
                      "%.1f" % r["erases_day"], kb(r["read_day"]), kb(r["kept"]),
                      "%.1f days" % (r["span_s"] / 86400))
    charts.notes = (
        "Code loaded for it: query, png, font and chart (the build's .mpy, read through the host's C "
        "filesystem as the board reads its own) with the store already loaded, as it is "
        "while devices log; it includes the qstr pool MicroPython grows for their names. Live peak: the "
        "heap in use after gc.collect(), sampled at every piece the PNG goes out in, above the store "
        "loaded and logging (code + state + the row being made). Smallest free heap: the rest of the heap "
        "taken by ballast first, bisected; it covers the imports. Times: this machine's host CPU, not the "
        "board's.")
    flash.notes = (
        "Steady state: the last %d of %d simulated days (each device's oldest segments are removed by "
        "then). Payload: the records themselves (12 bytes: time, value, second value). Programmed: every "
        "byte LittleFS wrote, its metadata and the copy of a file's last block an append makes included; "
        "erases in 4 KB blocks." % (measure, days))
    return [charts, flash]


if __name__ == "__main__":
    cli(tables)
