# The device drivers' hardware seam on the host (board/esp32_io.py is the board's):
# machine.I2C and bitstream with the firmware's APIs and errors, acting on the
# simulated parts of mimi/devices/sim/ wired to the pins (board/host_pins.py SIM_WIRES)
# and buses; ADC, PWM, time_pulse_us, dht_readinto and esp32.mcu_temperature are in
# board/host_signals.py, loaded when one of them is first asked for (__getattr__ below);
# onewire/ds18x20/dht/neopixel from board/hostlib/. Loaded by board.__getattr__ when a
# driver first asks for one of these. The calls take the time the chip's take (bus
# clocks, clock stretching, timeouts, pulses), sleeping it.
import time
from mimi.board.host_pins import SIM_WIRES, Pin

_ENODEV = 19
_ETIMEDOUT = 110


def _pin(p):
    """A pin argument (number or Pin) -> its number, checked against the Pin table."""
    return Pin(p).id if isinstance(p, int) else p.id


def _parts():
    from mimi.devices.sim import parts

    return parts


class I2C:
    """machine.I2C (hardware I2C of the ESP32-S3): a NACK is OSError(19), a bus held
    low or SCL stretched past `timeout` µs is OSError(110) after that time."""

    def __init__(self, id=0, *, scl=9, sda=8, freq=400000, timeout=50000):
        if id not in (0, 1):
            raise ValueError("I2C(%s) doesn't exist" % id)
        if freq <= 0:
            raise ValueError("bad frequency")
        self.scl, self.sda = _pin(scl), _pin(sda)
        self.freq, self.timeout = freq, timeout

    def __repr__(self):
        return "I2C(scl=%d, sda=%d, freq=%d)" % (self.scl, self.sda, self.freq)

    def _bus(self):
        return _parts().i2c_bus(self.sda, self.scl) or {}

    def _stuck(self, bus):
        for p in bus.values():
            if p.fault == "stuck":
                return True
        return False

    def _part(self, addr, reading):
        bus = self._bus()
        if self._stuck(bus):
            time.sleep_us(self.timeout)
            raise OSError(_ETIMEDOUT)
        part = bus.get(addr)
        if part is None or not part.ack(reading):
            time.sleep_us(self._clock_us(0))
            raise OSError(_ENODEV)
        return part

    def _clock_us(self, nbytes):
        return (nbytes + 1) * 9 * 1000000 // self.freq  # address and data bytes, 9 clocks each

    def scan(self):
        bus = self._bus()
        if self._stuck(bus):  # every probe fails; extmod's scan lists none and raises nothing
            time.sleep_us(self.timeout)
            return []
        found = []
        for addr in range(0x08, 0x78):
            p = bus.get(addr)
            if p is not None and p.ack(False) and p.write(b""):
                found.append(addr)
        time.sleep_us(self._clock_us(0) * 112)
        return found

    def writeto(self, addr, buf, stop=True):
        part = self._part(addr, False)
        time.sleep_us(self._clock_us(len(buf)))
        if not part.write(bytes(buf)):
            raise OSError(_ENODEV)
        return len(buf)

    def writevto(self, addr, vector, stop=True):
        return self.writeto(addr, b"".join(bytes(b) for b in vector), stop)

    def readfrom_into(self, addr, buf, stop=True):
        part = self._part(addr, True)
        wait = part.stretch_us()
        if wait > self.timeout:
            time.sleep_us(self.timeout)
            raise OSError(_ETIMEDOUT)
        time.sleep_us(wait + self._clock_us(len(buf)))
        data = part.read(len(buf))
        for i in range(len(buf)):
            buf[i] = data[i]

    def readfrom(self, addr, nbytes, stop=True):
        buf = bytearray(nbytes)
        self.readfrom_into(addr, buf, stop)
        return bytes(buf)

    def readfrom_mem_into(self, addr, memaddr, buf, *, addrsize=8):
        self.writeto(addr, _memaddr(memaddr, addrsize), False)
        self.readfrom_into(addr, buf)

    def readfrom_mem(self, addr, memaddr, nbytes, *, addrsize=8):
        buf = bytearray(nbytes)
        self.readfrom_mem_into(addr, memaddr, buf, addrsize=addrsize)
        return bytes(buf)

    def writeto_mem(self, addr, memaddr, buf, *, addrsize=8):
        self.writeto(addr, _memaddr(memaddr, addrsize) + bytes(buf))


def _memaddr(memaddr, addrsize):
    if addrsize % 8 or not 0 < addrsize <= 32:
        raise ValueError("invalid addrsize")
    return bytes((memaddr >> s) & 0xFF for s in range(addrsize - 8, -1, -8))


def bitstream(pin, encoding, timing, buf):
    """machine.bitstream, high-low encoding (0): each bit high then low for the
    timing's (t0h, t0l, t1h, t1l) ns; delivered to the part on the pin."""
    if encoding != 0:
        raise ValueError("invalid encoding")
    t0h, t0l, t1h, t1l = timing
    n = _pin(pin)
    ones = 0
    for b in buf:
        while b:
            ones += b & 1
            b >>= 1
    zeros = len(buf) * 8 - ones
    time.sleep_us((ones * (t1h + t1l) + zeros * (t0h + t0l)) // 1000)
    part = SIM_WIRES.get(n)
    if part is not None and hasattr(part, "bitstream"):
        part.bitstream((t0h, t0l, t1h, t1l), bytes(buf))


_SIGNALS = ("ADC", "PWM", "time_pulse_us", "dht_readinto", "mcu_temperature", "SIM_CHIP", "CHIP_TEMP", "SIM_PWM")


def __getattr__(name):
    """The seam's other half (board/host_signals.py), loaded when first asked for: a
    device file of I2C parts and LEDs does not carry it."""
    if name not in _SIGNALS:
        raise AttributeError(name)
    import mimi

    return getattr(mimi.load("mimi.board.host_signals"), name)  # (under the flash's lock: both threads ask)
