"""Run every benchmark and print its tables; --markdown PATH also writes them as
markdown (the raw material of docs/benchmarks.md).

  .venv/bin/python bench/run_all.py [--only boot,turn,...] [--markdown build/bench.md] [--smoke]

--smoke: every driver's shortest run (what `make test` runs to show the drivers work).
The markdown is written again after each driver (with each driver's time), so a run
that stops keeps the tables it made, and says which driver failed and what was not run.
"""
import argparse
import datetime
import importlib
import time
from pathlib import Path

import common

DRIVERS = ("boot", "turn", "minheap", "longrun", "history", "prompt", "gateway", "stall", "stream", "readings",
           "devices", "flashreads", "body", "hostshare")


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
    for k, name in enumerate(names):
        t0 = time.monotonic()
        try:
            tables = importlib.import_module(name).tables(1 if a.smoke else None)
        except BaseException as e:  # the tables so far are kept, the run still fails
            write(a.markdown, md + ["**bench/%s.py failed** (%s: %s); not run: %s\n" % (
                name, type(e).__name__, str(e).splitlines()[0][:200] if str(e) else "",
                ", ".join(names[k + 1:]) or "-")])
            raise
        took = time.monotonic() - t0
        for t in tables:
            print(t.text())
            md.append("### %s\n\n`.venv/bin/python bench/%s.py`\n\n%s\n%s\n" % (
                t.title, name, t.markdown(), t.notes))
        md.append("(bench/%s.py: %.0f s)\n" % (name, took))
        print("(%s: %.0f s)\n" % (name, took), flush=True)
        write(a.markdown, md + (["(so far: not run yet: %s)\n" % ", ".join(names[k + 1:])]
                                if k + 1 < len(names) else []))
    if a.markdown:
        print("markdown written to", a.markdown)


def write(path, md):
    """The markdown as it stands, written after each driver: an hour-long run that stops
    (a driver failing, Ctrl-C) keeps the tables it made."""
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text("\n".join(md))


if __name__ == "__main__":
    main()
