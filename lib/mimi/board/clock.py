# Unix time whatever the port's epoch (2000 on the ESP32, 1970 on the host), and
# local time from a fixed UTC offset ("+08:00").
import time

EPOCH_2000 = 946684800  # 2000-01-01 in Unix time
VALID_AFTER = 1704067200  # 2024-01-01: anything earlier means the clock was never set
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def parse_tz(text):
    """'+08:00', '-05:30', 'UTC', '' -> offset in seconds. ValueError when malformed."""
    s = str(text).strip().upper()
    if s in ("", "Z", "UTC", "GMT"):
        return 0
    if s.startswith("UTC") or s.startswith("GMT"):
        s = s[3:]
    if not s or s[0] not in "+-":
        raise ValueError("tz must look like +08:00 or -05:30")
    sign = -1 if s[0] == "-" else 1
    body = s[1:]
    if ":" in body:
        hh, _, mm = body.partition(":")
    elif len(body) == 4:
        hh, mm = body[:2], body[2:]
    else:
        hh, mm = body, "0"
    if not (hh.isdigit() and mm.isdigit()) or len(hh) > 2 or len(mm) > 2:
        raise ValueError("tz must look like +08:00 or -05:30")
    h, m = int(hh), int(mm)
    if h > 14 or m > 59 or h * 60 + m > 14 * 60:
        raise ValueError("tz must be between -14:00 and +14:00")
    return sign * (h * 3600 + m * 60)


def format_tz(offset_s):
    sign = "-" if offset_s < 0 else "+"
    a = abs(offset_s)
    return "%s%02d:%02d" % (sign, a // 3600, (a % 3600) // 60)


class Clock:
    """Wall clock in Unix seconds. `tmod` is the time module (injectable in tests)."""

    def __init__(self, tmod=time):
        self._t = tmod
        self.epoch_offset = EPOCH_2000 if tmod.gmtime(0)[0] == 2000 else 0
        self.skew = 0  # host: lets tests and the simulator move time

    def unix(self):
        return int(self._t.time()) + self.epoch_offset + self.skew

    def valid(self):
        return self.unix() >= VALID_AFTER

    def gmtime(self, unix=None):
        if unix is None:
            unix = self.unix()
        return self._t.gmtime(int(unix) - self.epoch_offset)

    def localtime(self, tz_s=0, unix=None):
        """(year, month, mday, hour, minute, second, weekday 0=Mon, yearday)."""
        if unix is None:
            unix = self.unix()
        return self.gmtime(int(unix) + tz_s)

    def local_date(self, tz_s=0, unix=None):
        t = self.localtime(tz_s, unix)
        return "%04d-%02d-%02d" % (t[0], t[1], t[2])

    def local_str(self, tz_s=0, unix=None):
        t = self.localtime(tz_s, unix)
        return "%04d-%02d-%02d %02d:%02d:%02d UTC%s (%s)" % (
            t[0], t[1], t[2], t[3], t[4], t[5], format_tz(tz_s), WEEKDAYS[t[6]])
