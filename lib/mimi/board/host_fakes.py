# Host fakes of the board's hardware the firmware uses now and then: the
# access-point interface, the OTA app partitions, and the mount of a flash image
# (tests, tools/simboot.py). Loaded on first use through board/host_sys.py's
# __getattr__ (board.ap_wlan, board.Partition, board.mount_image). Tests look at
# their state (SimAP.cfg, Partition.boot) instead of a real chip's behaviour.
import os
import sys
import vfs
from mimi import limits


class SimAP:
    """network.WLAN(IF_AP): remembers its config; tests read `cfg` and `active()`."""

    def __init__(self):
        self._active = False
        self.cfg = {"essid": "", "password": "", "channel": limits.AP_CHANNEL}

    def active(self, on=None):
        if on is not None:
            self._active = bool(on)
        return self._active

    def config(self, *args, **kw):
        if args:
            if args[0] == "mac":
                return b"\x02\x00\x00\x00\xa1\xb2"
            return self.cfg.get(args[0])
        if "ssid" in kw:
            kw["essid"] = kw.pop("ssid")
        if "key" in kw:
            kw["password"] = kw.pop("key")
        self.cfg.update(kw)
        return None

    def ifconfig(self):
        return (limits.AP_IP, "255.255.255.0", limits.AP_IP, limits.AP_IP)

    def isconnected(self):
        return False


_ap = None


def ap_wlan():
    global _ap
    if _ap is None:
        _ap = SimAP()
    return _ap


class Partition:
    """esp32.Partition for two OTA app slots held in RAM. `Partition.boot` is the
    label the next boot would start; `Partition.valid` whether the running app
    was marked good."""

    BOOT = 0
    RUNNING = 1
    TYPE_APP = 0
    TYPE_DATA = 1
    SLOT_SIZE = 64 * 1024  # small: tests write whole images
    slots = {}
    running = "ota_0"
    boot = "ota_0"
    valid = getattr(sys.modules.get("mimi.board.host"), "app_valid", False)  # (board.firmware_valid())
    ota = True  # False: a factory-only table like the stock firmware's

    def __init__(self, id, block_size=4096):
        if id == Partition.RUNNING:
            id = Partition.running
        elif id == Partition.BOOT:
            id = Partition.boot
        self.label = id
        self.bs = block_size
        if id not in Partition.slots:
            Partition.slots[id] = bytearray(b"\xff" * Partition.SLOT_SIZE)

    def info(self):
        addr = 0x10000 if self.label == "ota_0" else 0x280000
        return (Partition.TYPE_APP, 0x10, addr, Partition.SLOT_SIZE, self.label, False)

    def get_next_update(self):
        if not Partition.ota:
            raise OSError(2)  # ENOENT, as on a table without OTA slots
        return Partition("ota_1" if self.label == "ota_0" else "ota_0", self.bs)

    def readblocks(self, n, buf, off=0):
        data = Partition.slots[self.label]
        start = n * self.bs + off
        buf[:] = data[start:start + len(buf)]

    def writeblocks(self, n, buf, off=None):
        data = Partition.slots[self.label]
        start = n * self.bs + (off or 0)
        if start + len(buf) > len(data):
            raise OSError(28)
        if off is None:  # erase-then-write, like the real one
            nblocks = (len(buf) + self.bs - 1) // self.bs
            data[n * self.bs:(n + nblocks) * self.bs] = b"\xff" * (nblocks * self.bs)
        data[start:start + len(buf)] = buf

    def ioctl(self, op, arg):
        if op == 4:
            return Partition.SLOT_SIZE // self.bs
        if op == 5:
            return self.bs
        return 0

    def set_boot(self):
        Partition.boot = self.label

    @classmethod
    def mark_app_valid_cancel_rollback(cls):
        cls.valid = True


def image_blocks(path):
    st = os.stat(path)
    return st[6] // limits.BLOCK_SIZE


def mount_image(path, block_count=None, mkfs=False):
    """Mount the LittleFS image at / like the board's flash; the host FS moves to /host.

    With mkfs, a new filesystem is made (the file is created when missing)."""
    from mimi.board import host

    if block_count is None:
        block_count = image_blocks(path)
    from mimi.board.host_vfs import FileBlockDev, LockedVfs
    from mimi.flashmount import lfs
    from mimi.fs import lock

    bdev = FileBlockDev(path, block_count, limits.BLOCK_SIZE)
    if mkfs:
        vfs.VfsLfs2.mkfs(bdev)  # (as the board's first boot makes it: inisetup.py)
    # LittleFS as boot.py remounts the board's (flashmount.lfs); no GIL here: one
    # thread in it at a time
    fs = LockedVfs(lfs(bdev), lock)
    if host.image_path is None:
        # No root: VfsPosix(root) makes each path in one buffer of its own (root +
        # path), and without a GIL the other thread's path took its place between
        # making and using it (an import opened or stat-ed the other thread's file:
        # ENOENT, or a module found as a folder). Without one it takes paths as given.
        posix = vfs.VfsPosix()
        cwd = os.getcwd()
        vfs.umount("/")
        vfs.mount(fs, "/")
        vfs.mount(posix, host.HOST_MOUNT)
        # Keep host paths on sys.path reachable under /host.
        for i, p in enumerate(sys.path):
            if p.startswith("/") and not p.startswith(host.HOST_MOUNT):
                sys.path[i] = host.HOST_MOUNT + p
            elif p == "" and cwd != "/":
                sys.path.append(host.HOST_MOUNT + cwd)
        # Packages imported before the mount find their submodules through __path__.
        for m in list(sys.modules.values()):
            p = getattr(m, "__path__", None)
            if isinstance(p, str) and p.startswith("/") and not p.startswith(host.HOST_MOUNT):
                m.__path__ = host.HOST_MOUNT + p
    else:
        vfs.umount("/")
        vfs.mount(fs, "/")
    os.chdir("/")
    host.image_path = path
    return fs
