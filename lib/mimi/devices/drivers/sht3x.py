# Sensirion SHT3x (SHT30/31/35) temperature and humidity, I2C 0x44/0x45 (datasheet
# "SHT3x-DIS"): a single-shot measurement at high repeatability without clock
# stretching (command 0x2400: the part does not acknowledge a read until it is done,
# 15.5 ms at most), 6 bytes back: T, CRC, RH, CRC.
from micropython import const
from mimi.devices.drivers.i2cpart import Part, crc8, crc_fault, climate

_WAIT_MS = const(16)


def convert(data):
    """(°C, %RH) of the 6 bytes read back (CRCs not checked here)."""
    t = -45 + 175 * (data[0] << 8 | data[1]) / 65535
    rh = 100 * (data[3] << 8 | data[4]) / 65535
    return t, rh


class SHT3x(Part):
    def read(self):
        for _ in range(2):  # a CRC mismatch is measured again once
            yield from self.cmd(b"\x24\x00")  # (a literal: a module-level name would stay a qstr for good)
            yield _WAIT_MS
            data = yield from self.fetch(6)
            if crc8(data, 0) == data[2] and crc8(data, 3) == data[5]:
                break
        else:
            raise crc_fault(data)
        t, rh = convert(data)
        return climate(t, rh, -40, 125, "SHT3x")


def make(dev):
    return SHT3x(dev)
