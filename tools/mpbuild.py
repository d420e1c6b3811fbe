#!/usr/bin/env python3
"""Build MicroPython's unix port with the firmware frozen in, from MicroPython's source.

  tools/mpbuild.py [--bits 32] [--bits 64] [--src PATH]     (CPython)

The interpreter a custom board firmware would be: the `mimi` package (and asyncio)
frozen in by firmware/manifest_unix.py, so its bytecode and names live in the binary
and not in the GC heap, at the board's word size (32) or the host's (64). Built into
build/mpy/ as build/mpy/micropython-frozen32 (and -frozen64), with mpy-cross beside it:
nothing is written into the source and nothing is downloaded.

The source (--src, else $MPY_SRC, else ../shared/micropython/ next to the repository):
a MicroPython checkout (a folder with py/ and ports/unix/), or a folder holding a
micropython-*.tar.gz of one, or that tarball; it is unpacked once into build/mpy/src/.
A build is redone only when its stamp changes: lib/'s content, the manifest, the
source (the tarball's hash, a checkout's commit) or the build flags; the C build
itself is incremental. Concurrent calls (make, pytest workers) take a lock on
build/mpy/ and the binary is replaced by a rename, so a run never sees half of one.

Without the source, or (32-bit) without a compiler that makes 32-bit programs
(Debian: gcc-multilib and libc6-dev-i386, which `make frozen` installs when root),
it says so in one line and exits 0: what needs the build is skipped.

The same source gives micropython-lib's optional `logging` and `aiorepl` compiled as
`mpremote mip install` puts them on a board (/lib/logging.mpy, /lib/aiorepl.mpy):
mip_packages() -> build/mip/, for the tests that run the firmware with them.
"""
import argparse
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "build" / "mpy"
MIP_OUT = ROOT / "build" / "mip"
MANIFEST = ROOT / "firmware" / "manifest_unix.py"
DEFAULT_SRC = ROOT.parent / "shared" / "micropython"
# As ../shared/mp32 and the unix port's CI builds without libffi and berkeley-db.
FLAGS = ["MICROPY_PY_FFI=0", "MICROPY_PY_BTREE=0"]
WORD = {32: ["MICROPY_FORCE_32BIT=1"], 64: []}
# micropython-lib's optional packages (tools/deploy.py --mip): name -> path in the source
MIP = {"logging": "lib/micropython-lib/python-stdlib/logging/logging.py",
       "aiorepl": "lib/micropython-lib/micropython/aiorepl/aiorepl.py"}
VERSION = "1"  # of this build recipe: a change here makes every build again


class Missing(Exception):
    """The build cannot be made here (no source, no compiler): its users skip."""


def binary(bits):
    return OUT / ("micropython-frozen%d" % bits)


def source(src=None):
    """-> (a MicroPython source tree, its identity for the stamp). Unpacks a tarball
    into build/mpy/src/ once (under the lock). Missing when there is none."""
    given = src or os.environ.get("MPY_SRC") or str(DEFAULT_SRC)
    path = Path(given).expanduser().resolve()
    if (path / "py" / "mpconfig.h").is_file() and (path / "ports" / "unix").is_dir():
        return path, "checkout %s %s" % (path, _git_head(path))
    tarballs = sorted(path.glob("micropython-*.tar.gz")) if path.is_dir() else \
        [path] if path.is_file() else []
    if not tarballs:
        raise Missing("no MicroPython source at %s (MPY_SRC=... names a checkout or a "
                      "micropython-*.tar.gz)" % given)
    return _unpack(tarballs[-1])


def _git_head(path):
    try:
        r = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True,
                           text=True, timeout=30)
        return r.stdout.strip() if r.returncode == 0 else "(not a git checkout)"
    except OSError:
        return "(no git)"


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _unpack(tarball):
    digest = _sha256(tarball)
    dest = OUT / "src" / digest[:16]
    if not (dest / ".unpacked").exists():
        tmp = Path(tempfile.mkdtemp(prefix="unpack-", dir=OUT))
        with tarfile.open(tarball) as tf:
            tops = {m.name.split("/", 1)[0] for m in tf.getmembers()}
            if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4: no links out, no devices
                tf.extractall(tmp, filter="data")
            else:
                tf.extractall(tmp)
        top = tmp / tops.pop() if len(tops) == 1 else tmp
        (top / ".unpacked").write_text(str(tarball) + "\n")
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(top, dest)
        shutil.rmtree(tmp, ignore_errors=True)
    return dest, "tarball %s sha256 %s" % (tarball.name, digest)


def stamp(bits, src_id):
    """What a build depends on beyond MicroPython's own make rules: the frozen files'
    content (every file under lib/), the manifest, the source and the flags."""
    h = hashlib.sha256()
    for part in (VERSION, src_id, " ".join(FLAGS + WORD[bits]), MANIFEST.read_bytes()):
        h.update(part.encode() if isinstance(part, str) else part)
    for p in sorted((ROOT / "lib").rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            h.update(str(p.relative_to(ROOT)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def compiler(bits):
    """Raise Missing unless the C compiler makes and links programs of this word size."""
    cc = os.environ.get("CC", "cc")
    with tempfile.TemporaryDirectory() as tmp:
        c = Path(tmp) / "t.c"
        c.write_text("#include <stdio.h>\n#include <math.h>\n"
                     "int main(void) { printf(\"%d\", (int)sizeof(void *)); return 0; }\n")
        try:
            r = subprocess.run([cc, "-m%d" % bits, str(c), "-o", str(Path(tmp) / "t"), "-lm"],
                               capture_output=True, text=True, timeout=120)
        except OSError:
            raise Missing("no C compiler (%s)" % cc)
        if r.returncode:
            extra = " (Debian: apt-get install gcc-multilib libc6-dev-i386)" if bits == 32 else ""
            raise Missing("%s cannot build %d-bit programs%s" % (cc, bits, extra))


class _Lock:
    """An exclusive flock on build/mpy/.lock: one build at a time, across processes."""

    def __enter__(self):
        OUT.mkdir(parents=True, exist_ok=True)
        self.f = open(OUT / ".lock", "w")
        fcntl.flock(self.f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.f, fcntl.LOCK_UN)
        self.f.close()


def _same_source(folder, src_id):
    """A build folder made from another source is emptied: make goes by file times,
    and another tree's files need not be newer than the objects made here."""
    mark = folder / ".source"
    if folder.exists() and (not mark.exists() or mark.read_text() != src_id):
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    mark.write_text(src_id)


def _make(args, log):
    # Not the calling make's flags and command-line variables (make test X=...).
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    r = subprocess.run(["make", "-s"] + args, capture_output=True, text=True, env=env)
    if r.returncode:
        raise RuntimeError("%s failed:\n%s" % (" ".join(["make"] + args),
                                              (r.stdout + r.stderr)[-4000:]))
    log.write(r.stdout + r.stderr)


def _jobs():
    return str(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count())


def current(bits, src=None):
    """-> (the built interpreter, None) when its stamp is current, else (None, why not);
    builds nothing."""
    try:
        with _Lock():
            tree, src_id = source(src)
            if _fresh(bits, stamp(bits, src_id)):
                return str(binary(bits)), None
            return None, "%s is not built for this lib/ (tools/mpbuild.py --bits %d)" % (
                binary(bits).relative_to(ROOT), bits)
    except Missing as e:
        return None, str(e)


def _stamp_file(bits):
    return OUT / ("frozen%d.stamp" % bits)


def _fresh(bits, want):
    f = _stamp_file(bits)
    return binary(bits).exists() and f.exists() and f.read_text() == want


def ensure(bits, src=None, say=print):
    """The frozen interpreter of this word size, built if its stamp changed -> (path,
    None), or (None, why not) when it cannot be built here."""
    try:
        with _Lock():
            tree, src_id = source(src)
            want = stamp(bits, src_id)
            exe, stamp_file = binary(bits), _stamp_file(bits)
            if _fresh(bits, want):
                return str(exe), None
            compiler(bits)
            t0 = time.monotonic()
            mpy_cross = OUT / "mpy-cross" / "mpy-cross"
            port = OUT / ("unix%d" % bits)
            for folder in (mpy_cross.parent, port):
                _same_source(folder, src_id)
            with open(OUT / ("build%d.log" % bits), "w") as log:
                _make(["-C", str(tree / "mpy-cross"), "-j" + _jobs(),
                       "BUILD=%s" % mpy_cross.parent], log)
                # The frozen modules are made again from lib/ (make_manifest goes by
                # file times, which a checkout or a copy need not move forward).
                shutil.rmtree(port / "frozen_mpy", ignore_errors=True)
                _make(["-C", str(tree / "ports" / "unix"), "-j" + _jobs(), "BUILD=%s" % port,
                       "MICROPY_MPYCROSS=%s" % mpy_cross, "FROZEN_MANIFEST=%s" % MANIFEST]
                      + FLAGS + WORD[bits], log)
            tmp = exe.with_name(exe.name + ".tmp%d" % os.getpid())
            shutil.copy2(port / "micropython", tmp)
            os.replace(tmp, exe)
            tmp = stamp_file.with_name(stamp_file.name + ".tmp%d" % os.getpid())
            tmp.write_text(want)
            os.replace(tmp, stamp_file)
            say("frozen: built %s (%d-bit, from %s) in %.0f s" % (
                exe.relative_to(ROOT), bits, src_id.split(" sha256")[0], time.monotonic() - t0))
            return str(exe), None
    except Missing as e:
        return None, str(e)


def _from_source(modules, out, make, src=None):
    """make(source .py, out, name) for each {name: path in the source}, under the build
    lock -> ({name: what make returned}, None), or (None, why not)."""
    try:
        with _Lock():
            tree, _ = source(src)
            out.mkdir(parents=True, exist_ok=True)
            done = {}
            for name, rel in modules.items():
                py = tree / rel
                if not py.is_file():
                    raise Missing("%s has no %s (micropython-lib)" % (tree, rel))
                done[name] = make(py, out, name)
            return done, None
    except Missing as e:
        return None, str(e)


def mip_packages(src=None):
    """micropython-lib's logging and aiorepl from the source, compiled as mip installs
    them -> ({board path: local .mpy}, None), or (None, why not)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import mkimage

    def compile_one(py, out, name):
        tmp = out / (name + ".tmp%d.mpy" % os.getpid())
        r = subprocess.run([mkimage.mpy_cross(), "-o", str(tmp), "-s", name + ".py", str(py)],
                           capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError("mpy-cross failed on %s:\n%s" % (py, r.stdout + r.stderr))
        os.replace(tmp, out / (name + ".mpy"))
        return str(out / (name + ".mpy"))

    done, why = _from_source(MIP, MIP_OUT, compile_one, src)
    return ({"/lib/%s.mpy" % n: p for n, p in done.items()} if done else None), why


def copy_modules(modules, out, src=None):
    """Plain .py files of the source ({name: path in the source}) copied to out/NAME.py
    -> (out, None), or (None, why not): micropython-lib's drivers the board's firmware
    freezes, for the tests that run the real ones."""
    def copy_one(py, out, name):
        dst = out / (name + ".py")
        if not dst.is_file() or dst.read_bytes() != py.read_bytes():
            tmp = dst.with_name("%s.%d.tmp" % (dst.name, os.getpid()))
            shutil.copyfile(py, tmp)
            os.replace(tmp, dst)

    done, why = _from_source(modules, out, copy_one, src)
    return (out if done is not None else None), why


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bits", type=int, action="append", choices=(32, 64),
                    help="word size (repeatable; default 32)")
    ap.add_argument("--src", help="MicroPython checkout or tarball (default: $MPY_SRC, "
                                  "else ../shared/micropython/)")
    a = ap.parse_args(argv)
    for bits in a.bits or [32]:
        said = []
        exe, why = ensure(bits, a.src, say=lambda line: (said.append(line), print(line, flush=True)))
        if why:
            print("frozen: no %d-bit frozen build (%s): its tests and benchmark rows are "
                  "skipped" % (bits, why))
        elif not said:
            print("frozen: %s is up to date" % Path(exe).relative_to(ROOT))


if __name__ == "__main__":
    main()
