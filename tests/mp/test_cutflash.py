# The power-cut flash (tests/mp/cutflash.py) and what it found: a cut at every single
# program and erase of a change, torn or not, leaves the file old or new.
import vfs
from cutflash import CutFlash
from mimi import fs

BLOCKS = 64
HEAPSIZE = "8m"


def fresh():
    dev = CutFlash(bytearray(b"\xff" * (BLOCKS * 4096)))
    vfs.VfsLfs2.mkfs(dev)
    return dev


def contents(snap, path):
    """path's bytes on the cut image snap, mounted by a new VfsLfs2 (None: no file)."""
    vfs.mount(vfs.VfsLfs2(CutFlash(snap)), "/cut")
    try:
        with open("/cut" + path, "rb") as f:
            return f.read()
    except OSError:
        return None
    finally:
        vfs.umount("/cut")


def every_cut(change, path, allowed):
    """Run change() on a copy of the flash once per program/erase it makes, cut there
    (not done, then torn half way); -> how many cuts were checked."""
    dev = fresh()
    live = vfs.VfsLfs2(dev)
    vfs.mount(live, "/pc")
    prepare = change(None)
    vfs.umount("/pc")
    base = bytearray(dev.data)
    dev.arm(False)
    vfs.mount(vfs.VfsLfs2(dev), "/pc")
    change(prepare)
    total = dev.ops
    vfs.umount("/pc")
    checked = 0
    for at in range(1, total + 1):
        for tear in (None, 17):
            dev = CutFlash(bytearray(base))
            dev.arm(True, at, tear)
            vfs.mount(vfs.VfsLfs2(dev), "/pc")
            change(prepare)
            vfs.umount("/pc")
            got = contents(dev.snap[0], path)
            assert got in allowed, (at, tear, got and got[:40])
            checked += 1
    return checked


def test_a_new_file_appended_to_appears_whole_or_not_at_all():
    # LittleFS commits a new file empty before its data: a daily note cut there lost
    # its "# date" header for good (the next append saw the file and added none)
    parts = ["# 2027-01-01\n\n", "first line " * 30 + "\n"]

    def change(prepare):
        if prepare is None:
            fs.makedirs("/pc/memory")
            return True
        fs.append("/pc/memory/n.md", parts)

    assert every_cut(change, "/memory/n.md", (None, "".join(parts).encode())) >= 4


def test_an_append_and_a_rewrite_are_old_or_new():
    old = b"x" * 700

    def change(prepare):
        if prepare is None:
            fs.write_atomic("/pc/a.md", old)
            fs.write_atomic("/pc/b.md", old)
            return True
        fs.append("/pc/a.md", [b"y" * 300])
        fs.write_atomic("/pc/b.md", b"z" * 5000)

    assert every_cut(change, "/a.md", (old, old + b"y" * 300)) >= 4
    assert every_cut(change, "/b.md", (old, b"z" * 5000)) >= 4
