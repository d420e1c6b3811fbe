# Flash block reads counted per cause (bench/flashreads.py through bench/mp/turn.py "flash"):
# the image is mounted as VfsLfs2 with the board's options (flashmount.lfs, as boot.py) on a block
# device that counts its readblocks() calls (each a read of the flash chip on the board),
# behind a VFS that names the path and the operation of every call. Reads made while a
# call runs are charged to it; reads made after open() returns (the file's contents) to
# ("read", path) until the next call.
# The agent's phases (prompt, session load, LLM calls, tools, session save) are marked
# by wrapping the worker's functions, so each read is charged to (phase, op, path).
import vfs

reads = {}  # (phase, op, path) -> block reads
_at = ["boot", "mount", ""]  # [phase, op, path] now charged


class Dev:
    def __init__(self, dev):
        self.dev = dev

    def readblocks(self, block, buf, off=0):
        k = tuple(_at)
        reads[k] = reads.get(k, 0) + 1
        self.dev.readblocks(block, buf, off)

    def writeblocks(self, block, buf, off=0):
        self.dev.writeblocks(block, buf, off)

    def ioctl(self, op, arg):
        return self.dev.ioctl(op, arg)


def _charged(op, after=None):
    def call(self, path, *a):
        _at[1], _at[2] = op, path
        try:
            return getattr(self.fs, op)(path, *a)
        finally:
            _at[1] = after or "after " + op

    return call


class Fs:
    """VfsLfs2's VFS interface with every call charged."""

    def __init__(self, fs):
        self.fs = fs

    def mount(self, readonly, mkfs):
        return self.fs.mount(readonly, mkfs)

    def umount(self):
        return self.fs.umount()

    open = _charged("open", "read")
    stat = _charged("stat")
    ilistdir = _charged("ilistdir", "ilistdir")  # (a generator: read as iterated)
    remove = _charged("remove")
    rmdir = _charged("rmdir")
    mkdir = _charged("mkdir")
    chdir = _charged("chdir")
    statvfs = _charged("statvfs")

    def rename(self, a, b):
        _at[1], _at[2] = "rename", a
        try:
            return self.fs.rename(a, b)
        finally:
            _at[1] = "after rename"

    def getcwd(self):
        return self.fs.getcwd()


def mount(dev):
    from mimi.flashmount import lfs  # (the board's mount options, as boot.py sets them)

    fs = Fs(lfs(Dev(dev)))
    vfs.mount(fs, "/")
    return fs


def phase(name):
    _at[0] = name


def mark(obj, attr, name):
    """obj.attr(...) runs as phase `name` (then back to the phase it interrupted)."""
    fn = getattr(obj, attr)

    def marked(*a, **kw):
        was = _at[0]
        _at[0] = name
        try:
            return fn(*a, **kw)
        finally:
            _at[0] = was

    setattr(obj, attr, marked)


def take():
    """The reads counted since the last take() -> [[phase, op, path, n]], and reset."""
    out = [[k[0], k[1], k[2], n] for k, n in reads.items()]
    reads.clear()
    return out
