"""firmware/: the frozen-module manifest compiles for the ESP32-S3, and the OTA
partition table is sound and understood by tools/flash.py."""
import csv
import os
import subprocess
import sys

import mkimage
import pytest
from conftest import ROOT

FW = ROOT / "firmware"


def manifest_calls(name="manifest.py"):
    """[(function, args, kwargs)] of the manifest's calls, run as MicroPython's
    tools/manifestfile.py runs it: its own folder the working directory, the manifest
    functions in its globals."""
    calls = []

    def recorder(fn):
        return lambda *args, **kw: calls.append((fn, list(args), kw))

    g = {fn: recorder(fn) for fn in ("include", "require", "package", "module", "metadata")}
    cwd, path = os.getcwd(), list(sys.path)
    os.chdir(FW)
    try:
        exec(compile((FW / name).read_text(), str(FW / name), "exec"), g)
    finally:
        os.chdir(cwd)
        sys.path[:] = path
    return calls


def test_manifest_names_the_board_manifest_and_packages():
    calls = manifest_calls()
    names = [(f, a[0]) for f, a, _ in calls]
    assert ("include", "$(PORT_DIR)/boards/manifest.py") in names
    assert ("require", "logging") in names and ("require", "aiorepl") in names
    pkgs = [(a[0], kw.get("base_path")) for f, a, kw in calls if f == "package"]
    assert pkgs == [("mimi", "../lib")]
    assert (FW / "../lib/mimi/__init__.py").resolve().is_file()


def test_the_board_firmware_freezes_no_host_only_module():
    files = [kw["files"] for f, a, kw in manifest_calls() if f == "package"][0]
    lib = (FW / "../lib").resolve()
    every = sorted(p.relative_to(lib / "mimi").as_posix() for p in (lib / "mimi").rglob("*.py"))
    assert "board/esp32.py" in files and "__init__.py" in files and "devices/drivers/dht.py" in files
    assert sorted(files) == [p for p in every if not mkimage.host_only("mimi/" + p)]
    assert {"board/host.py", "board/host_io.py", "board/hostlib/dht.py", "devices/sim/parts.py"} <= set(every) - set(files)


def test_micropython_s_manifest_reader_freezes_no_host_only_module(tmp_path):
    # the manifest as a firmware build reads it (MicroPython's tools/manifestfile.py, from
    # the source `make frozen` builds from; the ESP32 port's own manifest stands empty)
    import mpbuild

    try:
        with mpbuild._Lock():
            tree, _ = mpbuild.source()
    except mpbuild.Missing as e:
        pytest.skip(str(e))
    (tmp_path / "boards").mkdir()
    (tmp_path / "boards" / "manifest.py").write_text("")
    sys.path.insert(0, str(tree / "tools"))
    try:
        import manifestfile
    finally:
        del sys.path[0]
    m = manifestfile.ManifestFile(manifestfile.MODE_FREEZE, {
        "MPY_DIR": str(tree), "PORT_DIR": str(tmp_path), "BOARD_DIR": str(tmp_path),
        "MPY_LIB_DIR": str(tree / "lib" / "micropython-lib")})
    m.execute(str(FW / "manifest.py"))
    frozen = {f.target_path for f in m.files()}
    assert {"logging.py", "aiorepl.py", "mimi/__init__.py", "mimi/board/esp32.py"} <= frozen
    assert {p for p in frozen if p.startswith("mimi/")} == {"mimi/" + p for p in mkimage.board_package()}
    assert not [p for p in frozen if mkimage.host_only(p)]


def test_unix_manifest_freezes_the_same_package_without_micropython_lib():
    # manifest_unix.py: the host's frozen build (docs/benchmarks.md §3c) measures the
    # board's; it must freeze what manifest.py does (and the host-only modules the
    # simulator imports: the whole package), from what a bare checkout has
    calls = manifest_calls("manifest_unix.py")
    pkgs = [(a[0], kw.get("base_path")) for f, a, kw in calls if f == "package"]
    assert pkgs == [("mimi", "../lib")]
    assert ("include", ["$(MPY_DIR)/extmod/asyncio"], {}) in calls
    assert not [c for c in calls if c[0] == "require"]


def test_every_manifest_module_compiles_for_xtensawin(tmp_path):
    bad, count = [], 0
    for f, args, kw in manifest_calls():
        if f != "package":
            continue
        base = (FW / kw.get("base_path", ".")).resolve()
        listed = kw.get("files")
        for src in sorted((base / args[0]).rglob("*.py")) if listed is None else \
                [base / args[0] / f for f in listed]:
            rel = src.relative_to(base)
            try:
                # the name a frozen module gets: its path inside the package tree
                out = tmp_path / rel.with_suffix(".mpy")
                out.parent.mkdir(parents=True, exist_ok=True)
                mkimage.compile_module(src, out, march="xtensawin")
                assert out.read_bytes()[:1] == b"M"
                count += 1
            except RuntimeError as e:
                bad.append(str(e))
    assert not bad, "\n".join(bad)
    assert count > 10


def partition_rows():
    rows = []
    for row in csv.reader(line for line in (FW / "partitions-ota.csv").read_text().splitlines()
                          if line.strip() and not line.lstrip().startswith("#")):
        name, ptype, sub, off, size = [c.strip() for c in row[:5]]
        rows.append((name, ptype, sub, int(off, 0), int(size, 0)))
    return rows


def test_ota_partition_table_layout():
    rows = partition_rows()
    names = [r[0] for r in rows]
    assert names == ["nvs", "otadata", "phy_init", "ota_0", "ota_1"]
    assert "vfs" not in names and "ffat" not in names
    end = 0x9000
    for name, ptype, sub, off, size in rows:
        assert off >= end, "%s overlaps the partition before it" % name
        if ptype == "app":
            assert off % 0x10000 == 0 and size >= 0x200000, name
        else:
            assert off % 0x1000 == 0, name
        end = off + size
    assert end == 0x4F0000  # where MicroPython's auto vfs starts; README.md says so
    assert "0x4F0000" in (FW / "README.md").read_text()


def test_flash_tool_places_the_filesystem_after_the_ota_slots(tmp_path):
    from test_flash import firmware

    types = {"app": 0, "data": 1}
    subs = {"nvs": 2, "ota": 0, "phy": 1, "ota_0": 0x10, "ota_1": 0x11}
    rows = [(n, types[t], subs[s], off, size) for n, t, s, off, size in partition_rows()]
    fw = firmware(tmp_path / "fw.bin", rows=rows)
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "flash.py"), "image", "--firmware", str(fw),
                        "--flash", "16M", "--out-dir", str(tmp_path)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "for 0x4f0000, 2832 blocks" in r.stdout
