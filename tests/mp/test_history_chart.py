# Charts (services/history/chart.py, png.py) under MicroPython: a week's chart in a
# small heap, the length known first, the firmware's compressor where it has one.
# tests/host/test_chart_png.py decodes the pictures with CPython.
import gc
import sys
import binascii
import struct
import support
from mimi import limits

FS_BLOCKS = 256
TIMEOUT = 120
HEAP = {"test_a_week_chart_is_drawn_in_24_kb_of_heap": "512k"}
T0 = 1767225600
WEEK = 2016
BUDGET = 24 * 1024 if sys.maxsize < 2 ** 31 else 40 * 1024  # 32-bit: issue 24's figure; 64-bit: its objects are twice as big


def week(name="temp"):
    import math
    from mimi.services.history import store

    for i in range(WEEK):
        store.add(name, 20 + 6 * math.sin(i / 40) + (i % 7) * 0.05, t=T0 + i * 300)
    store.flush()


class Check:
    """A writer that keeps nothing: counts the bytes and checks each chunk's CRC."""

    def __init__(self):
        self.n = 0
        self.tail = b""

    def write(self, b):
        self.n += len(b)
        if self.n <= 64:
            self.tail += bytes(b)


def test_a_week_chart_is_drawn_in_24_kb_of_heap():
    week()  # the store is loaded and logging, as it is when someone asks for a chart
    ballast = support.leave_free(BUDGET)  # everything else taken
    left = gc.mem_free()
    from mimi.services.history import chart  # its code loads in that room too

    c = chart.Chart("temp", 168, tz_s=3600, unit="\u00b0C", now=T0 + WEEK * 300)
    out = Check()
    assert c.write(out) == out.n == c.size() == 29132
    assert out.tail[:8] == b"\x89PNG\r\n\x1a\n" and out.tail[12:16] == b"IHDR"
    assert struct.unpack(">II", out.tail[16:24]) == (limits.CHART_W, limits.CHART_H)
    del ballast
    print("free for the chart: %d bytes" % left)


def test_the_rows_and_the_encoder_load_into_a_heap_in_pieces():
    # The chart is made (the store's two passes), then its rows and encoder are loaded
    # (rows.py, font.py, png.py) into a heap those passes left in pieces between what the
    # chart keeps: no block they need may be big. The font's table was one 793-byte block
    # (a bytes of 8 rows of 99 glyphs), found in some layouts of the 24 KB above and not in
    # others; its rows are eight bytes now.
    week()
    from mimi.services.history import chart

    c = chart.Chart("temp", 168, tz_s=3600, unit="\u00b0C", now=T0 + WEEK * 300)
    ballast = support.leave_pieces(512)  # no free block over 512 bytes
    out = Check()
    assert c.write(out) == out.n == 29132
    del ballast


def test_pieces_are_a_png_whose_length_is_known_first():
    week()
    from mimi.services.history import chart

    c = chart.Chart("temp", 24, now=T0 + WEEK * 300, width=100, height=60)
    size = c.size()
    data = bytearray()
    for piece in c.pieces():
        data += piece
    assert len(data) == size
    pos = 8
    kinds = []
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        crc = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0]
        assert crc == binascii.crc32(data[pos + 4:pos + 8 + n]), kind
        kinds.append(kind)
        pos += 12 + n
    assert kinds == [b"IHDR", b"PLTE", b"IDAT", b"IEND"]


def test_the_firmware_s_compressor_when_it_has_one():
    from mimi.services.history import chart, png

    if not png.compressor():
        support.skip("this MicroPython has no deflate compressor (MICROPY_PY_DEFLATE_COMPRESS)")
    import io
    import deflate

    week()
    rows = []
    stored = chart.Chart("temp", 168, now=T0 + WEEK * 300, deflate=False)
    for y in range(stored.h):
        rows.append(bytes(stored.row(y)))
    c = chart.Chart("temp", 168, now=T0 + WEEK * 300)
    buf = io.BytesIO()
    assert c.write(buf) == c.size() < 29132 // 2
    data = buf.getvalue()
    n = struct.unpack(">I", data[57:61])[0]
    z = deflate.DeflateIO(io.BytesIO(data[65:65 + n]), deflate.ZLIB)
    assert z.read() == b"".join(rows)


def test_what_a_chart_cannot_be_is_refused():
    from mimi.services.history import chart

    for kw, why in (({"width": 20}, "pixels"), ({"height": 300}, "pixels"), ({"height": 10}, "pixels"),
                    ({"hours": 0}, "hours"), ({"hours": -5}, "hours"), ({"field": 2}, "field")):
        e = support.raises(ValueError, chart.Chart, "temp", **kw)
        assert why in str(e), (kw, e)


def test_the_adler32_of_long_pieces():
    from mimi.services.history import png

    data = bytes(range(256)) * 40  # 10 KB of high bytes: the sums reduced in time on 32-bit
    s1, s2 = png.adler32(data)
    a, b = 1, 0
    for x in data:
        a = (a + x) % 65521
        b = (b + a) % 65521
    assert (s1, s2) == (a, b)
    assert png.adler32(data[5000:], *png.adler32(data[:5000])) == (a, b)
