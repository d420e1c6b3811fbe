# A chart's rows as png.Encoder asks for them (services/history/chart.py): each its
# background copied from one of four templates, the labels' glyph rows (font.py) and
# the curve's columns that cross it, found through the columns sorted by their top row.
# Loaded with the encoder, after the chart was made from the store's readings: the
# first row paints the templates and turns the labels' texts into glyph numbers.
from micropython import const
from mimi.services.history import font

BG = const(0)  # the colours: chart.PALETTE's
GRID = const(1)
INK = const(2)
LINE = const(3)


def glyphs(text):
    """Glyph numbers of `text` in font.CHARS ('?' for characters it does not draw)."""
    q = font.CHARS.find("?")
    return bytes(i if i >= 0 else q for i in (font.CHARS.find(c) for c in text))


def _paint(c):
    """The first row's work: the templates painted, the labels' texts made glyph numbers."""
    t = c.templates
    x0, _, cols = c.frame[:3]
    for x in range(x0, x0 + cols):
        _px(t[2], x, GRID)
        _px(t[3], x, INK)
    for x in c.ticks:
        _px(t[1], x, GRID)
    for k in (1, 2, 3):
        _px(t[k], x0 - 1, INK)
    lb = c.labels
    out = bytearray()
    j = 0
    while j < len(lb):
        n = lb[j + 3]
        g = glyphs(str(lb[j + 4:j + 4 + n], "utf-8"))
        out += lb[j:j + 3] + bytes((len(g),)) + g
        j += 4 + n
    c.labels = out
    c.painted = True


def row(c, y):
    """Row y: filter type 0, then the packed pixels (c.buf, used before the next call)."""
    if not c.painted:
        _paint(c)
    r = c.buf
    x0, y0, _, y1 = c.frame[:4]
    r[:] = c.templates[(2 if y in c.grid else 1) if y0 <= y < y1 else 3 if y == y1 else 0]
    bits = font.BITS
    lb = c.labels
    j = 0
    while j < len(lb):
        n = lb[j + 3]
        k = y - lb[j + 2]
        if 0 <= k < font.H:
            x = lb[j] | lb[j + 1] << 8
            rb = bits[k]
            for i in range(n):
                m = rb[lb[j + 4 + i]]
                if m:
                    for b in range(font.W):
                        if m & (16 >> b):
                            _px(r, x + i * font.ADVANCE + b, INK)
        j += 4 + n
    if y == 0:
        c.active = []
    order = c.order
    act = c.active
    for j in range(c.first[y + 1], c.first[y + 2]):
        act.append(order[j])
    if act:
        bot = c.bot
        keep = []
        for x in act:
            if bot[x] >= y:
                _px(r, x0 + x, LINE)
                keep.append(x)
        c.active = keep
    for mx, my in c.marks:
        d = y - my
        if -3 <= d <= 3:
            for x in range(mx - 3, mx + 4) if d in (-3, 3) else (mx - 3, mx + 3):
                _px(r, x, INK)
    return r


def _px(r, x, c):
    if 0 <= x < (len(r) - 1) * 4:
        i = 1 + (x >> 2)
        sh = 6 - ((x & 3) << 1)
        r[i] = r[i] & ~(3 << sh) | c << sh
