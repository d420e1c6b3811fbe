"""The history charts drawn by the firmware (lib/mimi/services/history/chart.py), read
by a real decoder: tests/mp/chartpng.py stores known readings and draws them under
MicroPython (64-bit, and 32-bit when present); here CPython parses each PNG (chunk
order and CRCs, IHDR, palette), inflates it with zlib (which checks the Adler-32),
checks every row's filter byte and the size, and finds the curve where the readings
say it is: a pixel of the curve's colour at each reading's column and row, none where
there were no readings, none outside the plot. The compressed path runs with a stand-in
compressor everywhere, and with MicroPython's own on an interpreter built with
MICROPY_PY_DEFLATE_COMPRESS named by MP_DEFLATE (the unix ports and the ESP32 builds of
v1.28 have none)."""
import json
import math
import os
import struct
import subprocess
import sys
import zlib

import pytest

from conftest import MP_DIR, ROOT, compiled_lib, interpreters

sys.path.insert(0, str(ROOT / "tools"))
import mkfont  # noqa: E402

T0 = 1767225600  # 2026-01-01 00:00 UTC
LINE, INK, GRID, BG = 3, 2, 1, 0


def wave(n, phase=0.0):
    return [round(20 + 6 * math.sin((i + phase) / 23) + (i % 5) * 0.1, 2) for i in range(n)]


def cases():
    day = wave(288)
    gap = [None if 100 <= i < 172 else v for i, v in enumerate(day)]  # 6 hours without readings
    week = wave(2016, 7)
    return [
        {"case": "day", "name": "living_temp", "start": T0, "step": 300, "values": gap,
         "second": [40 + i % 20 for i in range(288)], "now": T0 + 288 * 300, "hours": 24,
         "tz": 8 * 3600, "unit": "\u00b0C"},
        {"case": "humidity", "name": "living_temp", "start": T0, "step": 300, "values": [],
         "now": T0 + 288 * 300, "hours": 24, "field": 1, "unit": "%"},
        {"case": "week", "name": "week", "start": T0, "step": 300, "values": week,
         "now": T0 + 2016 * 300, "hours": 168, "unit": "\u00b0C"},
        {"case": "fake", "name": "week", "start": 0, "step": 300, "values": [],
         "now": T0 + 2016 * 300, "hours": 168, "unit": "\u00b0C", "deflate": "fake"},
        {"case": "firmware", "name": "week", "start": 0, "step": 300, "values": [],
         "now": T0 + 2016 * 300, "hours": 168, "unit": "\u00b0C", "deflate": "firmware"},
        {"case": "odd", "name": "flat", "start": T0, "step": 600, "values": [12.5] * 30,
         "now": T0 + 30 * 600, "hours": 5, "width": 301, "height": 121, "unit": "lx"},
        {"case": "empty", "name": "nothing", "start": T0, "step": 300, "values": [],
         "now": T0 + 86400, "hours": 24},
    ]


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def parse(data):
    """-> (width, height, palette, rows of pixel indexes): every check of the format."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, []
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        (crc,) = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        assert crc == zlib.crc32(kind + body), kind
        chunks.append((kind, body))
        pos += 12 + n
    assert pos == len(data)
    kinds = [k for k, _ in chunks]
    assert kinds[0] == b"IHDR" and kinds[1] == b"PLTE" and kinds[-1] == b"IEND" and chunks[-1][1] == b""
    assert set(kinds[2:-1]) == {b"IDAT"}
    w, h, depth, ctype, comp, filt, inter = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (depth, ctype, comp, filt, inter) == (2, 3, 0, 0, 0)
    pal = chunks[1][1]
    assert len(pal) % 3 == 0 and len(pal) // 3 <= 4
    raw = zlib.decompress(b"".join(b for k, b in chunks if k == b"IDAT"))  # checks the Adler-32
    stride = 1 + (w * 2 + 7) // 8
    assert len(raw) == h * stride
    rows = []
    for y in range(h):
        line = raw[y * stride:(y + 1) * stride]
        assert line[0] == 0, "row %d: filter %d" % (y, line[0])
        rows.append([(line[1 + x // 4] >> (6 - 2 * (x % 4))) & 3 for x in range(w)])
    return w, h, [tuple(pal[i:i + 3]) for i in range(0, len(pal), 3)], rows


def runs():
    out = dict(interpreters())
    if os.environ.get("MP_DEFLATE"):
        out["deflate"] = os.environ["MP_DEFLATE"]
    return out


@pytest.fixture(scope="module", params=list(runs()), ids=lambda t: t or "mp64")
def drawn(request, tmp_path_factory):
    mp = runs()[request.param]
    tmp = tmp_path_factory.mktemp("charts")
    cs = cases()
    (tmp / "args.json").write_text(json.dumps({"lib": compiled_lib(), "tmp": str(tmp), "cases": cs}))
    r = subprocess.run([mp, "-X", "heapsize=4m", str(MP_DIR / "chartpng.py"), str(tmp / "args.json")],
                       capture_output=True, text=True, timeout=120, cwd=str(tmp))
    assert r.returncode == 0, r.stdout + r.stderr
    info = {}
    for line in r.stdout.splitlines():
        if line.startswith("CHART "):
            d = json.loads(line[6:])
            info[d["case"]] = d
    return tmp, {c["case"]: c for c in cs}, info


def image(drawn, case):
    tmp, cs, info = drawn
    d = info[case]
    if "skipped" in d:
        pytest.skip(d["skipped"])
    data = (tmp / (case + ".png")).read_bytes()
    assert len(data) == d["size"] == d["written"]  # the length given before the first byte
    return cs[case], d, parse(data)


def expected(c, d, values):
    """(x, y) of each reading inside the chart's range, as its frame says."""
    x0, y0, cols, y1, s0, span, a, b = d["frame"]
    scale = (y1 - 1 - y0) / (b - a)
    out = []
    for i, v in enumerate(values):
        if v is None:
            continue
        s = c["start"] + i * c["step"] - d["epoch"]
        if s0 <= s < s0 + span:
            out.append((x0 + (s - s0) * cols // span, y0 + int((b - f32(v)) * scale + 0.5)))
    return out


def on_marks(d, x, y):
    return any(abs(x - mx) <= 3 and abs(y - my) <= 3 and (abs(x - mx) == 3 or abs(y - my) == 3)
               for mx, my in d["marks"])


def check_curve(c, d, img, values):
    w, h, pal, rows = img
    assert (w, h) == (c.get("width", 480), c.get("height", 240))
    assert pal == [tuple(p) for p in d["palette"]]
    x0, y0, cols, y1 = d["frame"][:4]
    points = expected(c, d, values)
    assert points
    for x, y in points:
        if not on_marks(d, x, y):
            assert rows[y][x] == LINE, (x, y, rows[y][x])
    line = [(x, y) for y in range(h) for x in range(w) if rows[y][x] == LINE]
    assert all(x0 <= x < x0 + cols and y0 <= y < y1 for x, y in line)
    ys = [y for _, y in points]
    assert min(y for _, y in line) >= min(ys) - 1 and max(y for _, y in line) <= max(ys) + 1
    assert any(INK in rows[y] for y in range(0, y0 - 4))  # the title and the min/max line
    return line, points


def test_a_day_with_a_gap_is_drawn_where_the_readings_are(drawn):
    c, d, img = image(drawn, "day")
    line, points = check_curve(c, d, img, c["values"])
    x0, _, cols, _, s0, span = d["frame"][:6]
    gap = (c["start"] + 100 * 300 - d["epoch"], c["start"] + 171 * 300 - d["epoch"])
    hole = [x for x in range(x0, x0 + cols)
            if gap[0] + 600 < s0 + (x - x0) * span // cols and s0 + (x - x0 + 1) * span // cols < gap[1] - 600]
    assert len(hole) > 80 and not [p for p in line if p[0] in hole]
    assert len(d["marks"]) == 2  # min and max


def test_the_second_value_has_its_own_chart(drawn):
    c, d, img = image(drawn, "humidity")
    day = next(x for x in cases() if x["case"] == "day")
    hum = [None if v is None else s for v, s in zip(day["values"], day["second"])]
    check_curve(c, d, img, hum)
    a, b = d["frame"][6:]
    assert a <= 40 and b >= 59


def test_a_week_of_2016_readings(drawn):
    c, d, img = image(drawn, "week")
    line, points = check_curve(c, d, img, c["values"])
    assert len(points) == 2016
    assert len({x for x, _ in line}) == d["frame"][2]  # every column has the curve


def test_the_compressed_path_counts_then_sends_the_same_image(drawn):
    _, _, week = image(drawn, "week")
    c, d, img = image(drawn, "fake")
    assert img == week
    c, d, img = image(drawn, "firmware")  # only where the firmware has a compressor
    assert img == week and d["size"] < 29132 // 2


def test_odd_sizes_and_a_flat_line(drawn):
    c, d, img = image(drawn, "odd")
    check_curve(c, d, img, c["values"])
    a, b = d["frame"][6:]
    assert a < 12.5 < b


def test_no_readings_is_still_a_chart(drawn):
    c, d, img = image(drawn, "empty")
    w, h, pal, rows = img
    assert not any(LINE in r for r in rows) and d["marks"] == []
    assert any(INK in rows[y] for y in range(0, 24))


def test_the_font_module_is_made_from_its_source():
    text = (ROOT / "tools" / "font5x8.txt").read_text(encoding="utf-8")
    assert (ROOT / "lib" / "mimi" / "services" / "history" / "font.py").read_text() == mkfont.module(text)
    chars = "".join(ch for ch, _ in mkfont.glyphs(text))
    for needed in "0123456789abcdefghijklmnopqrstuvwxyz_ABCDEFGHIJKLMNOPQRSTUVWXYZ.,:-+%/()\u00b0":
        assert needed in chars, needed
