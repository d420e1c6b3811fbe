"""A board running the firmware from before the package map (lib/mimi/ with 26 loose
modules: console.py, ota.py, tgsend.py...) updated to this one keeps none of the old
version's modules in /lib: neither `make deploy` (tools/deploy.py, run by the old
version's own staging code) nor `ota_update()` (the old version's OTA code) leaves a
file the new version lacks (a leftover lib/mimi/console.mpy beside lib/mimi/console/
would waste flash and could shadow it). The old version, commit OLD_LAYOUT, is
taken from this repository's history and runs in its own tools/sim (with this
tools/simboot.py, which boots either layout); the test is skipped where that history
is not there (a shallow clone)."""
import io
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from conftest import ROOT
from simproc import Sim

sys.path.insert(0, str(ROOT / "tools"))
import bundle  # noqa: E402
import deploy  # noqa: E402

OLD_LAYOUT = "e4cb811"  # main before lib/mimi/ became one folder per part
MPREMOTE = str(Path(sys.executable).parent / "mpremote")
# Every file under /lib, one "FILE <path>" line each; LIST_LIB: as one line for the console.
LIST_CODE = ("import os\ndef w(p):\n for e in os.ilistdir(p):\n  q = p + '/' + e[0]\n"
             "  if e[1] == 0x4000: w(q)\n  else: print('FILE', q)\nw('/lib')\nprint('LISTED')\n")
LIST_LIB = "exec(%r)" % LIST_CODE


@pytest.fixture(scope="module")
def old_tree(tmp_path_factory):
    """The old version's checkout (lib, tools, boot/main, default files), its code compiled."""
    r = subprocess.run(["git", "-C", str(ROOT), "archive", OLD_LAYOUT, "lib", "tools", "boot.py",
                        "main.py", "spiffs_data", "requirements.txt", "Makefile"],
                       capture_output=True, timeout=120)
    if r.returncode:
        pytest.skip("commit %s is not in this checkout's history: %s" % (OLD_LAYOUT, r.stderr.decode()[:200]))
    where = tmp_path_factory.mktemp("old") / "mimiclaw"
    where.mkdir()
    tarfile.open(fileobj=io.BytesIO(r.stdout)).extractall(where)
    (where / ".venv").symlink_to((ROOT / ".venv").resolve())  # the same pinned tools
    # The simulator's boot shim (the board's ROM, as it were) must boot both versions:
    # this one's does, the old one's knew only its own layout.
    for shim in ("simboot.py", "simsetup.py"):
        (where / "tools" / shim).write_bytes((ROOT / "tools" / shim).read_bytes())
    assert (where / "lib" / "mimi" / "console.py").exists() and not (where / "lib" / "mimi" / "console").exists()
    return where


def old_sim(old_tree, tmp_path, **kw):
    """The old version's own simulator on tmp_path/fs.img (its code synced in)."""
    cmd = [sys.executable, str(old_tree / "tools" / "sim"), "--fs", str(tmp_path / "fs.img"),
           "--set", "ws_port=0"]
    if kw.get("pty"):
        cmd += ["--pty", "--pty-link", str(tmp_path / "tty")]
    sim = Sim(cmd, console=kw.get("console", False))
    if kw.get("pty"):
        sim.tty = str(tmp_path / "tty")
    return sim


def lib_files(text):
    return {line.split(" ", 1)[1].strip() for line in text.splitlines() if line.startswith("FILE /lib/")}


def new_lib():
    return {p for p in deploy.deploy_files(sim=True) if p.startswith("/lib/")}


def old_lib(old_tree):
    return {"/" + str(p.relative_to(old_tree).with_suffix(".mpy"))
            for p in (old_tree / "lib").rglob("*.py")}


def mpremote(port, *args):
    r = subprocess.run([MPREMOTE, "connect", port, "resume", *args], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_make_deploy_from_the_old_layout_leaves_no_old_module(old_tree, tmp_path):
    gone = old_lib(old_tree) - new_lib()
    assert "/lib/mimi/console.mpy" in gone and "/lib/mimi/channels/tgsend.mpy" in gone
    with old_sim(old_tree, tmp_path, pty=True) as sim:
        sim.wait_for(r"I app: ready")
        before = lib_files(mpremote(sim.tty, "exec", LIST_CODE))
        assert before == old_lib(old_tree)  # the old version, as its tools/sim installed it
        booted = len(sim.output())
        r = subprocess.run([sys.executable, str(ROOT / "tools" / "deploy.py"), "--port", sim.tty],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "its staging is mimi.staging" in r.stdout and "OK: version" in r.stdout, r.stdout
        sim.wait_for(r"OTA: trying version[\s\S]*I app: ready", start=booted)
        after = lib_files(mpremote(sim.tty, "exec", LIST_CODE))
    assert after & gone == set(), sorted(after & gone)
    assert after == new_lib()


def test_ota_update_from_the_old_layout_leaves_no_old_module(old_tree, tmp_path):
    from fakes import otaserver

    www = tmp_path / "www"
    www.mkdir()
    (www / "new.bundle").write_bytes(bundle.bundle_bytes(bundle.app_files(ROOT / "build", sim=True), "8.8.8")[0])
    srv = otaserver.start(www)
    try:
        with old_sim(old_tree, tmp_path, console=True) as sim:
            sim.wait_for(r"I app: ready")
            mark = len(sim.output())
            sim.send(LIST_LIB + "\r")
            before = lib_files(sim.wait_for(r"[\s\S]*LISTED\r?\n", start=mark).group(0))
            assert before == old_lib(old_tree)
            mark = len(sim.output())
            sim.send("ota_update(%r)\r" % (srv["base"] + "/new.bundle"))
            sim.wait_for(r"OK: version 8\.8\.8 installed", start=mark)
            sim.wait_for(r"OTA: trying version 8\.8\.8 \(boot 1 of 2[\s\S]*I app: ready", start=mark)
            mark = len(sim.output())
            sim.send(LIST_LIB + "\r")
            after = lib_files(sim.wait_for(r"[\s\S]*LISTED\r?\n", start=mark).group(0))
    finally:
        srv.close()
    gone = old_lib(old_tree) - new_lib()
    assert after & gone == set(), sorted(after & gone)
    assert after == new_lib()
