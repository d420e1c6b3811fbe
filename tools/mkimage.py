#!/usr/bin/env python3
"""Build the board's LittleFS filesystem image (CPython host tool).

The image holds what the board's flash filesystem holds: /boot.py, /main.py,
/lib/** (compiled to .mpy with mpy-cross; the host-only modules of HOST_ONLY only
in the simulator's images), /defaults/** (spiffs_data/, installed
into /spiffs by the firmware at boot), /certs/roots.pem when a CA bundle is
built, and optionally /config.json from a secrets file.

LittleFS v2, 4096-byte blocks, and a block count that matches the partition
MicroPython registers for the flash size (from 0x200000 to the end of flash):
a wrong block count makes the board refuse to mount the filesystem.
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "lib"))
from mimi import limits  # noqa: E402  (CPython-safe: const() falls back)

FLASH_SIZES = {"8M": 8 * 1024 * 1024, "16M": 16 * 1024 * 1024, "32M": 32 * 1024 * 1024}
# What a sync replaces. Other packages in /lib (micropython-lib's logging and aiorepl,
# which `make deploy MIP=1` installs) are the user's, as on a board: kept.
CODE_TOP = ("/boot.py", "/main.py", "/lib/mimi", "/defaults", "/certs")
# What only the host simulator imports, as paths under lib/: its board layer
# (board/host*.py), micropython-lib's drivers over its simulated buses (board/hostlib/)
# and its simulated parts (devices/sim/). A board never imports them (board/__init__.py
# picks esp32*), so its images, OTA bundles, deploys and frozen firmware
# (firmware/manifest.py) leave them out: ~38 KB of .mpy.
HOST_ONLY = ("mimi/board/host", "mimi/devices/sim/")


def host_only(rel):
    """rel: a module's path under lib/ ("mimi/board/host_io.py") or the board's
    ("/lib/mimi/board/host_io.mpy")."""
    rel = str(rel)
    return (rel[5:] if rel.startswith("/lib/") else rel).startswith(HOST_ONLY)


def board_package():
    """The mimi package's modules a board runs, as paths inside lib/mimi/ ("board/esp32.py"):
    what firmware/manifest.py freezes."""
    pkg = ROOT / "lib" / "mimi"
    return [p.relative_to(pkg).as_posix() for p in app_sources()
            if not host_only(p.relative_to(ROOT / "lib").as_posix())]


def block_count(flash):
    size = FLASH_SIZES[flash] if isinstance(flash, str) else int(flash)
    if size <= limits.FS_OFFSET:
        raise ValueError("flash size %d leaves no room for the filesystem" % size)
    return (size - limits.FS_OFFSET) // limits.BLOCK_SIZE


def mpy_cross():
    exe = Path(sys.executable).parent / "mpy-cross"
    return str(exe) if exe.exists() else (shutil.which("mpy-cross") or "mpy-cross")


def compile_module(src, out, march=None):
    # Written aside, then renamed: simulators and tests building at the same time
    # share build/lib and must never read a half-written .mpy.
    tmp = Path(out).with_name("%s.%d.tmp" % (Path(out).name, os.getpid()))
    cmd = [mpy_cross(), "-o", str(tmp), "-s", source_name(src)] + mpy_flags()
    if march:
        cmd.append("-march=" + march)
    cmd.append(str(src))
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        tmp.unlink(missing_ok=True)
        raise RuntimeError("mpy-cross failed on %s:\n%s%s" % (src, r.stdout, r.stderr))
    os.replace(tmp, out)


def source_name(src):
    """The file name a module's bytecode carries (tracebacks name it): its path on the
    board, /lib/mimi/....mpy, which is also the module's __file__ there, so both are one
    name (qstr) in RAM, not two: ~45 fewer in a settled boot's qstr pool."""
    src = Path(src)
    return "/" + str(src.relative_to(ROOT).with_suffix(".mpy")) if src.is_relative_to(ROOT) else src.name


def mpy_flags():
    """No line numbers in the bytecode: 6% less code in RAM (3-4 KB after boot on the
    board); a traceback still names the file and the function, with "line 1".
    MIMI_MPY_LINES=1 keeps them (for reading a traceback; the build recompiles)."""
    return [] if os.environ.get("MIMI_MPY_LINES") else ["-X", "no-source-lines"]


def app_sources():
    return sorted(p for p in (ROOT / "lib").rglob("*.py") if "__pycache__" not in p.parts)


def comment_only(src):
    """A package's __init__.py that is only a comment (its description): not compiled
    for the board. MicroPython imports a folder without one as a package all the same;
    with one, each package a boot imports keeps its __init__.mpy's name in the qstr pool
    (~40 B of RAM) and reads the file. The frozen build keeps them (no cost there)."""
    return src.name == "__init__.py" and all(
        not line.strip() or line.lstrip().startswith("#") for line in src.read_text().splitlines())


def compile_tree(build, march=None):
    """Compile lib/**/*.py into build/lib/**/*.mpy (not the comment-only __init__.py
    files); returns {device path: bytes}."""
    files = {}
    sources = [src for src in app_sources() if not comment_only(src)]
    stamp = build / "lib" / ".mpy-flags"  # a build made with other flags is made again
    flags = " ".join(mpy_flags()) + " -s /lib"  # (the source names of source_name())
    again = not stamp.exists() or stamp.read_text() != flags
    wanted = {build / src.relative_to(ROOT).with_suffix(".mpy") for src in sources}
    for old in (build / "lib").rglob("*.mpy") if (build / "lib").exists() else ():
        if old not in wanted:  # its source is gone: never let an import find it
            old.unlink(missing_ok=True)
            old.with_name(old.name + ".src").unlink(missing_ok=True)
    todo = []
    for src in sources:
        out = build / src.relative_to(ROOT).with_suffix(".mpy")
        out.parent.mkdir(parents=True, exist_ok=True)
        # By content, not by time: a branch switch or a moved file can leave an .mpy
        # newer than a source it was not compiled from.
        digest = hashlib.sha1(src.read_bytes()).hexdigest()
        seen = out.with_name(out.name + ".src")
        if again or march or not out.exists() or not seen.exists() or seen.read_text() != digest:
            todo.append((src, out, seen, digest))

    def compile_one(job):
        src, out, seen, digest = job
        compile_module(src, out, march)
        if not march:
            seen.write_text(digest)

    if todo:  # one mpy-cross per module: a fresh tree's 170 of them, on every core
        with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
            list(pool.map(compile_one, todo))
    for src in sources:
        rel = src.relative_to(ROOT)
        files["/" + str(rel.with_suffix(".mpy"))] = (build / rel.with_suffix(".mpy")).read_bytes()
    if again:
        stamp.write_text(flags)
    return files


def image_files(build, config=None, ca_bundle=None, sim=False):
    """Everything that goes on the board's filesystem, as {device path: bytes};
    sim=True: the simulator's, with the host-only modules (HOST_ONLY) too."""
    files = compile_tree(build)
    if not sim:
        files = {p: d for p, d in files.items() if not host_only(p)}
    for name in ("boot.py", "main.py"):
        files["/" + name] = (ROOT / name).read_bytes()
    data = ROOT / "spiffs_data"
    for p in sorted(data.rglob("*")):
        if p.is_file():
            files[limits.DEFAULTS_DIR + "/" + str(p.relative_to(data))] = p.read_bytes()
    if ca_bundle is None:
        ca_bundle = default_ca_bundle(build)
    if ca_bundle:
        files[limits.CA_BUNDLE] = Path(ca_bundle).read_bytes()
    if config:
        files[limits.CONFIG_PATH] = config_bytes(config)
    return files


def default_ca_bundle(build):
    sys.path.insert(0, str(ROOT / "tools"))
    import cabundle  # without its roots the board refuses every HTTPS server

    return cabundle.build(build / "roots.pem")


VALIDATE = r"""
import sys, json
sys.path[:] = [sys.argv[1]]
from mimi.config.settings import Config
c = Config(sys.argv[2] + ".out")
try:
    c.update(json.load(open(sys.argv[2])))
except ValueError as e:
    print(e)
    sys.exit(2)
"""


def config_bytes(path):
    """A secrets file (JSON of settings) -> /config.json bytes, validated by the
    firmware's own config module under MicroPython (so the rules are the same)."""
    import tempfile

    with open(path) as f:
        values = json.load(f)
    if not isinstance(values, dict):
        raise ValueError("%s: expected a JSON object of settings" % path)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "settings.json"
        src.write_text(json.dumps(values))
        mp = Path(sys.executable).parent / "micropython"
        r = subprocess.run([str(mp), "-c", VALIDATE, str(ROOT / "lib"), str(src)],
                           capture_output=True, text=True)
        if r.returncode:
            raise ValueError("%s: %s" % (path, (r.stdout + r.stderr).strip()))
        return (Path(tmp) / "settings.json.out").read_bytes()


def _lfs(blocks, buffer=None):
    from littlefs import LittleFS

    # MicroPython's own littlefs geometry (extmod/vfs_lfsx.c: read/prog 32, cache 128,
    # so files up to 128 bytes are inline). With littlefs-python's defaults (cache =
    # block size) files up to 512 bytes are inlined, and the board's first metadata
    # compaction then loses their tails (main.py came back as 0xFF after one boot).
    # The firmware mounts it with a 512-byte cache (boot.py, limits.FS_*), which takes
    # files inlined up to a smaller cache as they are; kept to 128 here, the folders of
    # the image's many small files hold less, and a look-up in them reads less.
    fs = LittleFS(block_size=limits.BLOCK_SIZE, block_count=blocks, name_max=255, mount=False,
                  read_size=32, prog_size=32, cache_size=128, lookahead_size=32)
    if buffer is None:
        fs.format()
    else:
        fs.context.buffer = bytearray(buffer)
    fs.mount()
    return fs


def _write_all(fs, files):
    for path, data in sorted(files.items()):
        parent = os.path.dirname(path)
        if parent and parent != "/":
            fs.makedirs(parent, exist_ok=True)
        with fs.open(path, "wb") as f:
            f.write(data)


def build_image(out, flash="8M", files=None, build=None):
    blocks = block_count(flash)
    if files is None:
        files = image_files(build or ROOT / "build")
    fs = _lfs(blocks)
    _write_all(fs, files)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_bytes(fs.context.buffer)
    return blocks


def _rmtree(fs, path):
    try:
        entries = fs.scandir(path)
    except Exception:
        return
    for e in list(entries):
        full = path.rstrip("/") + "/" + e.name
        if e.type == 2:  # directory
            _rmtree(fs, full)
        else:
            fs.remove(full)
    fs.remove(path)


def sync_image(path, files):
    """Replace the code and default files in an existing image (forgetting any OTA
    update state); user data stays. Only files that differ are written, so a full
    flash takes an unchanged build; OSError (ENOSPC) when the new code does not fit,
    and then the image file is left as it was."""
    data = Path(path).read_bytes()
    blocks = len(data) // limits.BLOCK_SIZE
    fs = _lfs(blocks, data)
    # An update's state and kept previous version (/ota) describe code replaced here.
    _remove(fs, limits.OTA_DIR)
    for top in CODE_TOP:  # what the build no longer has
        for old in _files(fs, top):
            if old not in files:
                fs.remove(old)
    changed = {}
    for p, d in files.items():
        if p == limits.CONFIG_PATH:
            continue
        try:
            with fs.open(p, "rb") as f:
                if f.read() == d:
                    continue
        except Exception:  # not there yet
            pass
        changed[p] = d
    try:
        _write_all(fs, changed)
    except Exception as e:  # littlefs-python's LittleFSError
        raise OSError(28 if "NOSPC" in str(e) else 5, "image %s: %s" % (path, e))
    Path(path).write_bytes(fs.context.buffer)
    return blocks


def _remove(fs, top):
    try:
        st = fs.stat(top)
    except Exception:
        return
    if st.type == 2:
        _rmtree(fs, top)
    else:
        fs.remove(top)


def _files(fs, top):
    """Every file at or below `top` in the image."""
    try:
        st = fs.stat(top)
    except Exception:
        return []
    if st.type != 2:
        return [top]
    out = []
    for e in fs.scandir(top):
        out += _files(fs, top.rstrip("/") + "/" + e.name)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", default=str(ROOT / "build" / "fs.img"))
    ap.add_argument("--flash", choices=sorted(FLASH_SIZES), default="8M")
    ap.add_argument("--config", help="JSON settings file baked into /config.json")
    ap.add_argument("--sim", action="store_true", help="the simulator's image (with its host-only modules)")
    a = ap.parse_args(argv)
    build = ROOT / "build"
    files = image_files(build, config=a.config, sim=a.sim)
    blocks = build_image(a.out, a.flash, files)
    print("%s: LittleFS, %d blocks of %d bytes (%s flash), %d files" % (
        a.out, blocks, limits.BLOCK_SIZE, a.flash, len(files)))


if __name__ == "__main__":
    main()
