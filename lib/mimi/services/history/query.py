# What the summaries and the charts share: Stats (min, max, weighted mean of records
# as they stream by), the range of the last hours, numbers and times for people.
from mimi import board
from mimi.services.history import store

NAN = store.NAN


class Stats:
    """Count, min and max (with their store times: the first time each was reached),
    and the mean weighted by the time each record stands for (a 5-minute mean counts
    5 times a 1-minute reading)."""

    def __init__(self):
        self.n = 0
        self.lo = self.hi = NAN
        self.lo_s = self.hi_s = 0
        self.w = 0
        self.sum = 0.0
        self.last = NAN
        self.last_s = 0
        self.step = 0  # the widest spacing of the records seen

    def add(self, s, v, w):
        if not self.n or v < self.lo:
            self.lo, self.lo_s = v, s
        if not self.n or v > self.hi:
            self.hi, self.hi_s = v, s
        self.n += 1
        self.w += w
        self.sum += v * w
        self.last, self.last_s = v, s
        if w > self.step:
            self.step = w

    def mean(self):
        return self.sum / self.w if self.w else NAN


def span_of(hours, now):
    """(s0, s1) store times of the last `hours` before `now` (Unix; the clock's when None)."""
    if not hours > 0:
        raise ValueError("hours must be more than 0")
    now = int(board.clock.unix() if now is None else now)
    return now - int(hours * 3600) - store.EPOCH, now - store.EPOCH


def num(v):
    """A reading as text: at most 2 decimals, no trailing zeros ("21.5", "1013.25", "40")."""
    if v != v:
        return "?"
    t = "%.2f" % v
    t = t.rstrip("0").rstrip(".") if "." in t else t
    return "0" if t == "-0" else t


def when(t, tz_s, days):
    """A time for a person: "15:10", or "Tue 15:10" when the range is over a day."""
    from mimi.board.clock import WEEKDAYS

    lt = board.clock.localtime(tz_s, t)
    hm = "%02d:%02d" % (lt[3], lt[4])
    return WEEKDAYS[lt[6]][:3] + " " + hm if days else hm


def request(text):
    """'/chart NAME [hours]' (or 'NAME [hours]') -> (name, hours) of a device with a
    history; ValueError saying what to write."""
    words = text.split()
    if words and words[0].startswith("/"):
        words = words[1:]
    names = store.names()
    have = "devices with a history: %s" % (", ".join(names) if names else "none yet (device_add ... log_min=5)")
    if not 1 <= len(words) <= 2:
        raise ValueError("Write /chart NAME [hours], e.g. /chart %s 48 (%s)" % (names[0] if names else "living_temp", have))
    hours = 24
    if len(words) == 2:
        try:
            hours = float(words[1].rstrip("h"))
        except ValueError:
            hours = 0
        if not 0 < hours <= 24 * 100:
            raise ValueError("hours: a number from 1 to 2400, not %r" % words[1][:16])
    if words[0] not in names:
        raise ValueError("No history for %r (%s)" % (words[0][:24], have))
    return words[0], hours


def units(name):
    """(unit, second unit) of device `name` from its last reading's text ("21.5 °C,
    humidity 40 %" -> "°C", "%"): the word after a number ("about 320 lx": lx)."""
    import sys

    state = sys.modules.get("mimi.devices.state")  # (not loaded: no device has read)
    last = state.last.get(name) if state else None
    out = ["", ""]
    for k, item in enumerate(last[4:].decode().split(", ")[:2] if last else ()):
        t = item.split()
        try:
            float(t[-2])
            out[k] = t[-1]
        except (IndexError, ValueError):  # no unit, or a text ("open")
            pass
    return out[0], out[1]
