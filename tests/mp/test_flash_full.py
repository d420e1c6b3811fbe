# A full flash (issue 16 item 6): what fs_info says when LittleFS is full.
import os
from mimi import limits, fs, board

FS_BLOCKS = 160
JUNK = "/junk"


def fill():
    """Plain files (no file tool) until LittleFS refuses: the flash is full."""
    fs.makedirs(JUNK)
    n = 0
    try:
        while True:
            with open("%s/%d" % (JUNK, n), "wb") as f:
                f.write(b"j" * 4000)
            n += 1
    except OSError as e:
        assert e.args[0] == 28, e
    return n


def test_fs_info_counts_folders_once_and_never_wraps():
    for i in range(20):
        os.mkdir("/d%d" % i)
    free = board.fs_info()["free"] // limits.BLOCK_SIZE
    n = fill()  # 4000-byte files: a block each
    assert free - 8 <= n <= free, (free, n)  # a few blocks go to the folder's metadata
    info = board.fs_info()
    assert 0 <= info["free"] <= 2 * limits.BLOCK_SIZE, info
    assert info["total"] == FS_BLOCKS * limits.BLOCK_SIZE
    st = os.statvfs("/")
    assert not 0 <= st[3] <= st[2]  # LittleFS's own count wrapped: what fs_info corrects
