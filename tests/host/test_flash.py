"""tools/flash.py and `make flash`/`make image`: the real esptool, offline, on a
synthetic ESP32-S3 firmware (bootloader + partition table + app, as the official
ESP32_GENERIC_S3 .bin is laid out), and the errors a person meets without a board."""
import json
import os
import struct
import subprocess
import sys

import pytest

from conftest import ROOT

FLASH_PY = str(ROOT / "tools" / "flash.py")
BS = 4096


def app_image(chip_class="ESP32S3FirmwareImage", entry=0x403C8000):
    from esptool import bin_image

    img = getattr(bin_image, chip_class)()
    img.entrypoint = entry
    img.segments = [bin_image.ImageSegment(0x3FCE3800, b"\x00" * 64),
                    bin_image.ImageSegment(entry, b"\x90" * 256)]
    for s in img.segments:
        s.name = ""
    return img.save(None)


def partition_table(rows):
    """rows: (label, type, subtype, offset, size) -> the 0xC00-byte binary table."""
    import hashlib

    body = b""
    for label, ptype, sub, off, size in rows:
        body += b"\xaa\x50" + struct.pack("<BBII", ptype, sub, off, size)
        body += label.encode().ljust(16, b"\0") + b"\0" * 4
    body += b"\xeb\xeb" + b"\xff" * 14 + hashlib.md5(body).digest()
    return body.ljust(0xC00, b"\xff")


OFFICIAL = [("nvs", 1, 2, 0x9000, 0x6000), ("phy_init", 1, 1, 0xF000, 0x1000),
            ("factory", 0, 0, 0x10000, 0x1F0000)]
OTA = [("nvs", 1, 2, 0x9000, 0x4000), ("otadata", 1, 0, 0xD000, 0x2000),
       ("phy_init", 1, 1, 0xF000, 0x1000), ("ota_0", 0, 0x10, 0x10000, 0x270000),
       ("ota_1", 0, 0x11, 0x280000, 0x270000)]


def firmware(path, rows=OFFICIAL, chip_class="ESP32S3FirmwareImage", app_size=None):
    """A merged image: bootloader at 0, partition table at 0x8000, app at 0x10000."""
    data = bytearray(b"\xff" * 0x10000)
    boot = app_image(chip_class)
    data[0:len(boot)] = boot
    data[0x8000:0x8C00] = partition_table(rows)
    data += app_image(chip_class)
    if app_size:
        data += b"\xff" * (app_size - len(data))
    path.write_bytes(bytes(data))
    return path


def run_flash(*args, out_dir=None):
    extra = ["--out-dir", str(out_dir)] if out_dir else []
    r = subprocess.run([sys.executable, FLASH_PY, *args, *extra], capture_output=True, text=True,
                       timeout=300)
    return r.returncode, r.stdout, r.stderr


def one_line_error(rc, err):
    assert rc == 2
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def lfs_files(data, blocks):
    from littlefs import LittleFS

    fs = LittleFS(block_size=BS, block_count=blocks, mount=False)
    buf = bytearray(data) + b"\xff" * (blocks * BS - len(data))
    fs.context.buffer = buf
    fs.mount()
    return fs


def test_synthetic_firmware_is_a_valid_esp32s3_image(tmp_path):
    fw = firmware(tmp_path / "fw.bin")
    r = subprocess.run([sys.executable, "-m", "esptool", "--chip", "esp32s3", "image-info", str(fw)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ESP32-S3" in r.stdout and "valid" in r.stdout


@pytest.mark.parametrize("flash,blocks", [("8M", 1536), ("16M", 3584)])
def test_image_merges_firmware_and_filesystem(tmp_path, flash, blocks):
    fw = firmware(tmp_path / "fw.bin")
    secrets = tmp_path / "secrets.json"
    secrets.write_text(json.dumps({"wifi_ssid": "home", "api_key": "sk-test-abcdef123456"}))
    rc, out, err = run_flash("image", "--firmware", str(fw), "--flash", flash, "--secrets", str(secrets),
                             out_dir=tmp_path)
    assert rc == 0, out + err
    merged = tmp_path / ("mimiclaw-%s.bin" % flash)
    data = merged.read_bytes()
    assert data[:0x10000 + 64] == fw.read_bytes()[:0x10000 + 64]
    fs = lfs_files(data[0x200000:], blocks)
    assert {"boot.py", "main.py", "lib", "defaults", "config.json"} <= set(fs.listdir("/"))
    assert "spiffs" not in fs.listdir("/")  # user data is made on the board, never flashed
    with fs.open("/config.json", "r") as f:
        assert json.loads(f.read()) == {"wifi_ssid": "home", "api_key": "sk-test-abcdef123456"}
    # esptool reads the merged file back as an ESP32-S3 image (the bootloader at 0).
    r = subprocess.run([sys.executable, "-m", "esptool", "--chip", "esp32s3", "image-info", str(merged)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "ESP32-S3" in r.stdout, r.stdout + r.stderr


def test_home_relative_paths(tmp_path):
    # zsh passes FIRMWARE=~/Downloads/... to make with the ~ unexpanded.
    firmware(tmp_path / "fw.bin")
    (tmp_path / "s.json").write_text(json.dumps({"wifi_ssid": "home"}))
    r = subprocess.run([sys.executable, FLASH_PY, "image", "--firmware", "~/fw.bin", "--secrets",
                        "~/s.json", "--secrets-required", "--out-dir", str(tmp_path)],
                       capture_output=True, text=True, timeout=300, env=dict(os.environ, HOME=str(tmp_path)))
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "mimiclaw-8M.bin").is_file() and "with /config.json" in r.stdout


def test_v124_fixed_vfs_partition_on_a_16mb_board(tmp_path):
    # ESP32_GENERIC_S3 v1.24/v1.25 (partitions-8MiB.csv): vfs at 0x200000, 6 MB, on any
    # flash; v1.26+ has no vfs entry and takes the flash to its end.
    fw = firmware(tmp_path / "fw.bin", rows=OFFICIAL[:2] + [("factory", 0, 0, 0x10000, 0x1F0000),
                                                         ("vfs", 1, 0x81, 0x200000, 0x600000)])
    rc, out, err = run_flash("image", "--firmware", str(fw), "--flash", "16M", out_dir=tmp_path)
    assert rc == 0 and "for 0x200000, 1536 blocks" in out, out + err
    rc, out, err = run_flash("image", "--flash", "16M", out_dir=tmp_path)  # no firmware named
    assert rc == 0 and "3584 blocks" in out and "v1.24 and v1.25" in out and "FLASH=8M" in out, out
    rc, out, err = run_flash("image", "--flash", "8M", out_dir=tmp_path)  # 6 MB: fits both
    assert rc == 0 and "1536 blocks" in out and "note:" not in out, out


def test_ota_partition_table_moves_the_filesystem(tmp_path):
    fw = firmware(tmp_path / "fw.bin", rows=OTA)
    rc, out, err = run_flash("image", "--firmware", str(fw), "--flash", "8M", out_dir=tmp_path)
    assert rc == 0, out + err
    assert "for 0x4f0000" in out
    data = (tmp_path / "mimiclaw-8M.bin").read_bytes()
    fs = lfs_files(data[0x4F0000:], (8 * 1024 * 1024 - 0x4F0000) // BS)
    assert "main.py" in fs.listdir("/")


def test_error_missing_firmware(tmp_path):
    line = one_line_error(*run_flash("flash", "--port", "/dev/null", "--firmware",
                                     str(tmp_path / "nope.bin"))[::2])
    assert "not found" in line and "micropython.org/download/ESP32_GENERIC_S3" in line


def test_error_not_an_image(tmp_path):
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"PK\x03\x04" + os.urandom(4096))
    line = one_line_error(*run_flash("image", "--firmware", str(bad))[::2])
    assert "not an ESP32 firmware image" in line


def test_error_other_chip(tmp_path):
    fw = firmware(tmp_path / "esp32.bin", chip_class="ESP32FirmwareImage")
    line = one_line_error(*run_flash("image", "--firmware", str(fw))[::2])
    assert "another chip" in line and "ESP32_GENERIC_S3" in line


def test_error_app_only_image(tmp_path):
    app = tmp_path / "micropython.bin"
    app.write_bytes(app_image())
    line = one_line_error(*run_flash("image", "--firmware", str(app))[::2])
    assert "app-only" in line


def test_error_firmware_too_big(tmp_path):
    fw = firmware(tmp_path / "big.bin", app_size=0x200000 + 4096)
    line = one_line_error(*run_flash("image", "--firmware", str(fw))[::2])
    assert "too big" in line


def test_error_wrong_flash_size(tmp_path):
    fw = firmware(tmp_path / "fw.bin")
    line = one_line_error(*run_flash("image", "--firmware", str(fw), "--flash", "4M")[::2])
    assert "FLASH must be one of" in line and "16M" in line


def test_error_missing_port(tmp_path):
    fw = firmware(tmp_path / "fw.bin")
    line = one_line_error(*run_flash("flash", "--port", "/dev/ttyNOPE0", "--firmware", str(fw))[::2])
    assert "/dev/ttyNOPE0 is not there" in line
    line = one_line_error(*run_flash("flash", "--firmware", str(fw))[::2])
    assert "PORT is required" in line


def test_error_no_board_on_port(tmp_path):
    # A port that exists but has no ESP32 behind it: esptool fails, we say what to do.
    fw = firmware(tmp_path / "fw.bin")
    master, slave = os.openpty()
    try:
        env = dict(os.environ, ESPTOOL_CONNECT_ATTEMPTS="1")
        r = subprocess.run([sys.executable, FLASH_PY, "flash", "--port", os.ttyname(slave),
                            "--firmware", str(fw)], capture_output=True, text=True, timeout=300,
                           env=env)
    finally:
        os.close(master)
        os.close(slave)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1].startswith("error: esptool could not talk to the board")
    assert "BOOT" in r.stderr


def test_error_secrets_refused(tmp_path):
    fw = firmware(tmp_path / "fw.bin")
    secrets = tmp_path / "secrets.json"
    secrets.write_text(json.dumps({"provider": "gemini"}))
    line = one_line_error(*run_flash("image", "--firmware", str(fw), "--secrets", str(secrets))[::2])
    assert "secrets file refused" in line and "anthropic" in line


def test_make_flash_reports_missing_firmware(tmp_path):
    r = subprocess.run(["make", "-s", "-C", str(ROOT), "flash", "PORT=/dev/null",
                        "FIRMWARE=%s" % (tmp_path / "missing.bin")], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode != 0
    assert "firmware file" in r.stderr and "not found" in r.stderr


def test_flashed_files_survive_the_boards_first_writes(tmp_path):
    # The image must use MicroPython's littlefs geometry: with littlefs-python's
    # defaults, small files were stored inline in a way the board's first metadata
    # compaction truncated (main.py came back as 0xFF after one boot).
    import signal

    from simproc import Sim

    fw = firmware(tmp_path / "fw.bin")
    # (--sim: the same image with the simulator's board layer, which a board's leaves out)
    rc, out, err = run_flash("image", "--firmware", str(fw), "--flash", "8M", "--sim", out_dir=tmp_path)
    assert rc == 0, out + err
    img = tmp_path / "flash.img"
    data = (tmp_path / "mimiclaw-8M.bin").read_bytes()[0x200000:]
    img.write_bytes(data + b"\xff" * (1536 * BS - len(data)))
    with Sim.boot(img, "ws_port=0") as sim:
        sim.wait_for(r"I app: ready")
        sim.stop(signal.SIGINT, 30)
    assert "I app: ready" in sim.output(), sim.output()
    fs = lfs_files(img.read_bytes(), 1536)
    for name in ("/main.py", "/boot.py"):
        with fs.open(name, "rb") as f:
            assert f.read() == (ROOT / name.lstrip("/")).read_bytes(), name
