# The buses the parts share: the ESP32-S3's two I2C controllers, each on the pins of
# the devices that use it, and the 1-Wire lines. Each has a lock, held around one
# transfer at a time (never across a conversion's wait), so the agent thread and the
# asyncio loop can take turns on one bus.
import _thread
from mimi import board, limits

_lock = _thread.allocate_lock()
_i2c = {}  # (sda, scl) -> I2CBus
_ow = {}  # pin -> OneWire


class I2CBus:
    def __init__(self, hid, sda, scl):
        self.id, self.sda, self.scl = hid, sda, scl
        self.lock = _thread.allocate_lock()
        self.i2c = board.I2C(hid, scl=board.Pin(scl), sda=board.Pin(sda), freq=limits.I2C_FREQ,
                             timeout=limits.I2C_TIMEOUT_US)

    def name(self):
        return "SDA %d / SCL %d" % (self.sda, self.scl)


def i2c(sda, scl):
    """The bus on these pins, made on first use with a free controller. ValueError when
    both controllers serve other pins."""
    with _lock:
        b = _i2c.get((sda, scl))
        if b is None:
            used = [x.id for x in _i2c.values()]
            free = [i for i in (0, 1) if i not in used]
            if not free:
                raise ValueError("both I2C controllers are in use (%s)" % ", ".join(
                    x.name() for x in _i2c.values()))
            b = _i2c[(sda, scl)] = I2CBus(free[0], sda, scl)
        return b


def known(sda, scl):
    return (sda, scl) in _i2c


def forget(sda, scl):
    """No device uses this bus any more: its controller is free for other pins."""
    with _lock:
        _i2c.pop((sda, scl), None)


class OneWire:
    def __init__(self, pin):
        self.pin = pin
        self.lock = _thread.allocate_lock()
        self.ds = board.ds18x20(pin)


def onewire(pin):
    with _lock:
        b = _ow.get(pin)
        if b is None:
            b = _ow[pin] = OneWire(pin)
        return b
