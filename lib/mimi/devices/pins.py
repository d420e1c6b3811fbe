# Which ESP32-S3 pins the GPIO tools may touch. The `gpio_allow` setting picks pins
# from the usable ones; the pins in NEVER are refused whatever the setting says,
# because driving them can stop the board from booting, kill the console or crash
# the firmware (flash/PSRAM). The same rules apply on the host simulator.
# A leaf module (no imports): config validates the setting with normalize().

# GPIOs that exist on the ESP32-S3 (22-25 do not).
EXISTING = tuple(range(0, 22)) + tuple(range(26, 49))

NEVER = {
    0: "strapping pin (boot mode / BOOT button)",
    3: "strapping pin (JTAG signal source)",
    45: "strapping pin (flash voltage VDD_SPI)",
    46: "strapping pin (boot mode, ROM log)",
    19: "reserved for the USB Serial/JTAG (USB D-)",
    20: "reserved for the USB Serial/JTAG (USB D+)",
    43: "UART0 TX, the serial console",
    44: "UART0 RX, the serial console",
}
for _p in range(26, 33):
    NEVER[_p] = "SPI flash bus"
for _p in range(33, 38):
    NEVER[_p] = "octal PSRAM bus (N16R8/N8R8 modules)"

# Free on every S3 module: 1, 2, 4-18 (ADC/touch capable), 21, 38-42 (JTAG pads,
# free while the USB Serial/JTAG is used), 47, 48 (RGB LED on some DevKitC-1 boards).
DEFAULT = "1,2,4-18,21,38-42,47,48"


def parse(text):
    """'1,2,4-18' -> sorted tuple of pins. ValueError (clear message) for a bad list,
    a pin the S3 lacks, or a pin that is never allowed."""
    if isinstance(text, (list, tuple)):
        items = [str(x) for x in text]
    else:
        items = str(text).replace(" ", "").split(",")
    pins = set()
    for item in items:
        if not item:
            continue
        lo, sep, hi = item.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError("pins are numbers or ranges like 4-18, comma-separated (got %r)" % item[:40])
        lo = int(lo)
        hi = int(hi) if sep else lo
        if hi < lo or hi - lo > 48:
            raise ValueError("bad pin range %r" % item[:40])
        for p in range(lo, hi + 1):
            if p not in EXISTING:
                raise ValueError("GPIO%d does not exist on the ESP32-S3" % p)
            if p in NEVER:
                raise ValueError("GPIO%d is never allowed: %s" % (p, NEVER[p]))
            pins.add(p)
    return tuple(sorted(pins))


def normalize(text):
    """Validator for the setting: the canonical comma list ('' = no pin allowed)."""
    return ",".join(str(p) for p in parse(text))

