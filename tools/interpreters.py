"""The MicroPython interpreters tests and benchmarks run the firmware on (CPython).

The 64-bit unix port of .venv, and the 32-bit v1.28 of ../shared/mp32 (the board's
word size: 31-bit small ints, 4-byte object fields) when it runs here: `$MP32` names
another, `MP32=` (empty) none. See ../shared/mp32/README.md.

The frozen ones: MicroPython v1.28.0's unix port with the firmware frozen in, as a
custom board firmware has it (tools/mpbuild.py builds them into build/mpy/ from
../shared/micropython/ or `$MPY_SRC`); `$MP32_FROZEN` / `$MP64_FROZEN` name others,
empty: none.
"""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MP32_DEFAULT = ROOT.parent / "shared" / "mp32" / "micropython"  # the Makefile's default too
# 32-bit, and able to end with a thread running (needs the 32-bit libgcc_s; Makefile: mp32)
MP32_PROBE = ("import _thread, time, sys\n_thread.start_new_thread(time.sleep, (5,))\n"
              "time.sleep_ms(20)\nprint(sys.maxsize)\nsys.exit(0)")
_mp32 = []
_frozen = {}


def micropython():
    exe = Path(sys.executable).parent / "micropython"
    if not exe.exists():
        raise RuntimeError("micropython not found next to %s; run `make setup`" % sys.executable)
    return str(exe)


def mp32():
    """-> (path of the 32-bit interpreter or None, why not)."""
    if not _mp32:
        path = os.environ.get("MP32", str(MP32_DEFAULT))
        why = None
        if not path:
            why = "MP32 is empty"
        elif not os.access(path, os.X_OK):
            why = "%s not found" % path
        else:
            try:
                r = subprocess.run([path, "-c", MP32_PROBE], capture_output=True, text=True, timeout=30)
                if r.returncode or r.stdout.strip() != str(2 ** 31 - 1):
                    why = "%s does not run as a 32-bit MicroPython: %s" % (
                        path, (r.stdout + r.stderr).strip()[:200])
            except OSError as e:
                why = "%s cannot start: %s" % (path, e)
        _mp32.append((None if why else path, why))
    return _mp32[0]


def all_present():
    """[(label, path)]: "64-bit" always, "32-bit" when it runs here."""
    out = [("64-bit", micropython())]
    path, _ = mp32()
    if path:
        out.append(("32-bit", path))
    return out


def frozen(bits, build=True):
    """-> (path of the frozen `bits`-bit interpreter or None, why not). Unless
    $MP32_FROZEN / $MP64_FROZEN names one, tools/mpbuild.py's build, made or brought up
    to date with lib/ first (build=False: only an up-to-date one)."""
    if (bits, build) not in _frozen:
        var = "MP%d_FROZEN" % bits
        path, why = os.environ.get(var), None
        if path == "":
            why = "%s is empty" % var
        elif path is None:
            import mpbuild

            if build:
                path, why = mpbuild.ensure(bits, say=lambda line: print(line, file=sys.stderr))
            else:
                path, why = mpbuild.current(bits)
        if path and not why:
            why = _check(path, bits)
        _frozen[bits, build] = (None if why else path, why)
    return _frozen[bits, build]


def _check(path, bits):
    """None when path runs as a MicroPython of this word size with the package frozen."""
    if not os.access(path, os.X_OK):
        return "%s not found" % path
    code = MP32_PROBE.replace("sys.exit(0)", "import mimi\nprint(mimi.__file__)\nsys.exit(0)")
    try:
        r = subprocess.run([path, "-c", code], capture_output=True, text=True, timeout=30, cwd="/")
    except (OSError, subprocess.TimeoutExpired) as e:
        return "%s cannot start: %s" % (path, e)
    if r.returncode or r.stdout.split() != [str(2 ** (bits - 1) - 1), "mimi/__init__.py"]:
        return "%s does not run as a %d-bit MicroPython with mimi frozen in: %s" % (
            path, bits, (r.stdout + r.stderr).strip()[:200])
    return None
