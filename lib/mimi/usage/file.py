# The usage ledger's file (limits.USAGE_PATH), for usage/ledger.py (loaded for a save
# or a day's start, dropped after) and the report. JSON lines: the current hour's
# row first, then one line a day, oldest first, at most limits.USAGE_DAYS:
#   {"hour":493712,"n":[calls,input,cache_read,cache_write,output]}
#   {"day":"2026-12-03","n":[...],"m":{"anthropic/claude-sonnet-4-5":[...]}}
# "hour" is the local hour number ((unix + tz) // 3600). Saves rewrite it whole through
# fs.write_atomic (a power cut leaves the old or the new file) under fs.lock, line by
# line: nothing bigger than a day's line is ever held.
import json
from mimi import limits, fs, board

PATH = limits.USAGE_PATH
DAY = b'{"day":"'


def date(day):
    """Local day number ((unix + tz) // 86400) -> 'YYYY-MM-DD'."""
    t = board.clock.gmtime(day * 86400)
    return "%04d-%02d-%02d" % (t[0], t[1], t[2])


def _row(v):
    """A stored row if it is one (5 non-negative ints), else None."""
    if isinstance(v, list) and len(v) == 5:
        for x in v:
            if not isinstance(x, int) or x < 0:
                return None
        return v
    return None


def lines(path=PATH):
    """Each line of the file (bytes, without the newline); nothing when it is missing.
    A line longer than limits.USAGE_LINE_MAX comes in pieces that parse as nothing.
    Closed by its reader on every path (the file is open while it is read: left to the
    GC, it is closed outside fs.lock)."""
    try:
        f = open(path, "rb")
    except OSError:
        return
    with f:
        while True:
            line = f.readline(limits.USAGE_LINE_MAX)
            if not line:
                return
            yield line.rstrip(b"\n")


def parse(line):
    """A line -> ("hour", number, row) or ("day", date, row, models); None if it is not one."""
    try:
        o = json.loads(line)
        if "hour" in o and isinstance(o["hour"], int) and _row(o.get("n")):
            return "hour", o["hour"], o["n"]
        m = o.get("m") or {}
        if isinstance(o.get("day"), str) and _row(o.get("n")) and isinstance(m, dict):
            return "day", o["day"], o["n"], {k: v for k, v in m.items() if _row(v)}
    except (ValueError, TypeError, AttributeError):
        pass
    return None


def load(day, hour, hour_row, day_row, models, path=PATH):
    """Fill the rows (in place) and models with the file's counts for `day` and `hour`."""
    day = date(day)
    key = DAY + day.encode()
    with fs.lock:
        each = lines(path)
        try:
            for line in each:
                if line.startswith(b'{"hour":') or line.startswith(key):
                    p = parse(line)
                    if p and p[0] == "hour" and p[1] == hour:
                        hour_row[:] = p[2]
                    elif p and p[0] == "day" and p[1] == day:
                        day_row[:] = p[2]
                        models.update(p[3])
        finally:
            each.close()


def save(day, hour, hour_row, day_row, models, path=PATH):
    """Write the hour's row and `day`'s line, keeping the other days (the newest
    limits.USAGE_DAYS - 1 of them). -> True."""
    day = date(day)
    key = DAY + day.encode()
    with fs.lock:
        each = lines(path)
        try:
            kept = [line + b"\n" for line in each if line.startswith(DAY) and not line.startswith(key)]
        finally:
            each.close()
        del kept[:-(limits.USAGE_DAYS - 1)]
        # spelled out: MicroPython's dicts keep no key order, and lines are told by their start
        fs.write_atomic(path, ['{"hour":%d,"n":%s}\n' % (hour, json.dumps(hour_row))] + kept + [
            '{"day":"%s","n":%s,"m":%s}\n' % (day, json.dumps(day_row), json.dumps(models))])
    return True
