"""Run every benchmark and print its tables; --markdown PATH also writes them as
markdown (the raw material of docs/benchmarks.md).

  .venv/bin/python bench/run_all.py [--only boot,turn,...] [--markdown build/bench.md] [--smoke]

--smoke: every driver's shortest run (what `make test` runs to show the drivers work).
"""
import argparse
import datetime
import importlib
import time
from pathlib import Path

import common

DRIVERS = ("boot", "turn", "minheap", "longrun", "history", "prompt", "gateway", "stall", "stream", "readings",
           "devices", "flashreads", "body")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", help="comma-separated subset of " + ",".join(DRIVERS))
    ap.add_argument("--markdown", metavar="PATH", help="also write the tables as markdown")
    ap.add_argument("--smoke", action="store_true", help=common.SMOKE_HELP)
    a = ap.parse_args()
    common.smoke(a.smoke)
    names = a.only.split(",") if a.only else DRIVERS
    md = ["Measured %s UTC on: %s\n" % (
        datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"), common.machine())]
    for name in names:
        t0 = time.monotonic()
        tables = importlib.import_module(name).tables(1 if a.smoke else None)
        took = time.monotonic() - t0
        for t in tables:
            print(t.text())
            md.append("### %s\n\n`.venv/bin/python bench/%s.py`\n\n%s\n%s\n" % (
                t.title, name, t.markdown(), t.notes))
        print("(%s: %.0f s)\n" % (name, took))
    if a.markdown:
        Path(a.markdown).parent.mkdir(parents=True, exist_ok=True)
        Path(a.markdown).write_text("\n".join(md))
        print("markdown written to", a.markdown)


if __name__ == "__main__":
    main()
