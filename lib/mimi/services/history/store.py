# The sensor history store: each device's readings on flash under /history/ (outside
# /spiffs: the system's own space), bounded per device, written in batches.
#
# On the flash. One folder, limits.HISTORY_DIR, with each device's segment files:
#   /history/<device>.<tier><start>  tier "l" (long) or "s" (short); start: 8 hex
#                                     digits, the store time of the file's first record
# A segment is at most one flash block (4 KB): an 8-byte header
#   b"MH", version 1 (u8), values per record n (u8, 1 or 2), step_s (u16), 0 (u16)
# and then fixed-size records, little-endian, times never decreasing:
#   time: u32 seconds since 2020-01-01 UTC (EPOCH; a small int on a 32-bit board
#         until 2054, where a Unix time is a long int to allocate), then
#   n float32 values: the device's primary reading and, for a two-value device, its
#         second (humidity beside temperature; NaN when that reading had none).
# 8-byte records (511 a segment) or 12-byte ones (340). step_s is the spacing the
# records stand for: a record's weight in a mean.
#
# Tiers. Every device has a long tier, one record per max(log_min, 5) minutes:
# readings that come more often are averaged per 5-minute slot (time and values). Its
# HISTORY_SEGMENTS segments keep 7 full ones, so >= 8.2 days at 5 minutes (11.8 days
# with one value; 99 days at log_min 60). A device read more often than every 5
# minutes also has a short tier with every reading (HISTORY_FINE_SEGMENTS: >= 22 h at
# 1 minute); a query takes the short tier where it has readings, the long one
# around it. A tier that starts a segment beyond its count removes its oldest: a
# device takes at most 13 blocks (52 KB), all devices HISTORY_CAP (a new segment
# beyond that removes the device's own oldest first).
#
# Writes. Readings wait in RAM (each tier's records in a bytearray) and are written
# HISTORY_BATCH at a time, or at the first reading after the oldest waiting one is
# HISTORY_FLUSH_S old (an hour: 12 readings at 5 minutes), or by flush(): LittleFS
# copies a file's last block at each append, so fewer, bigger appends spare the flash. An append to a segment is one LittleFS change
# (after a power cut the file is its old or its new content); a new segment is written
# whole (fs.append: temp file + rename), then the oldest beyond the count removed. A
# power cut loses at most the readings still in RAM. A segment whose header, size or
# times are wrong is moved aside to /history/<device>.bad (the last one kept) with a
# log line, and the rest is read and written on. Readers take a chunk of one file
# at a time (the file opened for it), never a lock across a yield.
import math
import os
import struct
import _thread
from micropython import const
from mimi import board, fs, limits, log
from mimi.board.clock import VALID_AFTER

EPOCH = const(1577836800)  # 2020-01-01 UTC in Unix time: store times count from here
HEAD = const(8)
LONG = "l"
SHORT = "s"
NAN = float("nan")
_MAGIC = b"MH"
_VERSION = const(1)
_SMALLEST = -(1 << 30)  # store-time bounds of an open range (small ints on 32-bit)
_LARGEST = (1 << 30) - 1

_lock = _thread.allocate_lock()  # the loop adds, the agent thread (a tool) reads
_devs = None  # {device name: _Dev}, from the folder's listing at first use
_files = 0  # segment files on the flash, all devices


def _fmt(nv):
    return "<If" if nv == 1 else "<Iff"


def _rec(nv):
    return 4 + 4 * nv


def capacity(nv):
    """Records a segment of `nv` values holds (it stays within one flash block)."""
    return (limits.BLOCK_SIZE - HEAD) // _rec(nv)


def path(name, tier, start):
    return "%s/%s.%s%08x" % (limits.HISTORY_DIR, name, tier, start)


def _header(head):
    """-> (values per record, step_s); ValueError when `head` is not a segment's."""
    if len(head) < HEAD or head[:2] != _MAGIC or head[2] != _VERSION or head[3] not in (1, 2):
        raise ValueError("not a history segment")
    return head[3], head[4] | head[5] << 8


def _finite(v):
    try:
        return math.isfinite(v)
    except (TypeError, OverflowError):  # not a number, or an int too big for a float
        return False


class _Series:
    """One tier of one device: its segments on the flash, its records still in RAM."""

    def __init__(self, name, tier, most):
        self.name = name
        self.tier = tier
        self.most = most  # segments kept
        self.starts = []  # store times of its segments' first records, oldest first
        self.size = -1  # bytes of the newest segment; -1: not checked since boot
        self.nv = 0  # the newest segment's values per record and step
        self.step = 0
        self.buf = bytearray()  # waiting records, each of bnv values, standing for bstep
        self.bnv = 0
        self.bstep = 0
        self.first = 0  # store time of the oldest waiting record
        self.last = None  # store time of the newest record kept or waiting
        self.told = False  # a dropped reading was logged

    def check(self):
        """Look at the newest segment (header, size, last record) once, before it is
        appended to or read up to a size: a bad one goes aside, the one before is next."""
        self.size = 0
        while self.starts:
            p = path(self.name, self.tier, self.starts[-1])
            try:
                with fs.lock, open(p, "rb") as f:
                    nv, step = _header(f.read(HEAD))
                    n = f.seek(0, 2)
                    rec = _rec(nv)
                    if n < HEAD + rec or (n - HEAD) % rec or n > limits.BLOCK_SIZE:
                        raise ValueError("%d bytes" % n)
                    f.seek(n - rec)
                    last = struct.unpack("<I", f.read(4))[0]
                    if last < self.starts[-1] - 1 or last > _now() + 86400:
                        raise ValueError("its last time is wrong")
            except (OSError, ValueError) as e:
                _aside(self, self.starts[-1], e)
                continue
            self.size, self.nv, self.step = n, nv, step
            if self.last is None or self.last < last:
                self.last = last
            return

    def put(self, s, v, v2, nv, step):
        """Queue a record (store time s); -> None, or why it was not kept or written."""
        if self.size < 0:
            self.check()
        if self.last is not None and s < self.last:
            if self.last - s > limits.HISTORY_BACK_S:
                if not self.told:
                    self.told = True
                    log.warning("history", "%s: a reading %d s older than the last kept one was "
                                "dropped (the clock went back)", self.name, self.last - s)
                return "older than the last reading kept"
            s = self.last
        why = None
        if self.buf and (nv != self.bnv or step != self.bstep):
            why = self.flush()
            self.buf[:] = b""  # what the flash refused of the old kind cannot wait with the new
        if not self.buf:
            self.bnv, self.bstep, self.first = nv, step, s
        self.buf += struct.pack(_fmt(nv), s, v, v2) if nv == 2 else struct.pack(_fmt(nv), s, v)
        self.last = s
        if len(self.buf) >= limits.HISTORY_BATCH * _rec(nv) or s - self.first >= limits.HISTORY_FLUSH_S:
            why = self.flush()
        return why

    def flush(self):
        """Write the waiting records; -> None, or why not (they wait, the newest
        HISTORY_PENDING_MAX of them)."""
        buf = self.buf
        if not buf:
            return None
        if self.size < 0:  # (a reader moved the newest aside)
            self.check()
        rec = _rec(self.bnv)
        done = 0
        try:
            while done < len(buf):
                room = 0
                if self.starts and self.nv == self.bnv and self.step == self.bstep:
                    room = (limits.BLOCK_SIZE - self.size) // rec * rec
                if room > 0:
                    part = buf[done:done + room]
                    fs.append(path(self.name, self.tier, self.starts[-1]), [part])
                    self.size += len(part)
                else:
                    part = buf[done:done + capacity(self.bnv) * rec]
                    self._segment(part)
                done += len(part)
        except OSError as e:
            buf[:done] = b""
            extra = len(buf) // rec - limits.HISTORY_PENDING_MAX
            if extra > 0:
                buf[:extra * rec] = b""
            if len(buf) == 0:
                return fs.why(e)
            self.first = struct.unpack_from("<I", buf, 0)[0]
            return fs.why(e)
        buf[:] = b""
        return None

    def _segment(self, part):
        """A new segment holding `part`, then the oldest beyond the count removed."""
        global _files
        start = struct.unpack_from("<I", part, 0)[0]
        if self.starts and start <= self.starts[-1]:
            start = self.starts[-1] + 1  # (a reading kept at the last one's time): names stay unique
        if _files >= limits.HISTORY_CAP // limits.BLOCK_SIZE and self.starts:
            log.warning("history", "%s: history is at its cap (%d KB): its oldest readings go",
                        self.name, limits.HISTORY_CAP // 1024)
            self.drop_oldest()
        head = struct.pack("<2sBBHH", _MAGIC, _VERSION, self.bnv, self.bstep, 0)
        fs.append(path(self.name, self.tier, start), [head, part])
        self.starts.append(start)
        _files += 1
        self.size, self.nv, self.step = HEAD + len(part), self.bnv, self.bstep
        while len(self.starts) > self.most:
            self.drop_oldest()

    def drop_oldest(self):
        global _files
        if fs.remove(path(self.name, self.tier, self.starts.pop(0))):
            _files -= 1

    def view(self):
        """What a reader needs, taken at once: (starts, newest size, waiting records,
        their values per record, their step)."""
        if self.size < 0:
            self.check()
        return self.starts[:], self.size, bytes(self.buf), self.bnv, self.bstep


class _Dev:
    def __init__(self, name):
        self.long = _Series(name, LONG, limits.HISTORY_SEGMENTS)
        self.short = _Series(name, SHORT, limits.HISTORY_FINE_SEGMENTS)
        self.n = 0  # readings summed for the long tier's current 5-minute slot
        self.slot = 0
        self.off = 0  # their times' sum, from the slot's start
        self.v = 0.0
        self.v2 = 0.0
        self.nv = 1

    def fold(self):
        """The slot's mean into the long tier (a device read more often than every 5 min)."""
        if not self.n:
            return None
        n, self.n = self.n, 0
        return self.long.put(self.slot * limits.HISTORY_STEP_S + self.off // n, self.v / n,
                             self.v2 / n, self.nv, limits.HISTORY_STEP_S)


def _aside(series, start, why):
    """A bad segment of `series` goes to /history/<device>.bad (replacing an older one)."""
    global _files
    if start in series.starts:
        series.starts.remove(start)
        _files -= 1
        if series.size >= 0:
            series.size = -1  # the newest may have gone: looked at again before use
    p = path(series.name, series.tier, start)
    bad = "%s/%s.bad" % (limits.HISTORY_DIR, series.name)
    try:
        fs.rename(p, bad)
    except OSError:
        return  # gone already (removed as the oldest meanwhile)
    log.warning("history", "%s is damaged (%s): moved aside to %s", p, why, bad)


def _devices():
    global _devs, _files
    if _devs is None:
        devs = {}
        n = 0
        with fs.lock:
            try:
                found = os.ilistdir(limits.HISTORY_DIR)
            except OSError:
                found = ()
            for e in found:
                name, _, rest = e[0].partition(".")
                if len(rest) != 9 or rest[0] not in (LONG, SHORT):
                    continue  # a .bad copy, an unfinished write's .tmp
                try:
                    start = int(rest[1:], 16)
                except ValueError:
                    continue
                d = devs.get(name) or devs.setdefault(name, _Dev(name))
                (d.long if rest[0] == LONG else d.short).starts.append(start)
                n += 1
        for d in devs.values():
            d.long.starts.sort()
            d.short.starts.sort()
        _devs, _files = devs, n
    return _devs


def _now():
    """Now in store time; far ahead when the clock is not set (nothing is judged by it)."""
    t = board.clock.unix()
    return t - EPOCH if t >= VALID_AFTER else _LARGEST


def _check_name(name):
    if not name or len(name) > 32 or "." in name or "/" in name:
        raise ValueError("bad device name for the history: %r" % (name,))


def add(name, value, value2=None, every_s=limits.HISTORY_STEP_S, t=None):
    """Keep a reading of device `name` (its value, and its second one for a two-value
    device), taken at Unix time `t` (now when None) by a device read every `every_s`
    seconds (its log_min * 60). -> None when kept (written, or waiting in RAM), else
    why not: the clock is not set, the value is not a number, or the flash refused the
    batch (the readings wait and are tried again at the next one)."""
    _check_name(name)
    if t is None:
        t = board.clock.unix()
    if t < VALID_AFTER:
        return "the clock is not set"
    if not _finite(value):
        return "not a number: %r" % (value,)
    s = int(t) - EPOCH
    if s > 0xFFFF0000:
        return "the clock is wrong (after 2156)"
    every_s = min(max(1, int(every_s)), 0xFFFF)  # (a header's u16)
    nv = 1 if value2 is None else 2
    v2 = value2 if nv == 2 and _finite(value2) else NAN
    value = float(value)
    with _lock:
        d = _devices().get(name) or _devs.setdefault(name, _Dev(name))
        if every_s >= limits.HISTORY_STEP_S:
            why = d.fold()  # (it was read more often before)
            return d.long.put(s, value, v2, nv, every_s) or why
        why = d.short.put(s, value, v2, nv, every_s)
        slot = s // limits.HISTORY_STEP_S
        if d.n and (slot != d.slot or nv != d.nv):
            why = d.fold() or why
        if not d.n:
            d.slot, d.off, d.v, d.v2, d.nv = slot, 0, 0.0, 0.0, nv
        d.n += 1
        d.off += s - slot * limits.HISTORY_STEP_S
        d.v += value
        d.v2 += v2 if nv == 2 else 0.0
        return why


def flush(name=None):
    """Write what waits in RAM (the slot being averaged too) for `name`, or for every
    device: at shutdown and before a reset. -> None, or why not."""
    why = None
    with _lock:
        for n, d in _devices().items():
            if name is None or n == name:
                why = d.fold() or why
                why = d.short.flush() or why
                why = d.long.flush() or why
    return why


def take(name, buf, n, every_s):
    """The device logger's batch (services/rules/__init__.py): the first n readings of buf
    after its 8-byte head, each "<Iff" (Unix time, value, second value or NaN for none),
    kept and written. -> None, or why not (the first reason)."""
    why = None
    for j in range(8, 8 + n * 12, 12):
        t, v, v2 = struct.unpack_from("<Iff", buf, j)
        w = add(name, v, None if v2 != v2 else v2, every_s, t)
        why = why or w
    return flush(name) or why


def remove(name):
    """Forget device `name`'s history, on the flash and in RAM. -> files removed."""
    global _files
    n = 0
    with _lock:
        d = _devices().pop(name, None)
        if d is None:
            return 0
        for s in (d.long, d.short):
            for start in s.starts:
                n += fs.remove(path(name, s.tier, start))
        _files -= n
        fs.remove("%s/%s.bad" % (limits.HISTORY_DIR, name))
    return n


def names():
    """Devices with readings: on the flash, or waiting in the device logger."""
    with _lock:
        return sorted(set(_devices()) | set(_logger()))


def stats():
    """{"devices", "files", "bytes" (flash taken: a block a file), "waiting" (readings
    in RAM)}."""
    with _lock:
        devs = _devices()
        waiting = 0
        for d in devs.values():
            for s in (d.long, d.short):
                waiting += len(s.buf) // _rec(s.bnv) if s.buf else 0
        return {"devices": len(devs), "files": _files, "bytes": _files * limits.BLOCK_SIZE,
                "waiting": waiting}


# --- reading ------------------------------------------------------------------------

def _logger(name=None):
    """The readings the device logger (services/rules/__init__.py) keeps for device
    `name`'s next batch: (bytes, their every_s) or None; no name: the devices with some."""
    import sys

    eng = sys.modules.get("mimi.services.rules")
    out = []
    for k, lg in eng.logs.items() if eng else ():
        if len(lg) > 8:
            if k == name:  # (bytes the loop replaces whole: no lock)
                return lg[8:], struct.unpack_from("<I", lg)[0] // 1000
            out.append(k)
    return None if name else out


def records(name, s0=_SMALLEST, s1=_LARGEST):
    """(store time, value, value2, step_s) of device `name`'s records with s0 <= time
    <= s1 (store times: seconds since EPOCH), oldest first: value2 is NaN when there is
    none; step_s the spacing the record stands for. Streamed from the flash a chunk at
    a time, then the records still in RAM, then the readings the device logger
    (services/rules/__init__.py) keeps for its next batch."""
    wait = _logger(name)
    with _lock:
        d = _devices().get(name)
        if d is None:
            lv = sv = span = None
        else:
            lv = d.long.view()
            sv = d.short.view() if d.short.starts or d.short.buf else None
            if sv:  # the short tier's span: the long one is read around it
                first = sv[0][0] if sv[0] else struct.unpack_from("<I", sv[2], 0)[0]
                span = (first, d.short.last)
            else:
                span = None
    return _walk(name, lv, sv, span, s0, s1, wait)


def _walk(name, lv, sv, span, s0, s1, wait):
    last = -1
    if lv is None:
        pass
    elif span is None:
        for r in _tier(name, LONG, lv, s0, s1):
            last = r[0]
            yield r
    else:
        for r in _tier(name, LONG, lv, s0, min(s1, span[0] - 1)):
            yield r
        for r in _tier(name, SHORT, sv, max(s0, span[0]), min(s1, span[1])):
            last = r[0]
            yield r
        for r in _tier(name, LONG, lv, max(s0, span[1] + 1), s1):
            last = r[0]
            yield r
    if wait:
        buf, step = wait
        for j in range(0, len(buf), 12):
            t, v, v2 = struct.unpack_from("<Iff", buf, j)
            s = t - EPOCH
            if s > last and s0 <= s <= s1:  # (a batch written meanwhile is not read twice)
                yield s, v, v2, step


def _tier(name, tier, view, lo, hi):
    if lo > hi:
        return
    starts, size, buf, nv, step = view
    n = len(starts)
    for i in range(n):
        if i + 1 < n and starts[i + 1] < lo:
            continue  # all of it is older than lo
        if starts[i] > hi:
            return
        yield from _file(name, tier, starts[i], size if i == n - 1 else limits.BLOCK_SIZE, lo, hi)
    rec = _rec(nv)
    for j in range(0, len(buf), rec):
        r = struct.unpack_from(_fmt(nv), buf, j)
        if r[0] > hi:
            return
        if r[0] >= lo:
            yield r[0], r[1], r[2] if nv == 2 else NAN, step


def _file(name, tier, start, limit, lo, hi):
    p = path(name, tier, start)
    try:
        with fs.lock, open(p, "rb") as f:
            head = f.read(HEAD)
            end = min(f.seek(0, 2), limit)
    except OSError:
        return  # removed meanwhile (the oldest, trimmed)
    why = None
    try:
        nv, step = _header(head)
        rec = _rec(nv)
        if (end - HEAD) % rec or end < HEAD + rec:
            why = "%d bytes" % end
    except ValueError as e:
        why = e
    if why is None:
        fmt = _fmt(nv)
        buf = bytearray(max(1, limits.HISTORY_READ_CHUNK // rec) * rec)
        pos = HEAD
        prev = 0
        while pos < end and why is None:
            try:
                with fs.lock, open(p, "rb") as f:
                    f.seek(pos)
                    got = f.readinto(buf)
            except OSError:
                return
            got = min(got, end - pos)
            if got <= 0:
                why = "cut short"
                break
            pos += got
            for j in range(0, got, rec):
                r = struct.unpack_from(fmt, buf, j)
                if r[0] < prev:
                    why = "times out of order"
                    break
                prev = r[0]
                if r[0] > hi:
                    return
                if r[0] >= lo:
                    yield r[0], r[1], r[2] if nv == 2 else NAN, step
    if why is not None:
        with _lock:
            d = _devices().get(name)
            if d is not None:
                _aside(d.long if tier == LONG else d.short, start, why)


def read(name, t0=None, t1=None, field=0):
    """(Unix time, value) of device `name`'s readings with t0 <= time <= t1 (Unix
    times; None: from the first, to the last), oldest first; field 0 is the primary
    value, 1 the second (readings without one are left out). Streamed."""
    if field not in (0, 1):
        raise ValueError("field is 0 (the value) or 1 (the second value)")
    s0 = _SMALLEST if t0 is None else int(t0) - EPOCH
    s1 = _LARGEST if t1 is None else int(t1) - EPOCH
    return _values(records(name, s0, s1), 1 + field)


def _values(recs, k):
    for r in recs:
        if r[k] == r[k]:
            yield EPOCH + r[0], r[k]


def span(name):
    """(first, last) Unix times of device `name`'s readings, or None: from the file
    names and what the store knows, without reading the files."""
    wait = _logger(name)
    with _lock:
        d = _devices().get(name)
        firsts = []
        lasts = []
        if wait:
            firsts.append(struct.unpack_from("<I", wait[0], 0)[0] - EPOCH)
            lasts.append(struct.unpack_from("<I", wait[0], len(wait[0]) - 12)[0] - EPOCH)
        if d is None:
            return (EPOCH + firsts[0], EPOCH + lasts[0]) if firsts else None
        for s in (d.long, d.short):
            if s.size < 0:
                s.check()
            if s.starts:
                firsts.append(s.starts[0])
            elif s.buf:
                firsts.append(struct.unpack_from("<I", s.buf, 0)[0])
            if s.last is not None:
                lasts.append(s.last)
        if not firsts:
            return None
        return EPOCH + min(firsts), EPOCH + max(lasts)
