# neopixel.NeoPixel (the firmware's frozen micropython-lib module's API) from the
# WS2812B / SK6812 datasheets: GRB or GRBW bytes per LED, sent with bitstream.
from mimi.board.host_io import bitstream

_ORDER = (1, 0, 2, 3)  # where r, g, b, w go in an LED's bytes


class NeoPixel:
    ORDER = _ORDER

    def __init__(self, pin, n, bpp=3, timing=1):
        self.pin = pin
        self.n = n
        self.bpp = bpp
        self.buf = bytearray(n * bpp)
        pin.init(pin.OUT)
        if isinstance(timing, int):  # 1: 800 kHz, 0: 400 kHz; else (t0h, t0l, t1h, t1l) ns
            timing = (400, 850, 800, 450) if timing else (800, 1700, 1600, 900)
        self.timing = timing

    def __len__(self):
        return self.n

    def __setitem__(self, i, v):
        base = i * self.bpp
        for k in range(self.bpp):
            self.buf[base + _ORDER[k]] = v[k]

    def __getitem__(self, i):
        base = i * self.bpp
        return tuple(self.buf[base + _ORDER[k]] for k in range(self.bpp))

    def fill(self, v):
        for i in range(self.n):
            self[i] = v

    def write(self):
        bitstream(self.pin, 0, self.timing, self.buf)
