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
