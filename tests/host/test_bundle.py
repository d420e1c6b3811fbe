"""tools/bundle.py: the OTA bundle holds the image's compiled app files, never
/config.json, in the format lib/mimi/ota.py reads."""
import hashlib
import hmac
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import bundle  # noqa: E402
import mkimage  # noqa: E402


def parse(data):
    assert data.startswith(bundle.MAGIC)
    head, _, rest = data[len(bundle.MAGIC):].partition(b"\n")
    mlen, sig = head.decode().split()
    man = rest[:int(mlen)]
    files, pos = {}, int(mlen)
    for f in json.loads(man)["files"]:
        files[f["path"]] = rest[pos:pos + f["size"]]
        assert hashlib.sha256(files[f["path"]]).hexdigest() == f["sha256"]
        pos += f["size"]
    assert pos == len(rest)
    return man, sig, files


def test_make_bundle_from_the_image_files(tmp_path):
    out = tmp_path / "b.bundle"
    bundle.main(["-o", str(out), "--key", "k3y-for-test", "--version", "1.2.3"])
    man, sig, files = parse(out.read_bytes())
    assert sig == hmac.new(b"k3y-for-test", man, hashlib.sha256).hexdigest()
    assert json.loads(man)["version"] == "1.2.3"
    assert json.loads(out.with_suffix(".manifest.json").read_bytes()) == json.loads(man)
    image = mkimage.image_files(ROOT / "build")
    image.pop("/config.json", None)
    assert files == image
    assert "/lib/mimi/update/ota.mpy" in files and "/lib/mimi/app.mpy" in files
    assert not any(p.endswith(".py") and p.startswith("/lib/") for p in files)
    tops = {p.split("/")[1] for p in files}
    assert tops <= {"lib", "defaults", "certs", "boot.py", "main.py"}


def test_a_board_bundle_has_no_host_only_module_the_simulator_s_has_them(tmp_path):
    # a board never imports the simulator's board layer and parts; the simulator's own
    # updates (bundle.py --sim) must bring them, since an update swaps /lib/mimi whole
    bundle.main(["-o", str(tmp_path / "board.bundle"), "--version", "1"])
    bundle.main(["-o", str(tmp_path / "sim.bundle"), "--version", "1", "--sim"])
    board = parse((tmp_path / "board.bundle").read_bytes())[2]
    sim = parse((tmp_path / "sim.bundle").read_bytes())[2]
    assert not [p for p in board if mkimage.host_only(p)]
    assert "/lib/mimi/board/esp32.mpy" in board and "/lib/mimi/board/esp32_io.mpy" in board
    extra = set(sim) - set(board)
    assert {"/lib/mimi/board/host.mpy", "/lib/mimi/board/hostlib/dht.mpy",
            "/lib/mimi/devices/sim/parts.mpy"} <= extra
    assert all(mkimage.host_only(p) for p in extra) and set(board) <= set(sim)


def test_unsigned_bundle():
    data, man = bundle.bundle_bytes({"/main.py": b"x"}, "0")
    assert parse(data)[1] == "-"
