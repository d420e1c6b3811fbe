# The flash's LittleFS as the firmware mounts it: limits.FS_* instead of VfsLfs2's
# defaults (docs/board.md). Used by boot.py on the board (then dropped: nothing keeps
# it after boot) and by board.mount_image on the host.
import os
import vfs
from mimi import limits


def lfs(bdev):
    """VfsLfs2 on the block device bdev, with the firmware's readsize, progsize and
    lookahead."""
    return vfs.VfsLfs2(bdev, readsize=limits.FS_READ_SIZE, progsize=limits.FS_PROG_SIZE,
                       lookahead=limits.FS_LOOKAHEAD)


def remount(at, bdev):
    """The LittleFS MicroPython mounted at `at` from bdev (with its defaults, as the
    board's _boot.py does) mounted again with lfs(); boot.py does it before anything
    writes. False when `at` holds another kind of filesystem (FAT); a new mount that
    fails raises with the old one still in place (it is made before the old one goes)."""
    if not [1 for m, p in vfs.mount() if p == at and type(m) is vfs.VfsLfs2]:
        return False
    new = lfs(bdev)  # (two mounts of one flash for a moment: LittleFS's mount only reads)
    cwd = os.getcwd()
    vfs.umount(at)
    vfs.mount(new, at)
    os.chdir(cwd)  # (a folder of the old mount: the current one went with it)
    return True
