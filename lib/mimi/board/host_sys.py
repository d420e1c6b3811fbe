# Host fakes of the board's self-care hardware: the watchdog timer, RTC memory,
# the access-point interface and the OTA app partitions. Tests look at their state
# (WDT.last, SimAP.cfg, Partition.boot) instead of a real chip's behaviour.
import time
from mimi import limits


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
    from mimi.board import host

    return host.host_path(host.image_path + ".rtc") if host.image_path else None


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
