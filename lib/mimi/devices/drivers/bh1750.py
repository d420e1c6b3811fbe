# ROHM BH1750FVI ambient light, I2C 0x23/0x5C: power on (0x01), one-time
# high-resolution measurement (0x20: 180 ms at most, then the part powers down by
# itself), 2 bytes big-endian; lux = count / 1.2 at the default measurement time. The
# result is read 200 ms after the command: the datasheet's 180 ms at most, and a margin
# (a read too early gets the previous result).
from micropython import const
from mimi.devices.drivers.i2cpart import Part
from mimi.devices.table import qty

_WAIT_MS = const(200)


def convert(data):
    return (data[0] << 8 | data[1]) / 1.2


class BH1750(Part):
    def read(self):
        yield from self.cmd(b"\x01")  # power on (the commands as literals: no names kept, sht3x.py)
        self.send(b"\x20")  # one-time high resolution
        yield _WAIT_MS
        return (qty("", convert(self.recv(2)), "lx", 0),)


def make(dev):
    return BH1750(dev)
