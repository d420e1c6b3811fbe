# A device's history as a PNG drawn on the board (/chart NAME [hours] on Telegram).
#
# 4 colours, 2 bits a pixel (480 x 240: 29 KB in stored blocks). The bitmap is never
# held: the readings stream from the flash twice, once for their min and max (the
# scale), once for each plot column's span of pixel rows (joined to the next column
# across gaps shorter than two readings), and png.Encoder asks for the rows one at a
# time (rows.py): a row is its background (grid, axes) copied from one of four
# templates, the labels' glyph rows (font.py) and the curve's columns that cross it,
# found through the columns sorted by their top row.
#
# The store and query.py are needed only while the chart is made (the two passes, the
# labels), the rows' drawing (rows.py, font.py) and the encoder (png.py) only once rows
# are asked for: nothing here keeps the first two, so a caller can drop the store's code
# before the PNG is made (channels/charts.py).
import sys
import math
from array import array
from micropython import const
import mimi
from mimi import board, limits

PALETTE = ((255, 255, 255), (221, 221, 221), (64, 64, 64), (31, 119, 180))  # rows.py's BG, GRID, INK, LINE
_LEFT = const(46)  # room for the value labels (7 characters)
_RIGHT = const(10)
_TOP = const(26)  # two lines of text above the plot
_BOTTOM = const(14)  # the time labels below it
_EMPTY = const(255)  # a column's top row when it has no readings
_ADVANCE = const(6)  # font.py's ADVANCE: the layout is made before the font is loaded (row())
_TIME_TICKS = (600, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800)


def _nice(x):
    """The step of 1, 2, 2.5 or 5 times a power of ten at or above x."""
    p = 10.0 ** math.floor(math.log10(x))
    for m in (1, 2, 2.5, 5, 10):
        if m * p >= x * 0.999:
            return m * p
    return 10 * p


def _decimals(step):
    d = 0
    while d < 6 and abs(step * 10 ** d - round(step * 10 ** d)) > 1e-6:
        d += 1
    return d


def _with_unit(num, v, unit):
    return num(v) + (unit if unit[:1] in ("\u00b0", "%") else " " + unit) if unit else num(v)


class Chart:
    """Device `name`'s readings over the last `hours` hours (before `now`, the clock's
    time by default) drawn width x height, times in the UTC offset tz_s, values in
    `unit`; field 1 draws the second value. size() is the PNG's length in bytes,
    pieces() its bytes in order (each valid until the next), write(out) sends it all
    to out.write. `deflate` as png.Encoder's (None: the firmware's compressor if any)."""

    def __init__(self, name, hours=24, tz_s=0, unit="", field=0, title=None, now=None,
                 width=limits.CHART_W, height=limits.CHART_H, deflate=None):
        if not (_LEFT + _RIGHT + 16 <= width <= 4096 and _TOP + _BOTTOM + 16 <= height < _EMPTY):
            raise ValueError("a chart is %d to 4096 pixels wide and %d to %d high" % (
                _LEFT + _RIGHT + 16, _TOP + _BOTTOM + 16, _EMPTY - 1))
        if field not in (0, 1):
            raise ValueError("field is 0 (the value) or 1 (the second value)")
        # loaded under the flash's lock (mimi.load): the agent's device_history loads and
        # drops the same modules, and MicroPython has no import lock (a half-made one)
        mine = "mimi.services.history.query" not in sys.modules  # (then let go once made)
        query = mimi.load("mimi.services.history.query")
        store = mimi.load("mimi.services.history.store")
        self.w = width
        self.h = height
        s0, s1 = query.span_of(hours, now)
        self.cols = cols = width - _LEFT - _RIGHT
        y0, y1 = _TOP, height - _BOTTOM  # plot rows y0 .. y1 - 1; y1 is the time axis
        # what is kept, made first: the passes below leave garbage between them
        self.top = top = bytearray(cols)
        self.bot = bot = bytearray(cols)
        self.order = array("H", bytes(2 * cols))
        self.first = array("H", bytes(2 * (_EMPTY + 2)))
        rb = (width * 2 + 7) // 8
        # the rows' templates (painted by the first row: rows.py): outside the plot, in it, a grid line, the time axis
        self.templates = [bytearray(1 + rb) for _ in range(4)]
        self.buf = bytearray(1 + rb)
        st = query.Stats()  # a first pass for the scale ...
        for r in store.records(name, s0, s1):
            if r[1 + field] == r[1 + field]:
                st.add(r[0], r[1 + field], r[3])
        if st.n:
            a, b = st.lo, st.hi
        else:
            a, b = 0.0, 1.0
        if b - a < 1e-9 * max(1.0, abs(a)):
            a, b = a - 1, b + 1  # one value: a band around it
        step = _nice((b - a) / 5)
        a = math.floor(a / step + 1e-9) * step
        b = math.ceil(b / step - 1e-9) * step
        scale = (y1 - 1 - y0) / (b - a)
        # where things are: plot columns x0 .. x0 + cols - 1 (column c holds the readings
        # from s0 + c * span // cols on, store times), rows y0 .. y1 - 1 from b down to a
        self.frame = (_LEFT, y0, cols, y1, s0, s1 - s0 + 1, a, b)

        def ypix(v):
            return min(max(y0 + int((b - v) * scale + 0.5), y0), y1 - 1)  # (a reading since the first pass)

        for x in range(cols):
            top[x] = _EMPTY
        span = s1 - s0 + 1
        for r in store.records(name, s0, s1):  # ... and a second one for each column's rows
            v = r[1 + field]
            if v == v:
                x = (r[0] - s0) * cols // span
                y = ypix(v)
                if top[x] == _EMPTY:
                    top[x] = bot[x] = y
                elif y < top[x]:
                    top[x] = y
                elif y > bot[x]:
                    bot[x] = y
        self._join(max(1, 2 * st.step * cols // span + 1))
        self._sort()

        self.labels = bytearray()  # each: x (2 bytes), y, n, then n bytes of UTF-8 (glyph numbers once drawn)
        self.painted = False
        grid = bytearray()
        d = _decimals(step)
        v = a
        while st.n and v <= b + step * 1e-6:  # (no readings: no scale either)
            y = ypix(v)
            grid.append(y)
            text = ("%%.%df" % d) % v
            self._label(_LEFT - 4 - len(text) * _ADVANCE, y - 3, text)
            v += step
        self.grid = bytes(grid)
        self.ticks = array("H", self._time_ticks(s0, span, tz_s, y1 + 4, store.EPOCH))

        unit = unit or ""
        head = "%s  last %s h" % (title or name, query.num(hours))
        self._label(2, 3, head + ("  (%s)" % unit if unit else ""))
        days = hours > 24
        if st.n:
            e = store.EPOCH
            line = "min %s %s   max %s %s" % (
                _with_unit(query.num, st.lo, unit), query.when(e + st.lo_s, tz_s, days),
                _with_unit(query.num, st.hi, unit), query.when(e + st.hi_s, tz_s, days))
            mean = "   mean " + _with_unit(query.num, st.mean(), unit)
            if (len(line) + len(mean)) * _ADVANCE <= width - 4:
                line += mean
            self.marks = [(_LEFT + (s - s0) * cols // span, ypix(v)) for s, v in ((st.lo_s, st.lo), (st.hi_s, st.hi))]
        else:
            line = "no readings in this time"
            self.marks = []
        self._label(2, 13, line)
        self.deflate = deflate
        self._enc = self._rows = None
        if mine:  # its code is not in the heap beside the encoder's (channels/charts.py drops the store's)
            mimi.unload("mimi.services.history.query")

    def _join(self, gap):
        """Join each column's span of rows to the next column's with readings, when
        fewer than `gap` columns lie between: the line through their middles."""
        top, bot = self.top, self.bot
        pa = -1
        ma = 0
        for x in range(self.cols):
            if top[x] == _EMPTY:
                continue
            m = (top[x] + bot[x]) // 2
            if pa >= 0 and x - pa <= gap:
                g2 = 2 * (x - pa)
                for c in range(pa, x + 1):
                    # the line's rows at the column's edges (half columns), within pa .. x
                    p0 = max(2 * c - 1, 2 * pa) - 2 * pa
                    p1 = min(2 * c + 1, 2 * x) - 2 * pa
                    ya = ma + ((m - ma) * p0 + (x - pa)) // g2
                    yb = ma + ((m - ma) * p1 + (x - pa)) // g2
                    if ya > yb:
                        ya, yb = yb, ya
                    if top[c] == _EMPTY:
                        top[c], bot[c] = ya, yb
                    else:
                        top[c] = min(top[c], ya)
                        bot[c] = max(bot[c], yb)
            pa, ma = x, m

    def _sort(self):
        """The columns sorted by their span's top row (counting sort, placed from the
        last): those whose span starts at row y are self.order[first[y + 1]:first[y + 2]]."""
        top, first, order = self.top, self.first, self.order
        for x in range(self.cols):
            first[top[x] + 1] += 1
        for y in range(1, _EMPTY + 2):
            first[y] += first[y - 1]  # first[y + 1]: where row y's columns end
        for x in range(self.cols - 1, -1, -1):
            k = top[x] + 1
            first[k] -= 1  # ... and, once all are placed, where they start
            order[first[k]] = x
        self.active = []

    def _time_ticks(self, s0, span, tz_s, ty, e):
        """The time ticks' columns (their labels added), at most ~8, on local hours."""
        from mimi.board.clock import WEEKDAYS

        tick = _TIME_TICKS[-1]
        for t in _TIME_TICKS:
            if span // t <= 8:
                tick = t
                break
        u = ((e + s0 + tz_s) // tick + 1) * tick - tz_s  # the first, in Unix time
        xs = []
        while u - e < s0 + span:
            x = _LEFT + (u - e - s0) * self.cols // span
            lt = board.clock.localtime(tz_s, u)
            if tick >= 86400:
                text = "%s %d" % (WEEKDAYS[lt[6]][:3], lt[2])
            elif lt[3] == 0 and lt[4] == 0:
                text = WEEKDAYS[lt[6]][:3]
            else:
                text = "%02d:%02d" % (lt[3], lt[4])
            xs.append(x)
            w = len(text) * _ADVANCE
            self._label(min(x - w // 2, self.w - w), ty, text)
            u += tick
        return xs

    def _label(self, x, y, text):
        g = text.encode()
        while len(g) > 255:
            text = text[:-1]
            g = text.encode()
        x = max(0, x)
        self.labels += bytes((x & 255, x >> 8, y, len(g))) + g

    def row(self, y):
        """Row y of the PNG (services/history/rows.py, loaded with the encoder)."""
        return self._rows.row(self, y)

    def encoder(self):
        """The PNG's encoder (png.py, loaded then)."""
        if self._enc is None:
            from mimi.services.history import rows, png  # (the font with rows.py, before png.py)

            self._rows = rows
            self._enc = png.Encoder(self.w, self.h, 2, PALETTE, self.row, self.deflate)
        return self._enc

    def size(self):
        return self.encoder().size()

    def pieces(self):
        return self.encoder().pieces()

    def write(self, out):
        return self.encoder().write(out)

