# Host only: the unix port has no GIL, so the agent thread and the loop can be inside
# LittleFS at the same moment, and LittleFS is not thread-safe (two writers left a
# root entry renamed "ofnfig.json" and an image that no longer mounted). This VFS
# wraps VfsLfs2 and holds fs.lock around every call, file reads and writes included,
# as the board's GIL does for one call. Multi-step changes hold the same lock in fs.py.
# One cost: an import's stat now runs Python code, and MicroPython swallows any
# exception raised inside it (extmod/vfs.c), so a Ctrl-C that the unix port raises
# there is lost; tools/sim repeats its SIGINT until the simulator stops.
import io
from mimi.fs import lock


class LockedFile(io.IOBase):
    """A VfsLfs2 file whose every operation holds the filesystem lock. As an IOBase
    it is also a stream for C code (json.load, import)."""

    def __init__(self, f):
        self._f = f

    def read(self, *n):
        with lock:
            return self._f.read(*n)

    def readinto(self, buf, *n):
        with lock:
            return self._f.readinto(buf, *n)

    def readline(self, *n):
        with lock:
            return self._f.readline(*n)

    def write(self, data):
        with lock:
            return self._f.write(data)

    def seek(self, *a):
        with lock:
            return self._f.seek(*a)

    def tell(self):
        with lock:
            return self._f.tell()

    def flush(self):
        with lock:
            return self._f.flush()

    def close(self):
        with lock:
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

    def __init__(self, fs):
        self._fs = fs

    def open(self, path, mode):
        with lock:
            return LockedFile(self._fs.open(path, mode))

    def ilistdir(self, *path):
        with lock:
            return iter(list(self._fs.ilistdir(*path)))

    def __getattr__(self, name):  # mount, stat, rename, remove, mkdir, statvfs, ...
        fn = getattr(self._fs, name)

        def call(*args):
            with lock:
                return fn(*args)

        return call
