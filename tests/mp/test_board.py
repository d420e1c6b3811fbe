# Board layer on the host: clock on both epochs, tz, filesystem, GPIO, WiFi.
import os
from support import FakeTime, raises
from mimi.board.clock import Clock, parse_tz, format_tz, EPOCH_2000
from mimi import board, fs, limits

# (64-bit, 32-bit): the fragmented test needs the imports plus >32 KB to fill, 124k / 88-92k
# today whatever the temp and checkout paths (measured 2026-12; 128k for both left 64-bit at 97%)
HEAP = {"test_largest_free_block_of_a_fragmented_heap": ("144k", "104k")}


def test_unix_time_same_on_both_epochs():
    t = 1767225600 + 3723  # 2026-01-01 01:02:03 UTC
    for year in (1970, 2000):
        c = Clock(FakeTime(year, t))
        assert c.unix() == t, year
        assert c.valid()
        assert c.gmtime()[:6] == (2026, 1, 1, 1, 2, 3)
        assert c.local_date(parse_tz("-05:00")) == "2025-12-31"
        assert c.local_str(parse_tz("+08:00")) == "2026-01-01 09:02:03 UTC+08:00 (Thursday)"


def test_unset_clock_is_not_valid():
    assert not Clock(FakeTime(2000, EPOCH_2000 + 5)).valid()
    assert not Clock(FakeTime(1970, 5)).valid()


def test_host_clock_is_real_time():
    import time

    assert board.clock.epoch_offset == 0
    assert abs(board.clock.unix() - time.time()) <= 1
    assert board.clock.valid()


def test_set_unix_moves_host_clock():
    before = board.clock.unix()
    board.set_unix(before + 86400)
    assert 86399 <= board.clock.unix() - before <= 86401


def test_parse_tz():
    assert parse_tz("+08:00") == 28800
    assert parse_tz("-05:30") == -(5 * 3600 + 1800)
    assert parse_tz("UTC") == 0
    assert parse_tz("UTC+2") == 7200
    assert format_tz(-19800) == "-05:30"
    for bad in ("8", "+8:75", "+15:00", "abc", "+08:00:00"):
        raises(ValueError, parse_tz, bad)


def test_root_is_littlefs():
    st = os.statvfs("/")
    assert st[0] == 4096 and st[2] == 256
    info = board.fs_info()
    assert info["total"] == 256 * 4096 and 0 < info["free"] <= info["total"]


def test_host_files_under_host_renamed():
    # the host's disk at /host as a VfsPosix without a root: one with a root made both
    # of rename's paths in one buffer, renaming the new name to itself (ENOENT)
    import support

    old, new = support.TMP + "/old.txt", support.TMP + "/new.txt"
    with open(old, "w") as f:
        f.write("x")
    os.rename(old, new)
    assert sorted(n for n in os.listdir(support.TMP) if n.endswith(".txt")) == ["new.txt"]


def test_atomic_write_and_capped_read():
    fs.write_atomic("/spiffs/a/b.md", "héllo wörld")
    assert fs.read_text("/spiffs/a/b.md") == "héllo wörld"
    # A cap in the middle of a 2-byte character cuts before it.
    assert fs.read_text("/spiffs/a/b.md", 2) == "h"
    assert fs.walk_files("/spiffs") == ["/spiffs/a/b.md"]


def test_decode_invalid_utf8():
    assert fs.decode(b"ok\xffstill \xe2\x82\xac \xe2\x82") == "ok\ufffdstill \u20ac \ufffd\ufffd"


def test_sim_gpio_keeps_state():
    p = board.Pin(5, board.Pin.OUT)
    p.value(1)
    assert board.SIM_PINS[5]["level"] == 1
    q = board.Pin(5)  # another handle, no mode change
    assert q.value() == 1 and board.SIM_PINS[5]["mode"] == board.Pin.OUT
    i = board.Pin(6, board.Pin.IN)
    board.sim_drive(6, 1)
    assert i.value() == 1
    i.value(0)  # writing an input changes nothing
    assert i.value() == 1


def test_wifi_host_connected():
    w = board.wlan()
    assert w.isconnected()
    assert w.ifconfig()[0] == "127.0.0.1"
    assert len(w.scan()) >= 1


def test_heap_and_id():
    h = board.heap()
    assert h["free"] > 0 and h["alloc"] > 0
    assert h["largest"] == min(limits.HEAP_PROBE_MAX, h["free"])  # a fresh heap: one free run
    assert len(board.unique_id()) == 8


def test_largest_free_block_of_a_fragmented_heap():
    # gc.mem_free() counts every free byte; a turn's buffer needs them in one piece.
    import gc
    from mimi.board.heapblock import largest

    gc.collect()
    keep = []
    try:
        while True:
            keep.append(bytearray(1024))
    except MemoryError:
        pass
    for i in range(0, len(keep), 2):  # every other block free again: plenty free, none big
        keep[i] = None
    gc.collect()
    free = gc.mem_free()
    big = largest()
    assert free > 16 * 1024 and big < 4 * 1024, (free, big)
    keep = None
    gc.collect()
    assert largest() > 16 * 1024, (largest(), gc.mem_free())



def test_atomic_write_cut_before_the_rename_keeps_the_old_file():
    # A power cut while the new text is being written: the previous file stays whole
    # (an in-place write would already have replaced it).
    fs.write_atomic("/spiffs/a.md", "old contents")

    class PowerCut:
        def __getattr__(self, name):
            return getattr(os, name)

        def rename(self, a, b):
            raise OSError(5)  # the board lost power here

    fs.os = PowerCut()
    try:
        raises(OSError, fs.write_atomic, "/spiffs/a.md", "new contents, longer")
    finally:
        fs.os = os
    assert fs.read_text("/spiffs/a.md") == "old contents"
    fs.write_atomic("/spiffs/a.md", "new contents")  # the stale temp file is no obstacle
    assert fs.read_text("/spiffs/a.md") == "new contents"
    assert not fs.exists("/spiffs/a.md.tmp")


def test_capped_read_allocates_only_what_the_file_holds():
    # read(n) in MicroPython allocates n bytes first: a generous cap on a small file
    # must not turn into a huge allocation (a fragmented heap fails those).
    fs.write_atomic("/spiffs/small.md", "tiny")
    assert fs.read_text("/spiffs/small.md", 64 * 1024 * 1024) == "tiny"
    assert fs.read_head("/spiffs/small.md", 64 * 1024 * 1024) == b"tiny"
    assert fs.read_head("/spiffs/small.md", 2) == b"ti"
