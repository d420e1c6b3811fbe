# Host side of the board layer (MicroPython unix port): a LittleFS image file as
# the flash, simulated WiFi and GPIO, reset as a special exit code for tools/sim.
# The rest (GPIO, the access point, OTA slots, mounting an image) is in
# board/host_sys.py, loaded when first used (board.__getattr__).
import gc
import os
import sys
import time
import vfs
from mimi import limits
from mimi.board.clock import Clock
from mimi.fs import info as fs_info  # noqa: F401  (statvfs corrected)

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
            time.sleep_ms(self.scan_ms)
        return [(b"host-network", b"\x02\x00\x00\x00\x00\x01", 1, -40, 3, False)]

    def config(self, *args, **kw):
        if args and args[0] == "mac":
            return b"\x02\x00\x00\x00\x00\x01"
        return None


_wlan = None


app_valid = False  # firmware_valid() was called (host_fakes.Partition.valid when it loads)


def firmware_valid():
    """As the board's: the simulated OTA slots (board/host_fakes.py) mark the running one
    valid, now or when they first load: a boot that never touches OTA does not load
    them for this (1.1 KB of heap the board does not have)."""
    global app_valid
    app_valid = True
    slots = sys.modules.get("mimi.board.host_fakes")
    if slots:
        slots.Partition.mark_app_valid_cancel_rollback()


def wlan():
    global _wlan
    if _wlan is None:
        _wlan = SimWLAN()
    return _wlan


class WDT:
    """machine.WDT: records feeds; a test asks `starved(now_ms)` instead of a reset."""

    last = None  # the most recent instance, for tests

    def __init__(self, id=0, timeout=5000):
        self.timeout = max(1000, int(timeout))
        self.feeds = 0
        self.fed_at = time.ticks_ms()
        WDT.last = self

    def feed(self):
        self.feeds += 1
        self.fed_at = time.ticks_ms()

    def starved(self, now_ms=None):
        now = time.ticks_ms() if now_ms is None else now_ms
        return time.ticks_diff(now, self.fed_at) > self.timeout


_rtc = bytearray()
RTC_MEMORY_MAX = 2048


def _rtc_file():
    return host_path(image_path + ".rtc") if image_path else None


def rtc_memory(data=None):
    """machine.RTC().memory(): survives resets, not power cycles. On the host it is
    kept next to the flash image, so the simulator's reboots keep it too."""
    global _rtc
    path = _rtc_file()
    if data is None:
        if path:
            try:
                with open(path, "rb") as f:
                    return f.read()
            except OSError:
                return b""
        return bytes(_rtc)
    data = data.encode() if isinstance(data, str) else bytes(data)
    if len(data) > RTC_MEMORY_MAX:
        raise ValueError("RTC memory holds at most %d bytes" % RTC_MEMORY_MAX)
    _rtc = bytearray(data)
    if path:
        with open(path, "wb") as f:
            f.write(data)


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
    import sys
    import mimi

    mimi.close()
    sys.exit(limits.SIM_RESET_EXIT)


# Ctrl-C. The unix port (no GIL) raises KeyboardInterrupt straight from its SIGINT
# handler, wherever the thread is; inside a garbage collection that leaves the heap
# locked for good (every allocation after it: "MemoryError: memory allocation failed,
# heap is locked"; docs/internals.md). So tools/sim starts the firmware with SIGINT
# blocked and sends each Ctrl-C as a byte on a pipe (MIMI_SIM_CTRL_C: its fd), which
# ctrl_c() raises on the loop, between two Python steps, where the board's VM raises
# it. The pipe's end (tools/sim gone) is a Ctrl-C too.
_line = None


def ctrl_c_line():
    """tools/sim's Ctrl-C pipe as a stream; None when started another way (SIGINT is
    then the port's own Ctrl-C)."""
    global _line
    fd = os.getenv("MIMI_SIM_CTRL_C")
    if _line is None and fd:
        _line = vfs.VfsPosix().open(int(fd), "rb")
    return _line


def tasks():
    """The board's own loop tasks: the simulator's Ctrl-C."""
    return [ctrl_c()] if ctrl_c_line() else []


async def ctrl_c():
    import asyncio

    await asyncio.StreamReader(ctrl_c_line()).read(1)
    raise KeyboardInterrupt


def heap():
    """Python heap: free, alloc, largest (free block, probed up to HEAP_PROBE_MAX; the
    probe's code is loaded for it: the banner and heap_info() ask, now and then)."""
    import mimi

    gc.collect()
    return {"free": gc.mem_free(), "alloc": gc.mem_alloc(), "largest": mimi.run("board.heapblock", "largest")}


SIM_C_HEAP = None  # tests: pretend the C heap's largest free block is this small


def c_heap_largest():
    """Largest free block of the C heap; None: not limited (mbedTLS uses malloc here)."""
    return SIM_C_HEAP


def unique_id():
    import binascii

    return "%08x" % binascii.crc32((image_path or "host").encode())


def before_threads():
    """The unix port has no GIL: a dict that outgrows its table is rebuilt in place,
    and a lookup from the other thread meanwhile misses keys that are there or reads
    the freed table (the soak lost a message to an import on the loop while the agent
    looked a name up). sys.modules and the firmware's packages loaded by now, which
    both threads import through, get their room before the agent thread starts (none is
    imported for it: that would put host-only code in the heap figures)."""
    import sys

    rooms = [(sys.modules, limits.HOST_MODULES_ROOM)]
    for name, m in list(sys.modules.items()):
        if (name == "mimi" or name.startswith("mimi.")) and hasattr(m, "__path__"):
            rooms.append((m.__dict__, _room(name, m)))
    for d, n in rooms:  # a table, once grown, keeps its size
        for i in range(n):
            d["_room%d" % i] = None
        for i in range(n):
            del d["_room%d" % i]


def _room(name, pkg):
    """Room package `name` needs: its modules and packages not loaded yet (the image's
    /lib has them all, the frozen build's too), HOST_PACKAGE_ROOM when it cannot tell."""
    try:
        n = 0
        for e in os.ilistdir("/lib/" + name.replace(".", "/")):
            stem = e[0].split(".")[0]
            if stem != "__init__" and stem not in pkg.__dict__:
                n += 1
        return n
    except OSError:
        return limits.HOST_PACKAGE_ROOM


def reset_cause():
    return "power-on"
