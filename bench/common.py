"""Shared helpers of the benchmark drivers (CPython).

The drivers run the real firmware under .venv/bin/micropython (from the compiled
tree build/lib, on a LittleFS image made by tools/mkimage.py, as tools/sim does) and
use the fake servers of tests/fakes; the whole simulator (tools/sim) is driven with the
host tests' helper, tests/simproc.py (`Sim`). Everything binds 127.0.0.1 only.
"""
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
BUILD = ROOT / "build"
MP = str(Path(sys.executable).parent / "micropython")
# The 32-bit MicroPython of ../shared/mp32 (the board's object sizes); MP32=path overrides.
MP32 = os.environ.get("MP32") or str(ROOT.parent / "shared" / "mp32" / "micropython")
for p in (ROOT / "tests", ROOT / "tools", ROOT / "lib"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import interpreters as interps  # noqa: E402  (tools/)
import mkimage  # noqa: E402  (tools/)
from fakes import tlsca  # noqa: E402  (tests/fakes/)
from simproc import Sim  # noqa: E402,F401  (tests/simproc.py: tools/sim as a child process)


# --- statistics and tables -------------------------------------------------------

def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def pct(xs, p):
    """Nearest-rank percentile (p in 0..100)."""
    s = sorted(xs)
    k = max(0, min(len(s) - 1, -(-p * len(s) // 100) - 1))
    return s[int(k)]


class Table:
    def __init__(self, title, header, rows=None, notes=""):
        self.title = title
        self.header = header
        self.rows = rows or []
        self.notes = notes

    def add(self, *row):
        self.rows.append([_fmt(x) for x in row])

    def text(self):
        cells = [self.header] + self.rows
        w = [max(len(str(r[i])) for r in cells) for i in range(len(self.header))]
        line = lambda r: "  ".join(str(c).ljust(w[i]) for i, c in enumerate(r))  # noqa: E731
        out = [self.title, line(self.header), line(["-" * x for x in w])]
        out += [line(r) for r in self.rows]
        if self.notes:
            out.append(self.notes)
        return "\n".join(out) + "\n"

    def markdown(self):
        out = ["| " + " | ".join(self.header) + " |", "|" + "---|" * len(self.header)]
        out += ["| " + " | ".join(str(c) for c in r) + " |" for r in self.rows]
        return "\n".join(out) + "\n"


def _fmt(x):
    if isinstance(x, float):
        return "%.1f" % x if abs(x) >= 10 else "%.2f" % x
    return str(x)


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ver = subprocess.run([MP, "-c", "import sys; print(sys.version)"], capture_output=True,
                         text=True).stdout.strip()
    return "%s, %d cores, %s; micropython sys.version %r" % (cpu, os.cpu_count(), platform.platform(), ver)


# --- images and the MicroPython side ---------------------------------------------

def certs(tmp):
    return tlsca.make(Path(tmp) / "certs")


def make_image(path, ca=None, flash="8M"):
    """A fresh board image as tools/sim makes it (code, defaults), with `ca` (PEM
    path) as /certs/roots.pem so the firmware trusts the fake servers' test CA."""
    files = mkimage.image_files(BUILD, ca_bundle=ca, sim=True)
    mkimage.build_image(path, flash, files)
    return str(path)


def _runs(mp):
    try:
        return subprocess.run([mp, "-c", "pass"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


_no_frozen = set()


def frozen(bits):
    """The unix port with the mimi package frozen in, as on a frozen board build
    (tools/mpbuild.py's, which `make bench` builds at both word sizes, brought up to
    date with lib/ here; $MP32_FROZEN / $MP64_FROZEN name others, empty: none) -> path
    or None. A smoke run builds none: it uses those already current."""
    path, why = interps.frozen(bits, build=not _smoke)
    if why and bits not in _no_frozen:
        _no_frozen.add(bits)
        print("bench: no %d-bit frozen rows (%s)" % (bits, why), file=sys.stderr)
    return path


def interpreters():
    """[(label, path)]: the .venv's 64-bit MicroPython, the 32-bit one when it runs here,
    and the frozen builds ("32-bit frozen", "64-bit frozen"). BENCH_ONLY (labels,
    comma-separated, e.g. "32-bit frozen") keeps only those."""
    only = [x.strip() for x in os.environ.get("BENCH_ONLY", "").split(",") if x.strip()]
    out = [("64-bit", MP)]
    if _runs(MP32):
        out.append(("32-bit", MP32))
    for bits in (32, 64):
        label = "%d-bit frozen" % bits
        if not only or label in only:
            mp = frozen(bits)
            if mp:
                out.append((label, mp))
    return [(label, mp) for label, mp in out if not only or label in only]


def run_mp(script, args, heap=None, timeout=120, mp=MP):
    """Run bench/mp/<script> under MicroPython; -> (returncode, [BENCH records], output).
    The arguments travel in a JSON file: the unix port aborts on an argv item over 255
    bytes ("FATAL: uncaught NLR")."""
    import tempfile

    cmd = [mp]
    if heap:
        cmd += ["-X", "heapsize=" + heap]
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="bench-args-") as f:
        json.dump(args, f)
        f.flush()
        try:
            r = subprocess.run(cmd + [str(BENCH / "mp" / script), f.name],
                               capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            return -1, [], "timeout: %s" % ((e.stdout or b"")[-2000:],)
    recs = [json.loads(line[6:]) for line in r.stdout.splitlines() if line.startswith("BENCH ")]
    return r.returncode, recs, r.stdout + r.stderr


def mp_args(image, **kw):
    return dict(kw, image=str(image), lib=str(BUILD / "lib"), mp_dir=str(BENCH / "mp"))


_smoke = False


def smoke(on=None):
    """True in a smoke run (--smoke, what `make test` runs: tests/host/test_bench_smoke.py):
    every driver's shortest pass through all its code, one turn or run per case, each scan
    cut to one try, to show that it works; its figures mean nothing. smoke(True) starts one."""
    global _smoke
    if on is not None:
        _smoke = on
    return _smoke


SMOKE_HELP = "one short run of every case (a check that the driver works; no real figures)"


def cli(tables_fn):
    """Standard main(): print the tables a driver returns."""
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=None, help="repetitions (driver default if unset)")
    ap.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    a = ap.parse_args()
    smoke(a.smoke)
    for t in tables_fn(1 if a.smoke else a.n):
        print(t.text())
