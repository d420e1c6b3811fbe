# The flash's LittleFS as the firmware mounts it: MicroPython's _boot.py mounts the
# board's partition with VfsLfs2's defaults (32-byte reads, a 128-byte cache), then
# boot.py mounts it again with limits.FS_* (mimi/flashmount.py): the flash reads that follow are
# the new mount's, and every file the old one held is there.
import os
import sys
import vfs
import support
from cutflash import BS, CutFlash
from mimi import flashmount, fs, limits

BLOCKS = 64
HEAPSIZE = "4m"
CACHE = 4 * max(limits.FS_READ_SIZE, limits.FS_PROG_SIZE)  # (extmod/vfs_lfsx.c)
FILES = {"/boot.py": b"# boot\n" * 200, "/spiffs/memory/MEMORY.md": b"- likes tea\n" * 3,
         "/spiffs/memory/note.md": bytes(range(32, 127)) * 4, "/lib/big.bin": bytes(range(256)) * 20}


class Flash(CutFlash):
    """The flash chip; while `reads` is a list, every read's (offset in its block, length)."""

    def __init__(self):
        super().__init__(bytearray(b"\xff" * (BLOCKS * BS)))
        self.reads = None

    def readblocks(self, block, buf, off=0):
        if self.reads is not None:
            self.reads.append((off, len(buf)))
        super().readblocks(block, buf, off)


def made_with_defaults():
    dev = Flash()
    vfs.VfsLfs2.mkfs(dev)
    vfs.mount(vfs.VfsLfs2(dev), "/old")
    try:
        for path, data in FILES.items():
            fs.makedirs("/old" + fs.parent(path))
            with open("/old" + path, "wb") as f:
                f.write(data)
    finally:
        vfs.umount("/old")
    return dev


def check_files(at):
    for path, data in FILES.items():
        with open(at + path, "rb") as f:
            assert f.read() == data, path


def mounted_at(at):
    return [m for m, p in vfs.mount() if p == at][0]


class Machine:
    """The esp32 port's machine module, as much of it as boot.py uses."""
    PWRON_RESET, SOFT_RESET = 1, 5

    def __init__(self):
        self.freqs = []

    def freq(self, hz):
        self.freqs.append(hz)

    def reset_cause(self):
        return self.PWRON_RESET


class Esp32Sys:
    platform = "esp32"
    print_exception = sys.print_exception


class FlashBdev:  # ports/esp32/modules/flashbdev.py: the "vfs" partition
    def __init__(self, bdev):
        self.bdev = bdev


def test_boot_py_mounts_the_board_flash_with_the_firmware_options():
    dev = made_with_defaults()
    home, cwd = mounted_at("/"), os.getcwd()
    boot = support.read(support.REPO + "/boot.py")
    vfs.umount("/")
    try:
        vfs.mount(vfs.VfsLfs2(dev), "/")  # ports/esp32/modules/_boot.py
        os.chdir("/")
        booted = mounted_at("/")
        machine = Machine()
        fakes = {"sys": Esp32Sys, "machine": machine, "flashbdev": FlashBdev(dev)}
        for name, mod in fakes.items():
            sys.modules[name] = mod
        try:
            exec(boot, {"__name__": "__main__"})
        finally:
            for name in fakes:
                del sys.modules[name]
        assert machine.freqs == [240000000]  # (the rest of boot.py ran too)
        assert "mimi.flashmount" not in sys.modules  # (dropped: nothing keeps it after boot)
        assert mounted_at("/") is not booted and type(mounted_at("/")) is vfs.VfsLfs2
        dev.reads = []
        check_files("")
        assert os.listdir("/spiffs/memory") == ["MEMORY.md", "note.md"]
        # LittleFS reads in steps of the read size, as much as its cache holds at once
        assert all(off % limits.FS_READ_SIZE == 0 and n % limits.FS_READ_SIZE == 0
                   for off, n in dev.reads), dev.reads
        assert max(n for off, n in dev.reads) == CACHE
    finally:
        vfs.umount("/")
        vfs.mount(home, "/")
        os.chdir(cwd)


def test_remount_keeps_files_and_a_failed_one_changes_nothing():
    dev = made_with_defaults()
    vfs.mount(vfs.VfsLfs2(dev), "/f")
    try:
        assert flashmount.remount("/f", dev)
        check_files("/f")
        # written under the new mount: a file inline up to the bigger cache, compactions
        for k in range(120):
            fs.write_atomic("/f/spiffs/memory/note.md", FILES["/spiffs/memory/note.md"][:k * 3 + 100])
            fs.append("/f/spiffs/memory/MEMORY.md", ["- %d\n" % k])
        FILES["/spiffs/memory/note.md"] = FILES["/spiffs/memory/note.md"][:119 * 3 + 100]
        FILES["/spiffs/memory/MEMORY.md"] += "".join("- %d\n" % k for k in range(120)).encode()
        assert flashmount.remount("/f", dev)  # (on every soft reset: the same options again)
        check_files("/f")
        try:  # no filesystem there: the old mount stays
            flashmount.remount("/f", Flash())
            raise AssertionError("mounted a blank flash")
        except OSError:
            pass
        check_files("/f")
    finally:
        vfs.umount("/f")
    vfs.mount(flashmount.lfs(dev), "/f")  # and a new boot finds them
    try:
        check_files("/f")
    finally:
        vfs.umount("/f")


def test_remount_leaves_other_filesystems():
    assert not flashmount.remount("/nothing-mounted-here", Flash())
    host = [p for m, p in vfs.mount() if type(m) is vfs.VfsPosix][0]  # (the host's files)
    assert not flashmount.remount(host, Flash())
    assert type(mounted_at(host)) is vfs.VfsPosix
