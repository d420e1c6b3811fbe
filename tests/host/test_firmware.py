"""firmware/: the frozen-module manifest compiles for the ESP32-S3, and the OTA
partition table is sound and understood by tools/flash.py."""
import ast
import csv
import subprocess
import sys

import mkimage
from conftest import ROOT

FW = ROOT / "firmware"


def manifest_calls(name="manifest.py"):
    tree = ast.parse((FW / name).read_text())
    calls = []
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            c = node.value
            args = [ast.literal_eval(a) for a in c.args]
            kw = {k.arg: ast.literal_eval(k.value) for k in c.keywords}
            calls.append((c.func.id, args, kw))
    return calls


def test_manifest_names_the_board_manifest_and_packages():
    calls = manifest_calls()
    names = [(f, a[0]) for f, a, _ in calls]
    assert ("include", "$(PORT_DIR)/boards/manifest.py") in names
    assert ("require", "logging") in names and ("require", "aiorepl") in names
    pkgs = [(a[0], kw.get("base_path")) for f, a, kw in calls if f == "package"]
    assert pkgs == [("mimi", "../lib")]
    assert (FW / "../lib/mimi/__init__.py").resolve().is_file()


def test_unix_manifest_freezes_the_same_package_without_micropython_lib():
    # manifest_unix.py: the host's frozen build (docs/benchmarks.md §3c) measures the
    # board's; it must freeze what manifest.py does, from what a bare checkout has
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
        for src in sorted((base / args[0]).rglob("*.py")):
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
