# The buses the parts share: the ESP32-S3's two I2C controllers, each on the pins of
# the devices that use it (the 1-Wire lines are the DS18B20 driver's: no names of theirs
# in a firmware without one). Each has a lock (devices/table.py lock_of),
# held around one transfer at a time (never across a conversion's wait), so the agent
# thread and the asyncio loop take turns on one bus. A controller keeps its pins while
# the code comes and goes (state.i2c_ids).
import _thread
from mimi import board, limits
from mimi.devices import state, table

_lock = _thread.allocate_lock()
_i2c = {}  # (sda, scl) -> I2CBus, while this code is loaded


class I2CBus:
    def __init__(self, hid, sda, scl):
        self.id, self.sda, self.scl = hid, sda, scl
        self.lock = table.lock_of("i2c %d %d" % (sda, scl))
        self.i2c = board.I2C(hid, scl=board.Pin(scl), sda=board.Pin(sda), freq=limits.I2C_FREQ,
                             timeout=limits.I2C_TIMEOUT_US)

    def name(self):
        return "SDA %d / SCL %d" % (self.sda, self.scl)


def i2c(sda, scl):
    """The bus on these pins, its controller picked on first use. ValueError when both
    controllers serve other pins."""
    with _lock:
        b = _i2c.get((sda, scl))
        if b is None:
            hid = state.i2c_ids.get(sda << 8 | scl)
            if hid is None:
                used = state.i2c_ids.values()
                free = [i for i in (0, 1) if i not in used]
                if not free:
                    raise ValueError("both I2C controllers are in use (%s)" % ", ".join(
                        "SDA %d / SCL %d" % (k >> 8, k & 255) for k in state.i2c_ids))
                hid = state.i2c_ids[sda << 8 | scl] = free[0]
            b = _i2c[(sda, scl)] = I2CBus(hid, sda, scl)
        return b


def forget(sda, scl):
    """No device uses this bus: its controller is free for other pins."""
    with _lock:
        _i2c.pop((sda, scl), None)
        state.i2c_ids.pop(sda << 8 | scl, None)

