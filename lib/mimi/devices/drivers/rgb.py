# rgb_led: WS2812/SK6812 LEDs (a strip of n, or the board's own) through the firmware's
# neopixel module (board.neopixel). A value is a colour (a name, #rrggbb) and an
# optional brightness ("blue 30%"), or on/off; every channel is scaled by the
# brightness, which never exceeds the device's cap `max` (%): a full-white LED draws
# 60 mA and is blinding at arm's length. rgbw: SK6812 with a white channel (left dark).
from mimi import board
from mimi.devices.table import Fault
from mimi.devices.drivers.digital import ON, OFF

# (name, 0xRRGGBB), in the order they are listed to people
COLOURS = (
    ("red", 0xFF0000), ("green", 0x00FF00), ("blue", 0x0000FF), ("white", 0xFFFFFF),
    ("warm white", 0xFFB060), ("yellow", 0xFFD000), ("orange", 0xFF6000), ("purple", 0x8000FF),
    ("violet", 0x8000FF), ("pink", 0xFF4080), ("magenta", 0xFF00FF), ("cyan", 0x00FFFF),
    ("turquoise", 0x00FFA0), ("lime", 0x80FF00), ("gold", 0xFFA000), ("teal", 0x008080),
    ("amber", 0xFF9000),
)


def colour(name, words):
    """A colour's 0xRRGGBB from its name or #rrggbb; Fault otherwise."""
    w = words.replace("#", " ").strip()
    for k, v in COLOURS:
        if k == w:
            return v
    if len(w) == 6 and all(c in "0123456789abcdef" for c in w):
        return int(w, 16)
    raise Fault("value", "%s: unknown colour %r: use a name (%s) or #rrggbb" % (
        name, words[:32], ", ".join(k for k, _ in COLOURS if k != "violet")))


def _name(rgb):
    for k, v in COLOURS:
        if v == rgb:
            return "%s (#%06x)" % (k, rgb)
    return "#%06x" % rgb


class Rgb:
    def __init__(self, dev):
        self.dev = dev
        self.m = dev.mem  # rgb, bright, last (the colour "on" brings back)
        p = dev.params
        self.np = board.neopixel(p["pin"], p["n"], bpp=4 if p["rgbw"] else 3)

    def read(self):
        rgb, bright = self.m.get("rgb", 0), self.m.get("bright", 0)
        if not rgb or not bright:
            return (("", 0, "off"),)
        return (("", rgb, "%s at %d %%" % (_name(rgb), bright)),)

    def _show(self, rgb, bright):
        k = bright / 100
        px = (round((rgb >> 16) * k), round((rgb >> 8 & 0xFF) * k), round((rgb & 0xFF) * k))
        self.np.fill(px + (0,) if self.dev.params["rgbw"] else px)
        self.np.write()
        self.m["rgb"], self.m["bright"] = rgb, bright
        if rgb:
            self.m["last"] = rgb

    def off(self):
        self._show(0, 0)
        return self.read()

    def close(self):
        self.off()

    def check(self, value):
        """Fault unless set(value) would take it (a rule's value, checked before it is kept)."""
        self.set(value, False)

    def set(self, value, show=True):
        name = self.dev.name
        cap = self.dev.params["max"]
        w = str(value).strip().lower()
        bright = None
        words = w.split()
        if words and words[-1].endswith("%"):
            try:
                bright = float(words[-1][:-1])
            except ValueError:
                raise Fault("value", "%s: brightness is a percentage, e.g. 30%%" % name)
            if not 0 <= bright <= 100:
                raise Fault("value", "%s: brightness is 0 to 100 %%, not %s" % (name, words[-1]))
            w = " ".join(words[:-1])
        if w in OFF[1:] or w == "black":
            if show:
                self._show(0, 0)
            return self.read()
        rgb = self.m.get("last", 0xFFFFFF) if w in ON[1:] or (not w and bright is not None) else colour(name, w)
        if not show:
            return None
        capped = bright is not None and bright > cap
        self._show(rgb, min(cap, cap if bright is None else bright))
        r = self.read()
        if capped:
            return r + (("", None, "(brightness capped at %d %%, the device's max)" % cap),)
        return r


def make(dev):
    return Rgb(dev)
