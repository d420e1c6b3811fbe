# The firmware's C module _onewire (extmod/modonewire.c) on simulated pins: bus
# reset with presence detect, read and write time slots (the slot times of the C
# code: reset 480 + 70 + 410 µs, a slot ~70 µs), and the Maxim CRC-8. The line is
# the 1-Wire bus wired to the pin (mimi/devices/sim/ds18b20.py); with nothing on it
# the pull-up keeps it high: no presence, every read slot a 1.
import time
from mimi.board.host_pins import SIM_WIRES


def _bus(pin):
    bus = SIM_WIRES.get(pin if isinstance(pin, int) else pin.id)
    return bus if bus is not None and hasattr(bus, "reset_pulse") else None


def reset(pin):
    bus = _bus(pin)
    time.sleep_us(960)
    return bus is not None and bus.reset_pulse()


def readbit(pin):
    bus = _bus(pin)
    time.sleep_us(70)
    return 1 if bus is None else bus.read_slot()


def writebit(pin, value):
    bus = _bus(pin)
    time.sleep_us(70)
    if bus is not None:
        bus.write_slot(1 if value else 0)


def readbyte(pin):
    bus = _bus(pin)
    time.sleep_us(560)
    v = 0
    for i in range(8):
        v |= (1 if bus is None else bus.read_slot()) << i
    return v


def writebyte(pin, value):
    bus = _bus(pin)
    time.sleep_us(560)
    if bus is not None:
        for i in range(8):
            bus.write_slot(value >> i & 1)


def crc8(data):
    """Maxim's 1-Wire CRC-8 (x^8 + x^5 + x^4 + 1, shifted out LSB first, from 0), as
    modonewire.c computes it; the simulated parts compute theirs on their own side."""
    crc = 0
    for byte in data:
        for _ in range(8):
            mix = (crc ^ byte) & 1
            crc >>= 1
            byte >>= 1
            if mix:
                crc ^= 0x8C
    return crc
