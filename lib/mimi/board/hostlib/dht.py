# dht.DHT11 / dht.DHT22 (the firmware's frozen micropython-lib module's API) from the
# Aosong datasheets: a 5-byte frame, RH and T, then their sum's low byte.
from mimi.board.host_signals import dht_readinto


class DHTBase:
    def __init__(self, pin):
        self.pin = pin
        self.buf = bytearray(5)

    def measure(self):
        b = self.buf
        dht_readinto(self.pin, b)
        if (b[0] + b[1] + b[2] + b[3]) & 0xFF != b[4]:
            raise Exception("checksum error")


class DHT11(DHTBase):
    def humidity(self):
        return self.buf[0]

    def temperature(self):
        return self.buf[2]


class DHT22(DHTBase):
    def humidity(self):
        return (self.buf[0] << 8 | self.buf[1]) * 0.1

    def temperature(self):
        t = ((self.buf[2] & 0x7F) << 8 | self.buf[3]) * 0.1  # sign and magnitude
        return -t if self.buf[2] & 0x80 else t
