# WS2812B / SK6812 addressable LEDs (a strip, or a board's own RGB LED), from the
# WS2812B datasheet (reference/hardware.md §3.14): each LED takes the first 24 bits
# (GRB, MSB first; 32 bits GRBW on SK6812 RGBW) of what reaches its input and passes
# the rest on; a bit is a 1 when its high time is long (T1H 0.8 µs, T0H 0.4 µs,
# ±150 ns: the simulated LED decides at 600 ns). Every bitstream() is a frame (the
# line idles low past the reset time between calls). LEDs start dark.
from mimi.devices.sim.parts import PIN, Part

_THRESHOLD_NS = 600


class Strip(Part):
    KEYS = (("pin", PIN), ("n", 1), ("bpp", 3))

    def __init__(self, type_, params):
        Part.__init__(self, type_, params)
        self.leds = [(0,) * self.bpp] * self.n
        self.frames = 0

    def check(self):
        if not 1 <= self.n <= 1024 or self.bpp not in (3, 4):
            raise ValueError("rgb_led: n is 1..1024, bpp 3 (RGB) or 4 (RGBW)")

    def bitstream(self, timing, data):
        t0h, _, t1h, _ = timing
        zero = 0xFF if t0h > _THRESHOLD_NS else 0  # what a 0 bit reads as
        one = 0xFF if t1h > _THRESHOLD_NS else 0
        bpp = self.bpp
        for i in range(min(self.n, len(data) // bpp)):
            px = [(b & one) | (~b & zero) for b in data[i * bpp:(i + 1) * bpp]]
            px[0], px[1] = px[1], px[0]  # GRB(W) on the wire
            self.leds[i] = tuple(px)
        self.frames += 1

    def state(self):
        return list(self.leds)


TYPES = {"rgb_led": Strip}
