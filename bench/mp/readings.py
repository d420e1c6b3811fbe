# MicroPython side of bench/readings.py: the sensor history store and its charts
# (lib/mimi/services/history/). Modes:
#   chart   a week of readings (every 5 minutes) on the board image, then the 7-day and
#           24-hour charts and the summaries timed, the chart's code and state measured,
#           its live heap sampled (after gc.collect()) at every piece it sends
#   budget  the week's chart drawn with only `budget` bytes of the heap left free
#           (the rest taken by ballast first): exit 0 when it was drawn
#   flash   days of logging on a flash chip in RAM that counts what is programmed and
#           erased, under MicroPython's own VfsLfs2 with the board's geometry
#   micropython bench/mp/readings.py ARGS.json
import sys
import json

with open(sys.argv[1]) as _f:
    A = json.load(_f)
sys.path[:] = [".frozen", A["lib"], A["tests_mp"]]
import support  # noqa: E402  (tests/mp/support.py: leave_free)
import gc  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from mimi import board, log  # noqa: E402

log.info = log.warning = lambda *a: None
T0 = 1767225600  # 2026-01-01 00:00 UTC
WEEK = 2016


def out(rec):
    print("BENCH " + json.dumps(rec))


def week(store, name="temp"):
    for i in range(WEEK):
        store.add(name, 20 + 6 * math.sin(i / 40) + (i % 7) * 0.05, 45 + i % 9, t=T0 + i * 300)
    store.flush()


class Null:
    def write(self, b):
        return len(b)


class Sampler:
    """A writer that samples the live heap at every piece."""

    def __init__(self):
        self.peak = 0

    def write(self, b):
        gc.collect()
        self.peak = max(self.peak, gc.mem_alloc())
        return len(b)


def timed(fn, n):
    fn()
    times = []
    for _ in range(n):
        gc.collect()
        t = time.ticks_us()
        fn()
        times.append(time.ticks_diff(time.ticks_us(), t))
    times.sort()
    return times[len(times) // 2]


def mount():
    # The code stays the build's .mpy, read through the host's C filesystem (under /host
    # once the image is at /), as the board reads it through its C LittleFS: the image's
    # /lib would come through the host's Python block device, whose reads allocate.
    board.mount_image(A["image"])


def chart_mode():
    mount()
    gc.collect()
    m0 = gc.mem_alloc()
    from mimi.services.history import store

    gc.collect()
    store_code = gc.mem_alloc() - m0
    week(store)
    gc.collect()
    base = gc.mem_alloc()  # the store loaded and logging: where a chart request starts
    from mimi.services.history import chart

    gc.collect()
    code = gc.mem_alloc() - base
    now = T0 + WEEK * 300
    c = chart.Chart("temp", 168, tz_s=3600, unit="\u00b0C", now=now)
    gc.collect()
    state = gc.mem_alloc() - base - code
    s = Sampler()
    size = c.size()
    assert c.write(s) == size
    peak = s.peak - base
    c = None
    n = A["n"]
    week_us = timed(lambda: chart.Chart("temp", 168, tz_s=3600, unit="\u00b0C", now=now).write(Null()), n)
    day_us = timed(lambda: chart.Chart("temp", 24, tz_s=3600, unit="\u00b0C", now=now).write(Null()), n)
    from mimi.services.history import summary

    sum_us = timed(lambda: summary.text(summary.summary("temp", 168, now=now), 3600, "\u00b0C", "%"), n)
    json_us = timed(lambda: summary.chart_json("temp", 168, now=now, unit="\u00b0C"), n)
    out({"size": size, "store_code": store_code, "code": code, "state": state, "peak": peak,
         "week_us": week_us, "day_us": day_us, "summary_us": sum_us, "json_us": json_us,
         "json_bytes": len(summary.chart_json("temp", 168, now=now, unit="\u00b0C"))})


def budget_mode():
    mount()
    from mimi.services.history import store

    week(store)
    ballast = support.leave_free(A["budget"])  # noqa: F841 (held while the chart is drawn)
    from mimi.services.history import chart

    n = chart.Chart("temp", 168, tz_s=3600, unit="\u00b0C", now=T0 + WEEK * 300).write(Null())
    out({"budget": A["budget"], "free": gc.mem_free(), "size": n})


class Counting:
    """A flash chip in RAM for VfsLfs2 that counts programs, erases and reads."""

    BS = 4096

    def __init__(self, blocks):
        self.data = bytearray(b"\xff" * (blocks * self.BS))
        self.mv = memoryview(self.data)
        self.prog = self.erases = self.read = 0

    def readblocks(self, block, buf, off=0):
        a = block * self.BS + off
        buf[:] = self.mv[a:a + len(buf)]
        self.read += len(buf)

    def writeblocks(self, block, buf, off=0):
        a = block * self.BS + off
        self.mv[a:a + len(buf)] = buf
        self.prog += len(buf)

    def ioctl(self, op, arg):
        if op == 4:
            return len(self.data) // self.BS
        if op == 5:
            return self.BS
        if op == 6:
            self.erases += 1
        return 0


def flash_mode():
    import vfs

    from mimi.services.history import store  # (loaded before the host's files are out of reach)

    dev = Counting(A["blocks"])
    vfs.VfsLfs2.mkfs(dev)
    from mimi.flashmount import lfs

    vfs.mount(lfs(dev), "/")  # as the board mounts its partition (boot.py)

    step = A["every_s"]
    devices = ["dev%d" % k for k in range(A["devices"])]
    per_day = 86400 // step
    days = A["days"]
    measured = A["measure_days"]
    mark = None
    for i in range(days * per_day):
        if i == (days - measured) * per_day:
            mark = (dev.prog, dev.erases, dev.read)
        for k, name in enumerate(devices):
            v = 20 + 5 * math.sin(i * step / 7000 + k) + k
            assert store.add(name, v, 40 + k, every_s=step, t=T0 + i * step) is None
    st = store.stats()
    n = len(devices) * measured
    out({"prog_day": (dev.prog - mark[0]) / n, "erases_day": (dev.erases - mark[1]) / n,
         "read_day": (dev.read - mark[2]) / n, "files": st["files"], "kept": st["bytes"] // len(devices),
         "readings_day": per_day, "span_s": store.span(devices[0])[1] - store.span(devices[0])[0]})


{"chart": chart_mode, "budget": budget_mode, "flash": flash_mode}[A["mode"]]()
