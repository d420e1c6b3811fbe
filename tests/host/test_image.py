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
    return mkimage.image_files(ROOT / "build", sim=True)  # the simulator boots it


def test_a_board_image_has_no_host_only_module():
    # board/host*, board/hostlib/ and devices/sim/ are the simulator's: a board never
    # imports them (board/__init__.py), so its image, bundles and deploys go without
    board = mkimage.image_files(ROOT / "build")
    sim = mkimage.image_files(ROOT / "build", sim=True)
    assert not [p for p in board if "/host" in p or "/devices/sim/" in p]
    assert "/lib/mimi/board/esp32.mpy" in board and "/lib/mimi/devices/drivers/dht.mpy" in board
    extra = sorted(set(sim) - set(board))
    assert "/lib/mimi/board/host.mpy" in extra and "/lib/mimi/devices/sim/sht3x.mpy" in extra
    assert all(mkimage.host_only(p) for p in extra) and set(board) <= set(sim)


def test_a_package_whose_init_is_a_comment_goes_without_it():
    files = mkimage.image_files(ROOT / "build")
    # MicroPython imports the folder as a package all the same (test_firmware_boots_from_image);
    # the __init__.mpy would only cost its name in the qstr pool and a file read
    assert "/lib/mimi/console/__init__.mpy" not in files and "/lib/mimi/console/serial.mpy" in files
    assert "/lib/mimi/channels/__init__.mpy" in files and "/lib/mimi/__init__.mpy" in files  # with code
    assert mkimage.comment_only(ROOT / "lib/mimi/config/__init__.py")
    assert not mkimage.comment_only(ROOT / "lib/mimi/net/__init__.py")


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


OLD_IMAGE_CHECK = r"""
import sys, os, hashlib, binascii
sys.path[:] = [sys.argv[2]]
from mimi import board, fs

def files(top='/'):
    for name, kind, *_ in os.ilistdir(top):
        p = top.rstrip('/') + '/' + name
        if kind == 0x4000 and p != board.HOST_MOUNT:
            yield from files(p)
        elif kind != 0x4000:
            yield p

def sums():
    for p in sorted(files()):
        with open(p, 'rb') as f:
            print('SUM', p, binascii.hexlify(hashlib.sha256(f.read()).digest()).decode())

board.mount_image(sys.argv[1])
sums()
fs.append('/spiffs/memory/MEMORY.md', ['- and coffee\n'])
fs.write_atomic('/spiffs/memory/note.md', 'n' * 300)
fs.write_atomic('/spiffs/config/USER.md', 'u' * 40)
board.mount_image(board.host_path(sys.argv[1]))  # (a new boot)
sums()
"""


def test_image_made_with_micropythons_defaults_keeps_its_files(tmp_path, files):
    """A board flashed before the firmware mounted its flash with limits.FS_* has an
    image made with MicroPython's defaults (read/prog 32, cache 128, lookahead 32: what
    tools/mkimage.py made then): mounted as the firmware now mounts it, every file
    reads back, and what the firmware writes (appends, files inline up to the bigger
    cache) reads back after a remount and with the image builder."""
    import hashlib

    from littlefs import LittleFS

    old = LittleFS(block_size=4096, block_count=1536, name_max=255, mount=False,
                   read_size=32, prog_size=32, cache_size=128, lookahead_size=32)
    old.format()
    old.mount()
    user = {"/spiffs/memory/MEMORY.md": b"- likes tea\n" * 30, "/spiffs/memory/note.md": b"x" * 100,
            "/spiffs/config/USER.md": b"Name: Ada\n" * 20}
    tree = dict(files, **user)
    for path, data in sorted(tree.items()):
        old.makedirs(path.rsplit("/", 1)[0] or "/", exist_ok=True)
        with old.open(path, "wb") as f:
            f.write(data)
    img = tmp_path / "fs.img"
    img.write_bytes(old.context.buffer)
    script = tmp_path / "check.py"
    script.write_text(OLD_IMAGE_CHECK)
    r = subprocess.run([micropython_bin(), str(script), str(img), str(ROOT / "build" / "lib")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    runs = r.stdout.split("SUM /boot.py ")
    assert len(runs) == 3, r.stdout + r.stderr
    before, after = [dict(line.split(" ", 2)[1:] for line in ("SUM /boot.py " + run).splitlines()
                          if line.startswith("SUM ")) for run in runs[1:]]
    assert before == {p: hashlib.sha256(d).hexdigest() for p, d in tree.items()}
    tree["/spiffs/memory/MEMORY.md"] += b"- and coffee\n"
    tree["/spiffs/memory/note.md"] = b"n" * 300
    tree["/spiffs/config/USER.md"] = b"u" * 40
    assert after == {p: hashlib.sha256(d).hexdigest() for p, d in tree.items()}
    again = mkimage._lfs(1536, img.read_bytes())  # (tools/mkimage.py's sync opens it so)
    for path in user:
        with again.open(path, "rb") as f:
            assert f.read() == tree[path], path


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
