# The firmware's frozen driver modules on the host (onewire, ds18x20, dht, neopixel:
# board/hostlib/, the same API) over the simulated primitives of board/host_io.py.
# board.onewire(pin) ... come from here (board/host_sys.py's __getattr__).
from mimi.board.host_io import _pin
from mimi.board.host_pins import Pin


def onewire(pin):
    from mimi.board.hostlib import onewire

    return onewire.OneWire(Pin(_pin(pin)))


def ds18x20(pin):
    from mimi.board.hostlib import ds18x20

    return ds18x20.DS18X20(onewire(pin))


def dht(pin, model):
    from mimi.board.hostlib import dht

    if model not in (11, 22):
        raise ValueError("DHT model is 11 or 22")
    return (dht.DHT11 if model == 11 else dht.DHT22)(Pin(_pin(pin)))


def neopixel(pin, n, bpp=3, timing=1):
    from mimi.board.hostlib import neopixel

    return neopixel.NeoPixel(Pin(_pin(pin)), n, bpp=bpp, timing=timing)
