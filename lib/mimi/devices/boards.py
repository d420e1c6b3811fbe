# Known boards' own parts: the `board` setting adds them as devices (not kept in the
# device file; they pass the pin policy like any other). A leaf: config's rule for
# the setting reads it too.
BOARDS = (  # (setting, board, its LED's type, its pin)
    ("devkitc1", "ESP32-S3-DevKitC-1 v1.0", "rgb_led", 48),
    ("devkitc1_v11", "ESP32-S3-DevKitC-1 v1.1", "rgb_led", 38),
    ("s3_zero", "Waveshare ESP32-S3-Zero", "rgb_led", 21),
    ("xiao_s3", "Seeed XIAO ESP32S3 (user LED, active-low)", "digital_out", 21),
    ("atoms3_lite", "M5Stack AtomS3 Lite (ESP32-S3FN8, no PSRAM)", "rgb_led", 35),
)
# Pins the policy refuses on any board (devices/pins.py NEVER) that a board's own part
# may use because the board is known not to need them for that: the AtomS3 Lite's chip
# has no PSRAM, so GPIO35, octal PSRAM's on N8R8/N16R8 modules, is its LED's.
FREED = {"atoms3_lite": (35,)}
LED = "led"


def parts(board):
    """[(name, type, params)] of a board's own parts."""
    for key, _, typ, pin in BOARDS:
        if key == board:
            if typ == "rgb_led":
                return [(LED, typ, {"pin": pin, "n": 1})]
            return [(LED, typ, {"pin": pin, "inverted": True})]
    return []


def freed(board):
    """The refused pins this board's own parts may use (FREED)."""
    return FREED.get(board, ())


def check(v):
    """The setting's rule: '' (none) or a known board's name."""
    v = str(v).strip().lower()
    if v and v not in [b[0] for b in BOARDS]:
        raise ValueError("a known board (%s), or empty for none" % ", ".join(
            "%s: %s" % b[:2] for b in BOARDS))
    return v
