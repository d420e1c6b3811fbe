# Known boards' own parts: the `board` setting adds them as devices (not kept in the
# device file; they pass the pin policy like any other). A leaf: config's rule for
# the setting reads it too.
BOARDS = (  # (setting, board, its LED's type, its pin)
    ("devkitc1", "ESP32-S3-DevKitC-1 v1.0", "rgb_led", 48),
    ("devkitc1_v11", "ESP32-S3-DevKitC-1 v1.1", "rgb_led", 38),
    ("s3_zero", "Waveshare ESP32-S3-Zero", "rgb_led", 21),
    ("xiao_s3", "Seeed XIAO ESP32S3 (user LED, active-low)", "digital_out", 21),
)
LED = "led"


def parts(board):
    """[(name, type, params)] of a board's own parts."""
    for key, _, typ, pin in BOARDS:
        if key == board:
            if typ == "rgb_led":
                return [(LED, typ, {"pin": pin, "n": 1})]
            return [(LED, typ, {"pin": pin, "inverted": True})]
    return []


def check(v):
    """The setting's rule: '' (none) or a known board's name."""
    v = str(v).strip().lower()
    if v and v not in [b[0] for b in BOARDS]:
        raise ValueError("a known board (%s), or empty for none" % ", ".join(
            "%s: %s" % b[:2] for b in BOARDS))
    return v
