#!/usr/bin/env python3
"""What each heap-capped MicroPython test needs (CPython; tests/conftest.py's HEAP).

  .venv/bin/python tests/heapneed.py [--lengths 1,40,80] [--below 1024] [TEST ...]

TEST: tests/mp/test_x.py::test_y or ...::test_y[param] (without the -mp32 suffix);
none: every test whose cap is under --below KB. For each test, at each length of
pytest's temp path (--basetemp of that many characters: the path moves the need by
a few KB), the smallest heap it passes in on the 64-bit interpreter and on the 32-bit
one, by bisection (MIMI_HEAP), both in the same pytest runs. Prints, per test, the
largest need on each word size and the share of its cap; a cap should sit ~10% over
the need (tests/conftest.py). The checkout's path moves it too: run it from a
checkout at another path for that.
"""
import argparse
import ast
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEP = 4  # KB
sys.path.insert(0, str(ROOT / "tools"))
import interpreters  # noqa: E402

HAS32 = interpreters.mp32()[0] is not None


def kb(size):
    size = size.lower()
    return int(float(size[:-1]) * (1024 if size.endswith("m") else 1)) if size[-1] in "km" else int(size) // 1024


def caps(below):
    """{node: (cap64 KB, cap32 KB)} of every capped test under `below` KB."""
    out = {}
    for path in sorted((ROOT / "tests" / "mp").glob("test_*.py")):
        tree = ast.parse(path.read_text())
        values = {}
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                    getattr(node.targets[0], "id", None) in ("HEAP", "HEAPSIZE", "PARAMS"):
                values[node.targets[0].id] = ast.literal_eval(node.value)
        for node in tree.body:
            if not (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_")):
                continue
            heap = values.get("HEAP", {}).get(node.name, values.get("HEAPSIZE"))
            if heap is None:
                continue
            pair = tuple(kb(h) for h in (heap if isinstance(heap, tuple) else (heap, heap)))
            if max(pair) >= below:
                continue
            base = "tests/mp/%s::%s" % (path.name, node.name)
            params = values.get("PARAMS") if node.args.args else None
            for p in params or [None]:
                out[base + ("[%s]" % p if p else "")] = pair
    return out


def items(node):
    """The pytest ids of a test's 64-bit and 32-bit runs."""
    return (node, node[:-1] + "-mp32]") if node.endswith("]") else (node, node + "[mp32]")


def run(node, heaps, base):
    """Pass (True/False) of the 64-bit and the 32-bit run at heaps (KB; None: not run)."""
    want = [i for i, h in zip(items(node), heaps) if h]
    env = dict(os.environ, MIMI_HEAP="%dk,%dk" % tuple(h or 64 for h in heaps))
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:xdist", "-q", "-rA", "-p", "no:cacheprovider",
                        "--basetemp=" + base] + want, capture_output=True, text=True, env=env, cwd=str(ROOT))
    seen = dict((m.group(2), m.group(1) == "PASSED") for m in
                re.finditer(r"^(PASSED|FAILED|ERROR) (\S+)", r.stdout, re.M))
    if any(m == "ERROR" for m in re.findall(r"^(ERROR) ", r.stdout, re.M)) or not set(want) <= set(seen):
        sys.exit("%s: no result at %s\n%s%s" % (node, heaps, r.stdout[-3000:], r.stderr[-2000:]))
    return [seen.get(i) if h else None for i, h in zip(items(node), heaps)]


def need(node, cap, base):
    """The smallest passing heap (KB) on each word size, bisected from the cap (0: no
    32-bit interpreter here)."""
    lo, hi = [None, None], [None, None]
    if not HAS32:
        lo[1] = hi[1] = 0
    probe = list(cap)
    while True:
        todo = [p if lo[i] is None or hi[i] is None or hi[i] - lo[i] > STEP else None for i, p in enumerate(probe)]
        if not any(todo):
            return hi
        for i, ok in enumerate(run(node, todo, base)):
            if ok is None:
                continue
            if ok:
                hi[i] = probe[i]
            else:
                lo[i] = probe[i]
            if hi[i] is None:
                if probe[i] > 3 * cap[i]:
                    sys.exit("%s: fails up to %d KB" % (node, probe[i]))
                probe[i] += max(16, probe[i] // 8)
            elif lo[i] is None:
                probe[i] = max(STEP, probe[i] * 3 // 4 // STEP * STEP)
            else:
                probe[i] = (lo[i] + hi[i]) // 2 // STEP * STEP


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tests", nargs="*")
    ap.add_argument("--lengths", default="1,40,80", help="temp path lengths (characters)")
    ap.add_argument("--below", type=int, default=1024, help="with no TEST: caps under this many KB")
    a = ap.parse_args()
    known = caps(1 << 30)
    todo = {t: known[t] for t in a.tests} if a.tests else caps(a.below)
    print("%-80s %12s %12s %14s" % ("test", "64-bit need", "32-bit need", "cap (64, 32)"))
    with tempfile.TemporaryDirectory(prefix="heapneed-") as tmp:
        for node, cap in todo.items():
            found = []
            for n in (int(x) for x in a.lengths.split(",")):
                base = tmp + "/" + "t" * max(1, n - len(tmp) - 1)
                found.append(need(node, cap, base))
            cols = []
            for i in (0, 1):
                got = [f[i] for f in found]
                cols.append("%d-%dk %3d%%" % (min(got), max(got), 100 * max(got) / cap[i]) if max(got) else "-")
            print("%-80s %12s %12s %14s" % (node, cols[0], cols[1], "%dk, %dk" % cap), flush=True)


if __name__ == "__main__":
    main()
