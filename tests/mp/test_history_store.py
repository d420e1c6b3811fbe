# The sensor history store (services/history/store.py) on the test's LittleFS:
# batches, retention, the short tier, bad input, damaged files, a full flash, readers
# beside the writer. Times are given (or the clock skewed), never waited for.
import os
import struct
import mimi
import support
from mimi import board, fs, limits, log
from mimi.board.clock import Clock

FS_BLOCKS = 400
TIMEOUT = 120
T0 = 1767225600  # 2026-01-01 00:00 UTC
DIR = limits.HISTORY_DIR


def fresh():
    """The store as after a restart: all it knows comes from the flash again."""
    mimi.unload("mimi.services.history.store")
    from mimi.services.history import store

    return store


def names(prefix=""):
    if not fs.isdir(DIR):
        return []
    return sorted(n for n in os.listdir(DIR) if n.startswith(prefix))


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def logged(text):
    return [line for line in log.recent() if text in line]


def test_readings_wait_in_ram_and_go_to_the_flash_a_batch_at_a_time():
    s = fresh()
    for i in range(limits.HISTORY_BATCH - 1):  # a minute apart: the batch fills within the hour
        assert s.add("temp", 20 + i, t=T0 + i * 60) is None
    assert names() == []  # nothing written yet ...
    assert [v for _, v in s.read("temp")] == [20 + i for i in range(limits.HISTORY_BATCH - 1)]  # ... but seen
    n = limits.HISTORY_BATCH
    assert s.add("temp", 99.5, t=T0 + (n - 1) * 60) is None
    assert names() == ["temp.l%08x" % (T0 - s.EPOCH)]
    assert fs.size(DIR + "/" + names()[0]) == s.HEAD + n * 8  # 8-byte records: time + float32
    s.add("temp", 1, t=T0 + n * 60)
    s = fresh()  # a restart: what was in RAM is gone, the batch is there
    got = list(s.read("temp"))
    assert [t for t, _ in got] == [T0 + i * 60 for i in range(n)]
    assert got[-1][1] == 99.5 and s.stats()["waiting"] == 0
    # the oldest waiting reading an hour old: written at the next one
    t = T0 + 2 * n * 60
    s.add("temp", 1, t=t)
    assert fs.size(DIR + "/" + names()[0]) == s.HEAD + n * 8
    s.add("temp", 2, t=t + limits.HISTORY_FLUSH_S)
    assert fs.size(DIR + "/" + names()[0]) == s.HEAD + (n + 2) * 8
    s.add("temp", 3, t=t + limits.HISTORY_FLUSH_S + 300)
    assert s.flush() is None and s.stats()["waiting"] == 0
    assert [v for _, v in fresh().read("temp")][-3:] == [1, 2, 3]


def test_a_week_at_five_minutes_stays_and_the_oldest_segment_goes():
    s = fresh()
    n = 12 * 288  # 12 days of a temperature + humidity sensor read every 5 minutes
    for i in range(n):
        assert s.add("th", 20 + (i % 50) / 10, 40 + i % 30, t=T0 + i * 300) is None
    s.flush()
    segs = names("th.l")
    assert len(segs) == limits.HISTORY_SEGMENTS and names() == segs
    assert all(fs.size(DIR + "/" + p) <= limits.BLOCK_SIZE for p in segs)
    assert s.stats() == {"devices": 1, "files": 8, "bytes": 8 * 4096, "waiting": 0}
    first, last = fresh().span("th")
    assert last == T0 + (n - 1) * 300 and last - first >= 8 * 86400, (last - first) / 86400
    s = fresh()
    got = list(s.read("th"))
    assert len(got) == (last - first) // 300 + 1  # every one, none twice
    k0 = (first - T0) // 300
    for j, (t, v) in enumerate(got):
        i = k0 + j
        assert t == T0 + i * 300 and v == f32(20 + (i % 50) / 10), (j, t, v)
    hum = list(s.read("th", T0 + (n - 3) * 300, None, field=1))
    assert hum == [(T0 + i * 300, 40 + i % 30) for i in range(n - 3, n)]
    # a range: from the middle of one segment to the middle of another
    a, b = T0 + 5000 * 300 // 2, T0 + 3000 * 300
    part = list(s.read("th", a, b))
    assert part[0][0] >= a and part[-1][0] <= b and len(part) == (b - part[0][0]) // 300 + 1


def test_readings_every_minute_keep_each_for_a_day_and_5_minute_means_for_a_week():
    s = fresh()
    days = 8
    for i in range(days * 1440):
        assert s.add("fast", float(i % 60), t=T0 + i * 60, every_s=60) is None
    s.flush()
    assert len(names("fast.s")) == limits.HISTORY_FINE_SEGMENTS
    assert len(names("fast.l")) <= limits.HISTORY_SEGMENTS
    end = T0 + (days * 1440 - 1) * 60
    s = fresh()
    first, last = s.span("fast")
    assert last == end and last - first >= 7 * 86400
    recent = list(s.read("fast", end - 20 * 3600, end))  # the short tier: every reading
    assert [t for t, _ in recent] == list(range(end - 20 * 3600, end + 1, 60))
    assert all(v == ((t - T0) // 60) % 60 for t, v in recent)
    old = list(s.read("fast", T0 + 3 * 86400, T0 + 4 * 86400 - 1))  # the long tier: 5-minute means
    assert len(old) == 288
    for t, v in old:
        slot = (t - T0) // 300 * 300 + T0
        assert t == slot + 120  # the mean time of readings at +0 .. +240 s
        assert v == sum(((slot + k * 60 - T0) // 60) % 60 for k in range(5)) / 5
    both = list(s.read("fast"))  # the long tier before the short one, the short one, nothing twice
    assert all(both[i][0] < both[i + 1][0] for i in range(len(both) - 1))
    assert both[-len(recent):] == recent
    # the device slows to every 10 minutes: its readings go to the long tier again
    s.add("fast", 5, t=end + 600, every_s=600)
    s.add("fast", 6, t=end + 1200, every_s=600)
    assert list(s.read("fast", end + 1))[-2:] == [(end + 600, 5), (end + 1200, 6)]
    assert s.add("fast", 7, t=end + 90000, every_s=86400) is None  # once a day (the header's step: at most 18 h)
    assert s.flush() is None and list(fresh().read("fast", end + 1))[-1] == (end + 90000, 7)


def test_the_clock_moves_by_skew_not_by_waiting():
    s = fresh()
    for year in (2000, 1970):  # the board's epoch and the host's: the same Unix times
        board.clock = Clock(support.FakeTime(year, T0))
        s.add("epoch%d" % year, 1.0)
        assert list(s.read("epoch%d" % year)) == [(T0, 1.0)]
    for _ in range(6):
        assert s.add("skewed", 21.5) is None
        board.clock.skew += 3600
    got = list(s.read("skewed"))
    assert [t - T0 for t, _ in got] == [h * 3600 for h in range(6)]
    assert fs.size(DIR + "/" + names("skewed")[0]) > 0  # each an hour after the last: written


def test_bad_readings_are_refused_and_nothing_is_written():
    s = fresh()
    assert "clock" in s.add("x", 1.0, t=1000)  # 1970: the clock was never set
    assert "clock" in s.add("x", 1.0, t=2 ** 33)  # 2242
    for bad in (float("nan"), float("inf"), "21", None, [1], 10 ** 400):
        assert "not a number" in s.add("x", bad, t=T0), bad
    assert s.span("x") is None
    for bad in ("", "a.b", "a/b", "x" * 40):
        e = None
        try:
            s.add(bad, 1.0, t=T0)
        except ValueError as ex:
            e = ex
        assert e is not None, bad
    # a second value that is not a number is kept as "none" (NaN); the first is kept
    assert s.add("x", 1.0, float("nan"), t=T0) is None
    assert s.add("x", 2.0, 50, t=T0 + 300) is None
    assert list(s.read("x", field=1)) == [(T0 + 300, 50)]
    assert list(s.read("x")) == [(T0, 1.0), (T0 + 300, 2.0)]


def test_a_clock_that_steps_back():
    s = fresh()
    s.add("back", 1, t=T0 + 3600)
    assert s.add("back", 2, t=T0 + 3600 - 100) is None  # NTP's small correction: kept at the last time
    why = s.add("back", 3, t=T0)  # an hour back: dropped, said once
    assert why and "older" in why and s.add("back", 4, t=T0 + 60)
    assert len(logged("clock went back")) == 1
    assert list(s.read("back")) == [(T0 + 3600, 1), (T0 + 3600, 2)]


def segments(s, name, count, per=None):
    """`count` full segments of one-value readings every 5 minutes."""
    per = per or s.capacity(1)
    for i in range(count * per):
        s.add(name, float(i), t=T0 + i * 300)
    s.flush()
    return per


def corrupt(path, at, data):
    with open(path, "rb") as f:
        b = bytearray(f.read())
    b[at:at + len(data)] = data
    fs.write_atomic(path, bytes(b))


def test_a_damaged_segment_is_moved_aside_and_the_rest_is_read_and_written():
    s = fresh()
    per = segments(s, "dmg", 3)
    segs = names("dmg.l")
    assert len(segs) == 3
    corrupt(DIR + "/" + segs[1], 0, b"XX")  # not a history file any more
    s = fresh()
    got = list(s.read("dmg"))
    assert [int(v) for _, v in got] == list(range(per)) + list(range(2 * per, 3 * per))
    assert names("dmg") == ["dmg.bad", segs[0], segs[2]]
    assert logged("dmg.l") and logged("moved aside")
    # times out of order inside a segment: found while reading, moved aside too
    corrupt(DIR + "/" + segs[0], s.HEAD + 8 * 10, struct.pack("<I", 5))
    got = [int(v) for _, v in s.read("dmg")]  # what came before the damage was read
    assert got == list(range(10)) + list(range(2 * per, 3 * per))
    assert names("dmg") == ["dmg.bad", segs[2]]
    assert [int(v) for _, v in s.read("dmg")] == list(range(2 * per, 3 * per))
    # the newest cut to a size no record makes: found before the next write, a new one started
    with open(DIR + "/" + segs[2], "rb") as f:
        data = f.read()
    fs.write_atomic(DIR + "/" + segs[2], data[:-3])
    s = fresh()
    for i in range(limits.HISTORY_BATCH):
        s.add("dmg", 7.0, t=T0 + (3 * per + i) * 300)
    assert names("dmg") == ["dmg.bad", "dmg.l%08x" % (T0 + 3 * per * 300 - s.EPOCH)]
    assert [v for _, v in s.read("dmg")] == [7.0] * limits.HISTORY_BATCH
    # files that are not segments (an unfinished write, other names) are left alone
    fs.write_atomic(DIR + "/dmg.l0000zzzz", b"?")
    with open(DIR + "/junk.l00000001.tmp", "wb") as f:
        f.write(b"x")
    assert fresh().names() == ["dmg"]


def test_devices_removed_on_the_flash_and_in_ram():
    s = fresh()
    for i in range(30):
        s.add("a", i, t=T0 + i * 300)
        s.add("b", i, i * 2, t=T0 + i * 300)
        s.add("c", i, t=T0 + i * 300)
    s.flush()
    fs.write_atomic(DIR + "/c.bad", b"old damage")
    assert s.names() == ["a", "b", "c"]
    assert s.remove("c") == 1 and not names("c") and s.remove("c") == 0
    s.add("d", 1, t=T0)
    assert s.remove("b") >= 1
    s.remove("d")  # (its reading was in RAM only)
    assert fresh().names() == ["a"] and names() == names("a")
    assert list(s.read("b")) == []


def test_the_cap_makes_a_device_give_up_its_own_oldest():
    s = fresh()
    fs.makedirs(DIR)
    cap = limits.HISTORY_CAP // limits.BLOCK_SIZE
    for i in range(cap - 1):  # segments left by others (small files: only their count matters)
        fs.write_atomic(DIR + "/other%d.l%08x" % (i, i), b"MH")
    s = fresh()
    per = segments(s, "late", 3)
    assert s.stats()["files"] == cap  # its first segment fit; each later one took its oldest's place
    assert len(names("late.l")) == 1 and logged("at its cap")
    assert [int(v) for _, v in s.read("late")] == list(range(2 * per, 3 * per))


def test_a_full_flash_keeps_readings_waiting_and_writes_them_when_there_is_room():
    s = fresh()
    s.add("full", 0.0, t=T0)
    s.flush()
    support.fill_flash("/junk")
    whys = [s.add("full", float(i), t=T0 + i * 300) for i in range(1, 200)]
    assert "the flash is full" in [w for w in whys if w], whys[:20]
    kept = list(s.read("full"))
    waiting = s.stats()["waiting"]
    assert 0 < waiting <= limits.HISTORY_PENDING_MAX  # bounded in RAM: the newest wait
    assert kept[-waiting:] == [(T0 + i * 300, float(i)) for i in range(200 - waiting, 200)]
    assert kept[0] == (T0, 0.0) and kept[-1] == (T0 + 199 * 300, 199.0)
    for k in range(8):
        os.remove("/junk/%d" % k)
    assert s.flush() is None
    assert list(fresh().read("full")) == kept


def test_a_reader_sees_each_record_once_while_the_writer_goes_on():
    s = fresh()
    per = segments(s, "rw", 2)
    for i in range(5):  # some waiting in RAM too
        s.add("rw", float(2 * per + i), t=T0 + (2 * per + i) * 300)
    it = s.read("rw")
    seen = [next(it)]
    for i in range(5, 5 + per + 40):  # the writer fills a segment, starts another, flushes
        s.add("rw", float(2 * per + i), t=T0 + (2 * per + i) * 300)
    seen += list(it)
    assert [int(v) for _, v in seen] == list(range(2 * per + 5))  # what was there when it started
    assert [int(v) for _, v in s.read("rw")] == list(range(3 * per + 45))


def test_readings_waiting_when_a_reader_finds_the_newest_segment_damaged():
    s = fresh()
    per = segments(s, "late2", 2)
    for i in range(5):
        s.add("late2", 1000.0 + i, t=T0 + (2 * per + i) * 300)
    corrupt(DIR + "/" + names("late2.l")[1], 0, b"??")
    got = [v for _, v in s.read("late2")]
    assert got == [float(i) for i in range(per)] + [1000.0 + i for i in range(5)]
    assert s.flush() is None
    assert [v for _, v in fresh().read("late2")] == got
    assert len(names("late2.l")) == 2 and names("late2.bad")
