# Power cuts while the history store writes (services/history/store.py). Its flushes run
# on a flash chip in RAM (tests/mp/cutflash.py) under MicroPython's own VfsLfs2, and are
# cut at every program and erase they make, not done or torn part way. Each cut image is
# mounted again and read by a freshly loaded store: it holds every reading written before
# the flush (the oldest segment's only if the new one that replaces it is not whole
# yet) and a first part of the batch, never a damaged file, and it takes readings again.
# tests/mp/powercut.py cuts the store at random among the firmware's other writes too.
import vfs
import mimi
from cutflash import CutFlash
from mimi import flashmount, fs, limits

HEAPSIZE = "16m"
TIMEOUT = 300
BLOCKS = 64
T0 = 1767225600
BATCH = limits.HISTORY_BATCH


def store():
    """The store as a boot finds it: loaded again, knowing only the flash."""
    mimi.unload("mimi.services.history.store")
    from mimi.services.history import store as s

    return s


def on(dev, fn):
    """fn() with `dev` mounted at / (where /history is); the test's own flash after."""
    home = [m for m, at in vfs.mount() if at == "/"][0]
    vfs.umount("/")
    try:
        vfs.mount(flashmount.lfs(dev), "/")  # (as boot.py mounts the board's flash)
        try:
            return fn()
        finally:
            vfs.umount("/")
    finally:
        vfs.mount(home, "/")


def add(first, n):
    s = store()
    for i in range(first, first + n):
        assert s.add("pc", float(i), t=T0 + i * 300) is None
    assert s.flush() is None


def readings():
    return [(t, int(v)) for t, v in store().read("pc")]


def every_cut(kept):
    """Cut a flush of BATCH readings after `kept` readings at each of its programs and
    erases; -> cuts checked."""
    dev = CutFlash(bytearray(b"\xff" * (BLOCKS * 4096)))
    vfs.VfsLfs2.mkfs(dev)
    on(dev, lambda: add(0, kept))
    base = bytearray(dev.data)
    before = on(CutFlash(bytearray(base)), readings)
    assert len(before) == kept
    batch = [(T0 + i * 300, i) for i in range(kept, kept + BATCH)]
    whole = CutFlash(bytearray(base))
    on(whole, lambda: add(kept, BATCH))
    total = whole.ops
    after = on(whole, readings)
    per = store().capacity(1)
    trimmed = kept >= limits.HISTORY_SEGMENTS * per
    assert after == (before[per:] if trimmed else before) + batch
    firsts = [0, per] if trimmed else [0]
    checked = 0
    for at in range(1, total + 1):
        for tear in (None, 7, 200):
            dev = CutFlash(bytearray(base))
            dev.arm(True, at, tear)
            on(dev, lambda: add(kept, BATCH))
            cut = CutFlash(dev.snap[0])

            def boot():
                got = readings()
                bad = fs.exists(limits.HISTORY_DIR + "/pc.bad")
                add(kept + BATCH, 1)  # the store goes on
                return got, bad, readings()

            got, bad, later = on(cut, boot)
            ok = [before[j:] + batch[:m] for j in firsts for m in range(BATCH + 1)]
            assert got in ok, (at, tear, len(got), got[:1], got[-1:])
            assert not bad, (at, tear)
            assert later[-1] == (T0 + (kept + BATCH) * 300, kept + BATCH), (at, tear)
            assert later[:-1] in (got, got[per:]), (at, tear)  # (a new segment takes the oldest's place)
            checked += 1
    return checked


def test_a_cut_inside_an_append_to_a_segment():
    assert every_cut(30) >= 6


def test_a_cut_where_a_batch_fills_a_segment_and_starts_the_next():
    assert every_cut(store().capacity(1) - 5) >= 9


def test_a_cut_where_a_new_segment_replaces_the_oldest():
    assert every_cut(limits.HISTORY_SEGMENTS * store().capacity(1)) >= 9
