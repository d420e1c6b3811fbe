# What the I2C parts' drivers share: transfers on the device's bus under its lock, a
# part that does not answer or a stuck bus as a Fault that says which, and the
# Sensirion/Aosong CRC-8 (SHT3x, AHT20: polynomial 0x31, init 0xFF).
import mimi
from mimi.devices import bus
from mimi.devices.table import Fault, qty

HINT = ("the wiring (SDA to SDA, SCL to SCL), the address, the pull-ups (4.7 kOhm to 3V3) "
        "and the power (3.3 V)")


def fault(e):
    """The Fault of a failed transfer (devices/faults.py's words, loaded for it)."""
    return mimi.load("mimi.devices.faults").i2c(e)


class Part:
    HINT = HINT

    def __init__(self, dev):
        p = dev.params
        self.dev = dev
        self.addr = p["addr"]
        try:
            self.bus = bus.i2c(p["sda"], p["scl"])
        except ValueError as e:
            raise Fault("off", str(e))

    def io(self, fn, *args):
        """The bus's machine.I2C method `fn` (its name) on this part's address, under the
        bus's lock; a part that does not answer or a stuck bus is a Fault."""
        b = self.bus
        with b.lock:
            try:
                return getattr(b.i2c, fn)(self.addr, *args)
            except OSError as e:
                raise fault(e)

    def send(self, data):
        self.io("writeto", data)

    def recv(self, n):
        return self.io("readfrom", n)

    def cmd(self, data, wait_ms=5):
        """send(data), tried again once wait_ms later if the part did not acknowledge: a
        part is deaf for a moment after power-up or its previous command (a generator:
        `yield from self.cmd(b"...")`)."""
        b = self.bus
        with b.lock:
            try:
                b.i2c.writeto(self.addr, data)
                return
            except OSError as e:
                if not e.args or e.args[0] != 19:  # only a NACK; a stuck bus is said at once
                    raise fault(e)
        yield wait_ms
        self.send(data)

    def fetch(self, n, tries=3, wait_ms=5):
        """recv(n) of a part that does not acknowledge its address while it measures:
        tried again wait_ms later (a generator: `data = yield from self.fetch(6)`)."""
        for i in range(tries):
            try:
                return self.recv(n)
            except Fault:
                if i == tries - 1:
                    raise
            yield wait_ms


def crc8(data, start=0, n=2):
    c = 0xFF
    for i in range(start, start + n):
        c ^= data[i]
        for _ in range(8):
            c = ((c << 1) ^ 0x31) & 0xFF if c & 0x80 else (c << 1) & 0xFF
    return c


def crc_fault(data):
    return mimi.load("mimi.devices.faults").crc(data)


def climate(t, rh, lo, hi, part):
    """A temperature and humidity reading, once the temperature is within the part's range."""
    if not lo <= t <= hi:
        raise Fault("range", "%.1f °C, outside the %s's %d to %d °C" % (t, part, lo, hi))
    return qty("", t, "°C"), qty("humidity", rh, "%")
