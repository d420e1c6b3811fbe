"""Image builder: LittleFS images of the right geometry that MicroPython mounts and boots."""
import json
import signal
import subprocess

import pytest

import mkimage
from conftest import ROOT, micropython_bin
from simproc import Sim

MOUNT_CHECK = r"""
import sys, os, vfs
sys.path[:] = [sys.argv[2]]
from mimi import board
board.mount_image(sys.argv[1])
st = os.statvfs('/')
print('GEOMETRY', st[0], st[2])
print('TOP', sorted(os.listdir('/')))
print('LIB', sorted(os.listdir('/lib/mimi'))[:3])
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return mkimage.image_files(ROOT / "build")


@pytest.mark.parametrize("flash,blocks", [("8M", 1536), ("16M", 3584)])
def test_image_geometry_and_mount(tmp_path, files, flash, blocks):
    img = tmp_path / ("fs-%s.img" % flash)
    assert mkimage.build_image(img, flash, files) == blocks
    assert img.stat().st_size == blocks * 4096
    script = tmp_path / "check.py"
    script.write_text(MOUNT_CHECK)
    r = subprocess.run([micropython_bin(), str(script), str(img), str(ROOT / "build" / "lib")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "GEOMETRY 4096 %d" % blocks in r.stdout
    assert "'boot.py'" in r.stdout and "'lib'" in r.stdout and "'defaults'" in r.stdout
    assert ".mpy" in r.stdout  # compiled modules, not sources


def test_wrong_block_count_is_refused(tmp_path, files):
    img = tmp_path / "fs.img"
    mkimage.build_image(img, "8M", files)
    script = tmp_path / "check.py"
    script.write_text("""
import sys, vfs
sys.path[:] = [sys.argv[2]]
from mimi.board.host_vfs import FileBlockDev
try:
    vfs.VfsLfs2(FileBlockDev(sys.argv[1], 3584))
    print('MOUNTED')
except OSError as e:
    print('REFUSED', e)
""")
    r = subprocess.run([micropython_bin(), str(script), str(img), str(ROOT / "build" / "lib")],
                       capture_output=True, text=True, timeout=60)
    assert "REFUSED" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("flash", ["8M", "16M"])
def test_firmware_boots_from_image(tmp_path, files, flash):
    img = tmp_path / "fs.img"
    mkimage.build_image(img, flash, files)
    with Sim.boot(img, "ws_port=0") as sim:
        sim.wait_for(r"I app: ready")
        sim.stop(signal.SIGINT)
    text = sim.output()
    assert "MimiClaw" in text and "on host" in text, text
    assert "ws_token =" in text
    assert "I app: ready" in text
    # The first boot installed the defaults from the image into /spiffs.
    assert "installed" in text


def test_secrets_file_baked_into_config(tmp_path):
    secrets = tmp_path / "secrets.json"
    secrets.write_text(json.dumps({"api_key": "sk-test-1234567890", "wifi_ssid": "home"}))
    assert json.loads(mkimage.config_bytes(secrets)) == {"api_key": "sk-test-1234567890", "wifi_ssid": "home"}
    secrets.write_text(json.dumps({"apikey": "x"}))
    with pytest.raises(ValueError, match="unknown setting 'apikey'"):
        mkimage.config_bytes(secrets)


def test_sync_keeps_user_data(tmp_path, files):
    from littlefs import LittleFS

    img = tmp_path / "fs.img"
    mkimage.build_image(img, "8M", files)
    fs = LittleFS(block_size=4096, block_count=1536, mount=False)
    fs.context.buffer = bytearray(img.read_bytes())
    fs.mount()
    fs.makedirs("/spiffs/memory", exist_ok=True)
    with fs.open("/spiffs/memory/MEMORY.md", "w") as f:
        f.write("user data")
    with fs.open("/config.json", "w") as f:
        f.write('{"model": "x"}')
    with fs.open("/lib/mimi/stale.mpy", "wb") as f:
        f.write(b"old")
    with fs.open("/lib/aiorepl.mpy", "wb") as f:  # mip's (make deploy MIP=1)
        f.write(b"M\x06")
    img.write_bytes(fs.context.buffer)
    mkimage.sync_image(img, files)
    fs = LittleFS(block_size=4096, block_count=1536, mount=False)
    fs.context.buffer = bytearray(img.read_bytes())
    fs.mount()
    with fs.open("/spiffs/memory/MEMORY.md", "r") as f:
        assert f.read() == "user data"
    with fs.open("/config.json", "r") as f:
        assert f.read() == '{"model": "x"}'
    assert "stale.mpy" not in fs.listdir("/lib/mimi")
    with fs.open("/lib/aiorepl.mpy", "rb") as f:
        assert f.read() == b"M\x06"


def test_every_module_compiles_for_xtensawin(tmp_path):
    bad = []
    for src in mkimage.app_sources() + [ROOT / "boot.py", ROOT / "main.py"]:
        try:
            mkimage.compile_module(src, tmp_path / (src.stem + ".mpy"), march="xtensawin")
        except RuntimeError as e:
            bad.append(str(e))
    assert not bad, "\n".join(bad)
