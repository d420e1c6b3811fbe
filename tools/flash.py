#!/usr/bin/env python3
"""Flash an ESP32-S3 with MicroPython and this repo's filesystem image (CPython).

  tools/flash.py flash --port PORT --firmware FW.bin [--flash 8M] [--secrets secrets.json]
  tools/flash.py image [--firmware FW.bin] [--flash 8M] [--secrets secrets.json]

FW.bin is the official ESP32_GENERIC_S3 download (bootloader + partition table +
app, written at 0). The LittleFS image goes where MicroPython looks for its
filesystem: the end of the firmware's last partition (0x200000 for the official
images; later with firmware/partitions-ota.csv), or an explicit vfs/ffat partition.
`flash` erases the chip and writes both; `image` builds build/fs-<FLASH>.img and,
with a firmware, one merged build/mimiclaw-<FLASH>.bin to write at 0.
Every problem ends with exit status 2 and one line saying what to do.
"""
import argparse
import os
import struct
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "lib"))
import mkimage  # noqa: E402
from mimi import limits  # noqa: E402

CHIP = "esp32s3"
CHIP_ID_S3 = 9  # esptool: ESP32S3ROM.IMAGE_CHIP_ID
IMAGE_MAGIC = 0xE9
PART_TABLE = 0x8000
PART_MAGIC = b"\xaa\x50"
DOWNLOAD = "https://micropython.org/download/ESP32_GENERIC_S3/"
BAUD = 460800
V124_VFS_SIZE = 0x600000  # the "vfs" partition of ESP32_GENERIC_S3 v1.24/v1.25 (partitions-8MiB.csv)


class Fail(Exception):
    """A user-facing problem: one line, exit status 2."""


def flash_bytes(flash):
    if flash not in mkimage.FLASH_SIZES:
        raise Fail("FLASH must be one of %s (got %r): the flash size of your board, e.g. "
                   "FLASH=16M for an N16R8 module" % (", ".join(sorted(mkimage.FLASH_SIZES, key=mkimage.FLASH_SIZES.get)), flash))
    return mkimage.FLASH_SIZES[flash]


def partitions(data):
    """[(label, type, subtype, offset, size)] from a merged image's partition table."""
    out = []
    for pos in range(PART_TABLE, PART_TABLE + 0xC00, 32):
        entry = data[pos:pos + 32]
        if len(entry) < 32 or entry[:2] != PART_MAGIC:
            break
        ptype, sub, off, size = struct.unpack_from("<BBII", entry, 2)
        label = entry[12:28].split(b"\0", 1)[0].decode("ascii", "replace")
        out.append((label, ptype, sub, off, size))
    return out


def check_firmware(path):
    """The firmware bytes and its partition table; Fail when it is not a full
    ESP32-S3 MicroPython image meant for offset 0."""
    if not path:
        raise Fail("FIRMWARE is required: download ESP32_GENERIC_S3 from %s and pass "
                   "FIRMWARE=path/to/ESP32_GENERIC_S3-....bin" % DOWNLOAD)
    p = Path(path)
    if not p.is_file():
        raise Fail("firmware file %s not found: download ESP32_GENERIC_S3 from %s and pass "
                   "FIRMWARE=path/to/it" % (path, DOWNLOAD))
    data = p.read_bytes()
    if len(data) < 24 or data[0] != IMAGE_MAGIC:
        raise Fail("%s is not an ESP32 firmware image (no 0xE9 header): use the .bin from %s"
                   % (path, DOWNLOAD))
    chip = struct.unpack_from("<H", data, 12)[0]
    if chip != CHIP_ID_S3:
        raise Fail("%s is built for another chip (image chip id %d, ESP32-S3 is %d): use the "
                   "ESP32_GENERIC_S3 firmware from %s" % (path, chip, CHIP_ID_S3, DOWNLOAD))
    table = partitions(data)
    if not table:
        raise Fail("%s has no partition table at 0x8000: it looks like an app-only image "
                   "(micropython.bin); use the full ESP32_GENERIC_S3-....bin from %s"
                   % (path, DOWNLOAD))
    return data, table


def fs_region(table, flash_size, firmware_len):
    """(offset, size) of the filesystem MicroPython will mount."""
    for label, ptype, sub, off, size in table:
        if ptype == 1 and label in ("vfs", "ffat"):
            region = (off, size)
            break
    else:
        # No vfs entry: MicroPython (>= 1.26) registers one from the end of the
        # last partition to the end of the flash.
        end = max((off + size for _, _, _, off, size in table), default=limits.FS_OFFSET)
        region = (end, flash_size - end)
    off, size = region
    if off % limits.BLOCK_SIZE or size <= 0 or off + size > flash_size:
        raise Fail("the firmware's partitions leave no filesystem on a %d MB flash: pick the right "
                   "FLASH= for your board" % (flash_size >> 20))
    if firmware_len > off:
        raise Fail("the firmware (%d bytes) runs into the filesystem at 0x%x: it is too big for "
                   "this layout" % (firmware_len, off))
    return region


def trimmed(img):
    """The image without its trailing erased blocks (littlefs finds free blocks by
    walking its metadata, never by content, so they need not be written)."""
    bs = limits.BLOCK_SIZE
    end = len(img)
    blank = b"\xff" * bs
    while end > 2 * bs and img[end - bs:end] == blank:
        end -= bs
    return img[:end]


def build_fs(out, blocks, secrets=None, sim=False):
    try:
        files = mkimage.image_files(ROOT / "build", config=secrets, sim=sim)
    except ValueError as e:
        raise Fail("secrets file refused: %s" % e)
    fs = mkimage._lfs(blocks)
    mkimage._write_all(fs, files)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(trimmed(bytes(fs.context.buffer)))
    return out, len(files)


def check_secrets(path, required):
    if not path:
        return None
    if not Path(path).is_file():
        if required:
            raise Fail("secrets file %s not found (it is optional: leave SECRETS= out)" % path)
        return None
    return path


def esptool(*args, port=None):
    cmd = [sys.executable, "-m", "esptool", "--chip", CHIP]
    if port:
        cmd += ["--port", port, "--baud", str(BAUD)]
    cmd += list(args)
    print("+ esptool " + " ".join(cmd[3:]), flush=True)
    return subprocess.run(cmd).returncode


def check_port(port):
    if not port:
        raise Fail("PORT is required, e.g. make flash PORT=/dev/ttyACM0 (see `ls /dev/tty*` "
                   "with the board plugged in; COM3 on Windows)")
    if os.name != "nt" and not port.startswith(("rfc2217:", "socket:")) and not os.path.exists(port):
        raise Fail("port %s is not there: plug the board in (a data USB cable) and check the "
                   "name with `ls /dev/tty*`" % port)


def cmd_image(a):
    size = flash_bytes(a.flash)
    secrets = check_secrets(a.secrets, a.secrets_required)
    build = Path(a.out_dir)
    if a.firmware:
        fw, table = check_firmware(a.firmware)
        off, fs_size = fs_region(table, size, len(fw))
    else:
        fw, off, fs_size = None, limits.FS_OFFSET, size - limits.FS_OFFSET
    img, n = build_fs(build / ("fs-%s.img" % a.flash), fs_size // limits.BLOCK_SIZE, secrets, a.sim)
    print("%s: LittleFS for 0x%x, %d blocks, %d files%s" % (
        img, off, fs_size // limits.BLOCK_SIZE, n, ", with /config.json" if secrets else ""))
    if fw is None:
        if fs_size != V124_VFS_SIZE:
            print("note: without FIRMWARE= the image fills the flash from 0x%x to its end, as "
                  "MicroPython v1.26 and later do. v1.24 and v1.25 keep a fixed %d MB filesystem "
                  "there whatever the flash (and report it corrupted otherwise): for them use "
                  "FLASH=8M, or name the firmware with FIRMWARE=" % (off, V124_VFS_SIZE >> 20))
        return None
    merged = build / ("mimiclaw-%s.bin" % a.flash)
    if esptool("merge-bin", "-o", str(merged), "0x0", str(a.firmware), hex(off), str(img)):
        raise Fail("esptool merge-bin failed (see above)")
    print("%s: write it at 0: esptool --chip esp32s3 --port PORT write-flash 0 %s" % (merged, merged))
    return merged


def cmd_flash(a):
    check_port(a.port)
    size = flash_bytes(a.flash)
    fw, table = check_firmware(a.firmware)
    off, fs_size = fs_region(table, size, len(fw))
    secrets = check_secrets(a.secrets, a.secrets_required)
    img, n = build_fs(Path(a.out_dir) / ("fs-%s.img" % a.flash), fs_size // limits.BLOCK_SIZE, secrets)
    hint = ("esptool could not talk to the board on %s: hold BOOT, tap RESET, release BOOT "
            "(download mode) and run make flash again" % a.port)
    if not a.no_erase and esptool("erase-flash", port=a.port):
        raise Fail(hint)
    if esptool("write-flash", "0x0", str(a.firmware), hex(off), str(img), port=a.port):
        raise Fail(hint)
    print("flashed: MicroPython + %d files at 0x%x. Press RESET, then: mpremote connect %s"
          % (n, off, a.port))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("flash", "image"):
        p = sub.add_parser(name)
        p.add_argument("--firmware", default="")
        p.add_argument("--flash", default="8M")
        p.add_argument("--secrets", default="", help="JSON settings baked into /config.json")
        p.add_argument("--out-dir", default=str(ROOT / "build"), help="where the images go")
        p.add_argument("--secrets-required", action="store_true",
                       help="fail when the secrets file is missing (it was named explicitly)")
        if name == "image":
            p.add_argument("--sim", action="store_true",
                           help="with the host simulator's board layer (tools/sim boots it), not a board's")
        if name == "flash":
            p.add_argument("--port", default="")
            p.add_argument("--no-erase", action="store_true",
                           help="keep the rest of the flash (the filesystem is rewritten anyway)")
    a = ap.parse_args(argv)
    # zsh (the macOS default) leaves FIRMWARE=~/Downloads/... unexpanded
    a.firmware, a.secrets = os.path.expanduser(a.firmware), os.path.expanduser(a.secrets)
    try:
        (cmd_flash if a.cmd == "flash" else cmd_image)(a)
    except Fail as e:
        print("error: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
