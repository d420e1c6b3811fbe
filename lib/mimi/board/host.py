# Host side of the board layer (MicroPython unix port): a LittleFS image file as
# the flash, simulated WiFi and GPIO, reset as a special exit code for tools/sim.
import gc
import os
import sys
import vfs
from mimi import limits
from mimi.board.clock import Clock
from mimi.fs import info as fs_info  # noqa: F401  (statvfs corrected)
from mimi.board.host_sys import WDT, Partition, rtc_memory, ap_wlan  # noqa: F401

NAME = "host"
BIND_ADDR = "127.0.0.1"  # the simulator serves this machine only
CONSOLE = bool(os.getenv("MIMI_CONSOLE"))  # tools/sim --pty: stdin is the serial console
clock = Clock()
image_path = os.getenv("MIMI_SIM_IMAGE")  # tools/simboot.py: the image is mounted at / already
HOST_MOUNT = "/host"  # the host's own filesystem, once the image is mounted at /


def _adopt_root():
    """tools/simboot.py mounted the image, then dropped the modules it did that with:
    the mounted VFS takes this firmware's fs.lock from now on (and the dropped fs
    module, the previous lock's, goes away with it)."""
    from mimi.fs import lock

    for v, mountpoint in vfs.mount():
        if mountpoint == "/" and hasattr(v, "lock"):
            v.lock = lock


if image_path:
    _adopt_root()


def image_blocks(path):
    st = os.stat(path)
    return st[6] // limits.BLOCK_SIZE


def mount_image(path, block_count=None, mkfs=False):
    """Mount the LittleFS image at / like the board's flash; the host FS moves to /host.

    With mkfs, a new filesystem is made (the file is created when missing)."""
    global image_path
    if block_count is None:
        block_count = image_blocks(path)
    from mimi.board.host_vfs import FileBlockDev, LockedVfs
    from mimi.fs import lock

    bdev = FileBlockDev(path, block_count, limits.BLOCK_SIZE)
    if mkfs:
        vfs.VfsLfs2.mkfs(bdev)
    fs = LockedVfs(vfs.VfsLfs2(bdev), lock)  # no GIL here: one thread in LittleFS at a time
    if image_path is None:
        host = vfs.VfsPosix("/")
        cwd = os.getcwd()
        vfs.umount("/")
        vfs.mount(fs, "/")
        vfs.mount(host, HOST_MOUNT)
        # Keep host paths on sys.path reachable under /host.
        for i, p in enumerate(sys.path):
            if p.startswith("/") and not p.startswith(HOST_MOUNT):
                sys.path[i] = HOST_MOUNT + p
            elif p == "" and cwd != "/":
                sys.path.append(HOST_MOUNT + cwd)
        # Packages imported before the mount find their submodules through __path__.
        for m in list(sys.modules.values()):
            p = getattr(m, "__path__", None)
            if isinstance(p, str) and p.startswith("/") and not p.startswith(HOST_MOUNT):
                m.__path__ = HOST_MOUNT + p
    else:
        vfs.umount("/")
        vfs.mount(fs, "/")
    os.chdir("/")
    image_path = path
    return fs


def host_path(path):
    """A path on the host's own filesystem, as the firmware can reach it."""
    return HOST_MOUNT + path if image_path is not None else path


class SimWLAN:
    """network.WLAN's station API, always connected (the host has a network)."""

    scan_ms = 0  # how long scan() holds its caller (the board's: 2-3 s); the bench sets it
    scans = 0

    def __init__(self):
        self._active = True
        self._ssid = None

    def active(self, on=None):
        if on is not None:
            self._active = bool(on)
        return self._active

    def connect(self, ssid=None, key=None):
        self._ssid = ssid

    def disconnect(self):
        pass

    def isconnected(self):
        return self._active

    def status(self, *a):
        if a and a[0] == "rssi":
            return -40
        return 1010 if self._active else 0  # network.STAT_GOT_IP

    def ifconfig(self):
        return ("127.0.0.1", "255.0.0.0", "127.0.0.1", "127.0.0.1")

    def scan(self):
        SimWLAN.scans += 1
        if self.scan_ms:
            import time

            time.sleep_ms(self.scan_ms)
        return [(b"host-network", b"\x02\x00\x00\x00\x00\x01", 1, -40, 3, False)]

    def config(self, *args, **kw):
        if args and args[0] == "mac":
            return b"\x02\x00\x00\x00\x00\x01"
        return None


_wlan = None


def wlan():
    global _wlan
    if _wlan is None:
        _wlan = SimWLAN()
    return _wlan


class Pin:
    """machine.Pin's API on simulated pins; SIM_PINS holds every pin's state."""

    IN = 1
    OUT = 3
    PULL_UP = 2
    PULL_DOWN = 1

    def __init__(self, pin, mode=-1, pull=-1, value=None):
        self.id = pin
        st = SIM_PINS.setdefault(pin, {"mode": None, "level": 0, "pull": None})
        self._st = st
        self.init(mode, pull, value)

    def init(self, mode=-1, pull=-1, value=None):
        if mode != -1:
            self._st["mode"] = mode
        if pull != -1:
            self._st["pull"] = pull
            if self._st["mode"] == Pin.IN and pull is not None:
                self._st["level"] = 1 if pull == Pin.PULL_UP else 0
        if value is not None:
            self._st["level"] = 1 if value else 0

    def value(self, v=None):
        if v is None:
            return self._st["level"]
        if self._st["mode"] == Pin.OUT:
            self._st["level"] = 1 if v else 0

    def on(self):
        self.value(1)

    def off(self):
        self.value(0)


SIM_PINS = {}


def sim_drive(pin, level):
    """Tests: an outside signal on an input pin."""
    SIM_PINS.setdefault(pin, {"mode": Pin.IN, "level": 0, "pull": None})["level"] = 1 if level else 0


def dns_server():
    """MIMI_DNS=IP:PORT (the bench, tests): the loop's resolver asks that server, as
    the board asks its network's. Unset: None, names go to this computer's resolver."""
    v = os.getenv("MIMI_DNS")
    if not v:
        return None
    ip, _, port = v.rpartition(":")
    return (ip, int(port))


def set_unix(t):
    clock.skew += int(t) - clock.unix()


def reset():
    sys.exit(limits.SIM_RESET_EXIT)


def heap():
    """Python heap: free, alloc, largest (free block, probed up to HEAP_PROBE_MAX)."""
    from mimi.board.heapblock import largest

    gc.collect()
    return {"free": gc.mem_free(), "alloc": gc.mem_alloc(), "largest": largest()}


def unique_id():
    import binascii

    return "%08x" % binascii.crc32((image_path or "host").encode())


def reset_cause():
    return "power-on"
