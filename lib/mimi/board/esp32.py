# ESP32-S3 side of the board layer: the LittleFS root MicroPython mounted at boot,
# the RTC, network.WLAN, machine.Pin, reset and the IDF heap figures.
import gc
import machine
import network
from mimi.board.clock import Clock
from mimi.fs import info as fs_info  # noqa: F401  (statvfs corrected)

NAME = "esp32s3"
BIND_ADDR = "0.0.0.0"
CONSOLE = True  # the USB/UART REPL: mimi.console serves it while the loop runs
clock = Clock()
Pin = machine.Pin
WDT = machine.WDT
try:
    from esp32 import Partition  # OTA slots exist only with firmware/'s partition table
except ImportError:
    Partition = None


def firmware_valid():
    """The firmware slot this boot runs is kept (esp_ota_mark_app_valid_cancel_rollback)."""
    if Partition is not None:
        Partition.mark_app_valid_cancel_rollback()


def rtc_memory(data=None):
    """RTC slow memory: survives resets (watchdog, crash, machine.reset), not power-off."""
    rtc = machine.RTC()
    return rtc.memory() if data is None else rtc.memory(data)


_ifaces = {}


def _iface(kind):
    """One network.WLAN object per interface, made on first use."""
    if kind not in _ifaces:
        _ifaces[kind] = network.WLAN(kind)
    return _ifaces[kind]


def ap_wlan():
    return _iface(network.WLAN.IF_AP)


def mount_image(path, block_count=None, mkfs=False):
    raise OSError("the board mounts its own flash at boot")


def host_path(path):
    return path


def wlan():
    return _iface(network.WLAN.IF_STA)


def dns_server():
    """(ip, port) of the DNS server DHCP gave the station; None before that."""
    try:
        ip = wlan().ifconfig()[3]
    except OSError:
        return None
    return (ip, 53) if ip and ip != "0.0.0.0" else None


def set_unix(t):
    tm = clock.gmtime(t)
    machine.RTC().datetime((tm[0], tm[1], tm[2], tm[6] + 1, tm[3], tm[4], tm[5], 0))


def reset():
    import mimi

    mimi.close()
    machine.reset()


def before_threads():
    pass  # the GIL keeps a dict whole while it grows


def tasks():
    return ()  # the board's own loop tasks: none (the VM raises Ctrl-C itself)


_INTERNAL, _PSRAM = 0x804, 0x400  # MALLOC_CAP_INTERNAL | MALLOC_CAP_8BIT, MALLOC_CAP_SPIRAM


def heap():
    """Python heap (free, alloc, largest free block probed up to HEAP_PROBE_MAX) and
    the IDF heap the Python heap grows into and WiFi/TLS live in: internal RAM
    (free, largest block, lowest free since boot) and PSRAM when there is any. The
    probe's code is loaded for it (the banner and heap_info() ask, now and then)."""
    import mimi

    gc.collect()
    info = {"free": gc.mem_free(), "alloc": gc.mem_alloc(), "largest": mimi.run("board.heapblock", "largest")}
    try:
        import esp32

        for name, caps in (("internal", _INTERNAL), ("psram", _PSRAM)):
            regions = esp32.idf_heap_info(caps)
            if regions:
                info[name + "_free"] = sum(r[1] for r in regions)
                info[name + "_largest"] = max(r[2] for r in regions)
                info[name + "_min_free"] = sum(r[3] for r in regions)
    except (ImportError, AttributeError, OSError):
        pass
    return info


def c_heap_largest():
    """Largest free block of the IDF heap (mbedTLS buffers and roots, lwIP sockets)."""
    import esp32

    return max(r[2] for r in esp32.idf_heap_info(esp32.HEAP_DATA))


def unique_id():
    import binascii

    return binascii.hexlify(machine.unique_id()).decode()


_CAUSES = {}


def reset_cause():
    if not _CAUSES:
        for name in ("PWRON_RESET", "HARD_RESET", "WDT_RESET", "DEEPSLEEP_RESET", "SOFT_RESET"):
            if hasattr(machine, name):
                _CAUSES[getattr(machine, name)] = name.lower().replace("_reset", "")
    return _CAUSES.get(machine.reset_cause(), "unknown")
