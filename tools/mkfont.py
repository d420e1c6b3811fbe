"""Make the charts' bitmap font module from tools/font5x8.txt (CPython).

  .venv/bin/python tools/mkfont.py        # rewrites lib/mimi/services/history/font.py

tests/host/test_chart_png.py checks the module is what this makes of the text.
"""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "tools" / "font5x8.txt"
TARGET = ROOT / "lib" / "mimi" / "services" / "history" / "font.py"
W, H = 5, 8


def glyphs(text):
    """[(char, [row bits])] in the order of the file."""
    out = []
    lines = [x for x in text.splitlines() if x and not x.startswith("# ")]
    i = 0
    while i < len(lines):
        head = lines[i]
        if not (len(head) == 3 and head[0] == "[" and head[2] == "]"):
            raise ValueError("line %r: expected [c]" % head)
        rows = lines[i + 1:i + 1 + H]
        if len(rows) != H or any(len(r) != W or set(r) - {"#", "."} for r in rows):
            raise ValueError("glyph %r: expected %d rows of %d of # and ." % (head[1], H, W))
        out.append((head[1], [int(r.replace("#", "1").replace(".", "0"), 2) for r in rows]))
        i += 1 + H
    chars = [c for c, _ in out]
    if len(set(chars)) != len(chars):
        raise ValueError("a character is drawn twice")
    if "?" not in chars:
        raise ValueError("'?' (shown for characters not drawn) is missing")
    return out


def module(text):
    gl = glyphs(text)
    chars = "".join(c for c, _ in gl)
    lines = ["# The charts' bitmap font, made by tools/mkfont.py from tools/font5x8.txt (edit that).",
             "# CHARS[i] is drawn by BITS[k][i] for its rows k = 0 .. H - 1, top row first, bit 4 the",
             "# leftmost pixel. A bytes a row, not one table: on a .mpy install each is its own block",
             "# of ~100 bytes, which a heap left in pieces by the chart's passes still has room for.",
             "W = %d" % W, "H = %d" % H, "ADVANCE = %d  # pixels from one character to the next" % (W + 1),
             "CHARS = %s" % ascii(chars), "BITS = ("]
    for k in range(H):
        row = bytes(rows[k] for _, rows in gl)
        lines += ["    %r" % row[i:i + 24] for i in range(0, len(row), 24)]
        lines[-1] += ","
    lines.append(")")
    return "\n".join(lines) + "\n"


def main():
    TARGET.write_text(module(SOURCE.read_text(encoding="utf-8")))
    print("wrote", TARGET)


if __name__ == "__main__":
    main()
