"""Session history load time and heap vs session file size (10 KB, 100 KB, 1 MB JSONL
on a LittleFS image): sessions.load() reads only the file's tail, so its cost should
not grow with the file.

  .venv/bin/python bench/history.py [-n RUNS]
"""
import tempfile
from pathlib import Path

from common import Table, cli, make_image, mp_args, run_mp

SIZES = (10 * 1024, 100 * 1024, 1024 * 1024)


def tables(n=None):
    n = n or 21
    with tempfile.TemporaryDirectory() as tmp:
        img = make_image(Path(tmp) / "fs.img")
        rc, recs, out = run_mp("storage.py", mp_args(img, mode="sessions", n=n, sizes=SIZES))
        if rc or len(recs) != len(SIZES):
            raise RuntimeError(out[-3000:])
    t = Table("sessions.load() vs session file size (median of %d)" % n,
              ["file", "lines", "messages loaded", "bytes read", "load ms",
               "allocated per load", "held by the result", "whole-file read ms (contrast)",
               "whole-file read allocates", "short heap: the tail's read allocates",
               "short heap: held after the tail's read"])
    for r in recs:
        t.add("%d KB" % (r["size"] // 1024), r["lines"], r["msgs"], r["read"], r["us"] / 1000,
              "%.1f KB" % (r["churn"] / 1024), "%.1f KB" % (r["held"] / 1024),
              r["whole_us"] / 1000, "%.1f KB" % (r["whole_churn"] / 1024),
              "%.1f KB" % (r["tail_churn"] / 1024), "%.1f KB" % (r["tail_held"] / 1024))
    t.notes = ("~520-byte JSONL lines written straight to /spiffs/sessions/ on an 8 MB LittleFS "
               "image (not through append(), which compacts files past 64 KB). allocated = "
               "gc.mem_alloc() growth with the GC off during one load; bytes read counted "
               "through a wrapped open(). Short heap: sessions._tail() as load(key, encode) "
               "calls it when mimi.short() (each text found in the file, sent from there), "
               "held = what its 20 messages keep once read, before load() makes them "
               "Regions.")
    return [t]


if __name__ == "__main__":
    cli(tables)
