# ASAIR AHT20 temperature and humidity, I2C 0x38 (datasheet "AHT20"): calibrated on
# first use if its status says it is not (0xBE 0x08 0x00), then each reading is a
# trigger (0xAC 0x33 0x00), at least 80 ms, and 7 bytes: status (bit 7 busy), 20 bits
# of humidity, 20 bits of temperature, CRC-8 over the first 6.
from micropython import const
from mimi.devices.drivers.i2cpart import Part, crc8, crc_fault, climate
from mimi.devices.table import Fault

_INIT = b"\xbe\x08\x00"
_TRIGGER = b"\xac\x33\x00"
_WAIT_MS = const(80)
_INIT_MS = const(20)  # the datasheet's 10 ms, and as much again
_BUSY = const(0x80)
_CALIBRATED = const(0x08)


def convert(data):
    """(°C, %RH) of the 7 bytes read back."""
    rh = (data[1] << 12 | data[2] << 4 | data[3] >> 4) * 100 / 1048576
    t = ((data[3] & 0x0F) << 16 | data[4] << 8 | data[5]) * 200 / 1048576 - 50
    return t, rh


class AHT20(Part):
    def read(self):
        m = self.dev.mem
        why = None
        for _ in range(2):  # a CRC mismatch, or a part that lost its calibration: once more
            if not m.get("ready"):
                if not self.recv(1)[0] & _CALIBRATED:
                    self.send(_INIT)
                    yield _INIT_MS
                m["ready"] = True
            yield from self.cmd(_TRIGGER)
            yield _WAIT_MS
            for _ in range(5):
                data = self.recv(7)
                if not data[0] & _BUSY:
                    break
                yield 10
            else:
                m["ready"] = False
                raise Fault("answer", "it stayed busy 130 ms after a measurement started")
            if not data[0] & _CALIBRATED:
                m["ready"] = False
                why = Fault("data", "it did not keep its calibration (status 0x%02x)" % data[0])
                continue
            if crc8(data, 0, 6) == data[6]:
                break
            why = crc_fault(data)
        else:
            raise why
        t, rh = convert(data)
        return climate(t, rh, -40, 85, "AHT20")


def make(dev):
    return AHT20(dev)
