# The power-cut flash (tests/mp/cutflash.py) and what it found: a cut at every single
# program and erase of a change, torn or not, leaves the file old or new.
import json
import vfs
from cutflash import CutFlash
from mimi import flashmount, fs

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


def every_cut(change, path, allowed, lfs=vfs.VfsLfs2):
    """Run change() on a copy of the flash once per program/erase it makes, cut there
    (not done, then torn half way), LittleFS mounted by lfs(dev); -> how many cuts
    were checked."""
    dev = fresh()
    live = lfs(dev)
    vfs.mount(live, "/pc")
    prepare = change(None)
    vfs.umount("/pc")
    base = bytearray(dev.data)
    dev.arm(False)
    vfs.mount(lfs(dev), "/pc")
    change(prepare)
    total = dev.ops
    vfs.umount("/pc")
    checked = 0
    for at in range(1, total + 1):
        for tear in (None, 17):
            dev = CutFlash(bytearray(base))
            dev.arm(True, at, tear)
            vfs.mount(lfs(dev), "/pc")
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


def test_a_file_rewritten_in_place_is_old_or_new():
    # write_file over an existing file (fs.write_atomic(replace=True)): no temporary
    # file; inline in the folder's metadata or in blocks of its own, before and after,
    # as the board mounts its flash
    sizes = ((100, 300), (100, 6000), (6000, 50), (6000, 9000), (300, 0))
    for old, new in sizes:
        old, new = b"o" * old, b"n" * new

        def change(prepare):
            if prepare is None:
                fs.write_atomic("/pc/memory/f.md", old)
                fs.write_atomic("/pc/memory/g.md", old)  # (a neighbour in the metadata)
                return True
            fs.write_atomic("/pc/memory/f.md", new, replace=True)

        assert every_cut(change, "/memory/f.md", (old, new), flashmount.lfs) >= 2
        assert every_cut(change, "/memory/g.md", (old,), flashmount.lfs) >= 2


def tree(top):
    """{path: bytes} below top (empty when it does not exist)."""
    out = {}
    for p in fs.walk_files(top):
        with open(p, "rb") as f:
            out[p[len(top):]] = f.read()
    return out


def test_an_ota_rollback_never_leaves_code_half_removed():
    # A rollback removed lib/mimi file by file, in name order, before renaming the
    # previous version back: cut after __init__, agent/ and app went, safemode.py was
    # still there, so main.py's fallback to /ota/prev/lib never ran and every boot
    # failed on `mimi.run` (found by tests/host/test_powercut.py)
    from mimi.update import boot as otaboot

    old = {"/__init__.mpy": b"old" * 50, "/app.mpy": b"A" * 300, "/board/__init__.mpy": b"B" * 200,
           "/safemode.mpy": b"S" * 200}
    new = {k: v.replace(b"old", b"new") + b"!" for k, v in old.items()}
    st = {"state": "rollback", "version": "2", "prev": "1", "tops": ["lib/mimi"], "created": [], "boots": 3}
    dev = fresh()
    home = [m for m, at in vfs.mount() if at == "/"][0]  # the test's own flash
    vfs.umount("/")
    try:
        vfs.mount(vfs.VfsLfs2(dev), "/")
        for top, files in (("/lib/mimi", new), ("/ota/prev/lib/mimi", old)):
            for p, data in files.items():
                fs.write_atomic(top + p, data)
        fs.write_atomic(otaboot.STATE, json.dumps(st))
        vfs.umount("/")
        base = bytearray(dev.data)
        dev.arm(False)
        vfs.mount(vfs.VfsLfs2(dev), "/")
        otaboot._finish_rollback(dict(st))
        assert tree("/lib/mimi") == old and not fs.exists(otaboot.STATE)
        vfs.umount("/")
        total = dev.ops
        for at in range(1, total + 1):
            for tear in (None, 9):
                cut = CutFlash(bytearray(base))
                cut.arm(True, at, tear)
                vfs.mount(vfs.VfsLfs2(cut), "/")
                otaboot._finish_rollback(dict(st))
                vfs.umount("/")
                vfs.mount(vfs.VfsLfs2(CutFlash(cut.snap[0])), "/")
                live, kept = tree("/lib/mimi"), tree("/ota/prev/lib/mimi")
                assert live in (new, old) or (live == {} and kept == old), (at, tear, sorted(live))
                if otaboot._state():  # the next boot finishes it
                    otaboot._finish_rollback(otaboot._state())
                assert tree("/lib/mimi") == old, (at, tear)
                vfs.umount("/")
        assert total > 10
    finally:
        vfs.mount(home, "/")
