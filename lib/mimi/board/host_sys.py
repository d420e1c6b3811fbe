# Host fakes of the board's hardware the firmware uses now and then: GPIO pins (the
# simulated parts of mimi/devices/sim/ wire to them), the access-point interface, the
# OTA app partitions, and the mount of a flash image (tests, tools/simboot.py).
# Loaded on first use: board/__init__.py's __getattr__.
# Tests look at their state (SIM_PINS, SimAP.cfg, Partition.boot) instead of a
# real chip's behaviour.
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
    valid = False
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


class Pin:
    """machine.Pin's API on simulated pins; SIM_PINS holds every pin's state
    ({"mode", "level", "pull"}). An input's level comes from what is wired to it
    (SIM_WIRES: a simulated part; sim_drive: a bare signal), else its pull, else it
    floats and keeps the level it last had. irq() handlers run as soft IRQs
    (micropython.schedule) when that level changes."""

    IN = 1
    OUT = 3
    OPEN_DRAIN = 7
    PULL_UP = 2
    PULL_DOWN = 1
    IRQ_RISING = 1
    IRQ_FALLING = 2

    def __init__(self, pin, mode=-1, pull=-1, value=None):
        if not (0 <= pin <= 21 or 33 <= pin <= 48):  # the firmware's Pin table (§1.1)
            raise ValueError("invalid pin")
        self.id = pin
        self._st = SIM_PINS.setdefault(pin, {"mode": None, "level": 0, "pull": None})
        self.init(mode, pull, value)

    def init(self, mode=-1, pull=-1, value=None):
        st = self._st
        if mode != -1:
            st["mode"] = mode
        if pull != -1:
            st["pull"] = pull
        if value is not None and st["mode"] in (Pin.OUT, Pin.OPEN_DRAIN):
            self._write(1 if value else 0)  # the chip writes the level before the direction
        elif mode != -1 or pull != -1:
            settle(self.id)

    def value(self, v=None):
        if v is None:
            return self._st["level"] if self._st["mode"] == Pin.OUT else settle(self.id)
        if self._st["mode"] in (Pin.OUT, Pin.OPEN_DRAIN):
            self._write(1 if v else 0)

    def _write(self, v):
        n = self.id
        if self._st["mode"] == Pin.OPEN_DRAIN:
            _OD[n] = v
            settle(n)
        else:
            _edge(n, v)
        part = SIM_WIRES.get(n)
        if part is not None:
            part.written(n, v)

    def on(self):
        self.value(1)

    def off(self):
        self.value(0)

    def irq(self, handler=None, trigger=3, hard=False):
        if handler is None:
            _IRQS.pop(self.id, None)
        else:
            _IRQS[self.id] = (handler, trigger, self)


SIM_PINS = {}
SIM_WIRES = {}  # pin -> the simulated part (or bus) wired to it: drive(pin), written(pin, v)
_EXT = {}  # pin -> level of a bare outside signal (sim_drive)
_OD = {}  # pin -> open-drain output latch (1: released)
_IRQS = {}  # pin -> (handler, trigger, Pin)


def _edge(n, level):
    """Store a pin's new level; a change fires its irq handler."""
    st = SIM_PINS[n]
    if st["level"] == level:
        return
    st["level"] = level
    h = _IRQS.get(n)
    if h and h[1] & (Pin.IRQ_RISING if level else Pin.IRQ_FALLING):
        import micropython

        try:
            micropython.schedule(h[0], h[2])
        except RuntimeError:  # the queue is full: the edge is lost, as on the chip
            pass


def settle(n):
    """Work out pin n's level from what drives it (after a part changed, or on a read)."""
    st = SIM_PINS.get(n)
    if st is None:
        st = SIM_PINS[n] = {"mode": None, "level": 0, "pull": None}
    mode = st["mode"]
    if mode == Pin.OUT:
        return st["level"]
    part = SIM_WIRES.get(n)
    v = part.drive(n) if part is not None else _EXT.get(n)
    if mode == Pin.OPEN_DRAIN and _OD.get(n, 1) == 0:
        v = 0
    if v is None:
        pull = st["pull"]
        v = 1 if pull == Pin.PULL_UP else 0 if pull == Pin.PULL_DOWN else st["level"]
    _edge(n, v)
    return v


def sim_drive(pin, level):
    """An outside signal on a bare pin (None: nothing drives it any more)."""
    SIM_PINS.setdefault(pin, {"mode": Pin.IN, "level": 0, "pull": None})
    _EXT[pin] = None if level is None else 1 if level else 0
    settle(pin)


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
    from mimi.fs import lock

    bdev = FileBlockDev(path, block_count, limits.BLOCK_SIZE)
    if mkfs:
        vfs.VfsLfs2.mkfs(bdev)
    fs = LockedVfs(vfs.VfsLfs2(bdev), lock)  # no GIL here: one thread in LittleFS at a time
    if host.image_path is None:
        posix = vfs.VfsPosix("/")
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


def __getattr__(name):
    """The device drivers' hardware seam on the host (board.I2C, board.ADC, ...)."""
    if name[:1] == "_":
        raise AttributeError(name)
    __import__("mimi.board.host_io")
    return getattr(sys.modules["mimi.board.host_io"], name)
