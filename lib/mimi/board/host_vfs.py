# Host only: the flash image file and the VFS over it. The unix port has no GIL, so
# the agent thread and the loop can be inside LittleFS at the same moment, and
# LittleFS is not thread-safe (two writers left a root entry renamed "ofnfig.json"
# and an image that no longer mounted). This VFS wraps VfsLfs2 and holds fs.lock
# around every call, file reads and writes included, as the board's GIL does for one
# call. Multi-step changes hold the same lock in fs.py.
# One cost: an import's stat now runs Python code, and MicroPython swallows any
# exception raised inside it (extmod/vfs.c), so a SIGINT Ctrl-C raised there is lost
# (under tools/sim Ctrl-C comes on the loop instead: board/host.py).
# Nothing from mimi is imported here: tools/simboot.py mounts the image with the
# build's modules and then drops them, and these objects stay alive for the whole run
# (with an import, that module's every function would too). The lock is handed in,
# and handed over to the image's own fs.lock when board/host.py loads from there.
import io


class FileBlockDev:
    """A flash chip made of a file: 4096-byte blocks, MicroPython block protocol."""

    def __init__(self, path, block_count, block_size=4096):
        self.bs = block_size
        self.n = block_count
        try:
            self.f = open(path, "r+b")
        except OSError:
            self.f = open(path, "w+b")
        self.f.seek(0, 2)
        size = self.f.tell()
        if size < block_size * block_count:  # grow sparse; littlefs erases nothing here
            self.f.seek(block_size * block_count - 1)
            self.f.write(b"\xff")
            self.f.flush()

    def readblocks(self, block, buf, off=0):
        self.f.seek(block * self.bs + off)
        self.f.readinto(buf)

    def writeblocks(self, block, buf, off=0):
        self.f.seek(block * self.bs + off)
        self.f.write(buf)

    def ioctl(self, op, arg):
        if op == 3:  # sync
            self.f.flush()
        elif op == 4:
            return self.n
        elif op == 5:
            return self.bs
        return 0  # 6, erase: nothing to do on a file


class LockedFile(io.IOBase):
    """A VfsLfs2 file whose every operation holds the filesystem lock. As an IOBase
    it is also a stream for C code (json.load, import)."""

    def __init__(self, f, vfs):
        self._f = f
        self._v = vfs

    def read(self, *n):
        with self._v.lock:
            return self._f.read(*n)

    def readinto(self, buf, *n):
        with self._v.lock:
            return self._f.readinto(buf, *n)

    def readline(self, *n):
        with self._v.lock:
            return self._f.readline(*n)

    def write(self, data):
        with self._v.lock:
            return self._f.write(data)

    def seek(self, *a):
        with self._v.lock:
            return self._f.seek(*a)

    def tell(self):
        with self._v.lock:
            return self._f.tell()

    def flush(self):
        with self._v.lock:
            return self._f.flush()

    def close(self):
        with self._v.lock:
            self._f.close()

    def ioctl(self, op, arg):  # the stream protocol's flush and close
        if op == 1:
            self.flush()
        elif op == 4:
            self.close()
        else:
            return -22  # EINVAL
        return 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __iter__(self):
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line


class LockedVfs:
    """VfsLfs2's VFS interface, one call at a time."""

    def __init__(self, fs, lock):
        self._fs = fs
        self.lock = lock

    def open(self, path, mode):
        with self.lock:
            return LockedFile(self._fs.open(path, mode), self)

    def ilistdir(self, *path):
        with self.lock:
            return iter(list(self._fs.ilistdir(*path)))

    def __getattr__(self, name):  # mount, stat, rename, remove, mkdir, statvfs, ...
        fn = getattr(self._fs, name)

        def call(*args):
            with self.lock:
                return fn(*args)

        return call
