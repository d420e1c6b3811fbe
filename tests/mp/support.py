# Helpers for MicroPython tests (run by tests/mp/runner.py).
import os
import sys
import json

REPO = ""  # the repository, as a path the firmware can open (under /host)
TMP = ""  # this test's private temporary directory, likewise


class Skip(Exception):
    pass


def skip(reason):
    raise Skip(reason)


_fixtures = None


def fixture(name):
    """The JSON value of a pytest fixture the test module listed in FIXTURES."""
    global _fixtures
    if _fixtures is None:
        _fixtures = json.loads(os.getenv("MIMI_TEST_FIXTURES") or "{}")
    return _fixtures[name]


def raises(exc, fn, *args, **kw):
    """Call fn; the exception of type exc it raised (AssertionError if none)."""
    try:
        fn(*args, **kw)
    except exc as e:
        return e
    raise AssertionError("%s not raised by %s" % (exc.__name__, getattr(fn, "__name__", fn)))


def write(path, text):
    from mimi import fs

    fs.makedirs(fs.parent(path))
    with open(path, "w") as f:
        f.write(text)


def read(path):
    with open(path) as f:
        return f.read()


class FakeTime:
    """A time module of a port with the given epoch (1970: the host's, 2000: the
    ESP32's), its clock standing at `now_unix` until moved: `Clock(FakeTime(...))`."""

    def __init__(self, epoch_year, now_unix):
        import time

        self._real = time
        self.epoch_year = epoch_year
        self.offset = 946684800 if epoch_year == 2000 else 0
        self.now_unix = now_unix

    def time(self):
        return self.now_unix - self.offset

    def gmtime(self, secs):
        # The real gmtime is 1970-based on the host; shift for a 2000-epoch port.
        return self._real.gmtime(secs + self.offset)


class Capture:
    """Collect what print() writes while a block runs: `with Capture() as c: ...; c.text`."""

    def __enter__(self):
        import builtins

        self._orig = builtins.print
        self.lines = []

        def fake(*args, sep=" ", end="\n"):
            self.lines.append(sep.join(str(a) for a in args) + end)

        builtins.print = fake
        return self

    def __exit__(self, *exc):
        import builtins

        builtins.print = self._orig

    @property
    def text(self):
        return "".join(self.lines)


class Ticker:
    """A task waking every 10 ms: `.count` grows only while the asyncio loop runs, so
    a blocking call shows as no new counts. `t = Ticker(); ...; t.stop()`"""

    def __init__(self):
        import asyncio

        self.count = 0
        self._task = asyncio.create_task(self._run())

    async def _run(self):
        import asyncio

        while True:
            self.count += 1
            await asyncio.sleep_ms(10)

    def stop(self):
        self._task.cancel()


def joined(body):
    """An HTTP request body (bytes, or a tuple of parts: mimi/net/httpbody.py) as the
    bytes it sends, Regions of files read."""
    from mimi.net import httpbody

    if not isinstance(body, tuple):
        return bytes(body or b"")
    out = []
    for p in httpbody.flat(body):
        if isinstance(p, httpbody.Region):
            with open(p.path, "rb") as f:
                f.seek(p.start)
                out.append(f.read(p.n))
        else:
            out.append(bytes(memoryview(p)))
    return b"".join(out)


class _File:
    """A file as open() gave it, saying whether it was closed."""

    def __init__(self, f):
        self.f = f
        self.closed = False

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __iter__(self):
        return iter(self.f)

    def close(self):
        self.closed = True
        self.f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Opened:
    """with Opened() as o: the files open() gives meanwhile (the builtin wrapped), in
    o.files; o.left(): those not closed (by the end, left to the GC's finaliser)."""

    def __enter__(self):
        import builtins

        self.real, self.files = builtins.open, []

        def tracked(*a, **kw):
            f = _File(self.real(*a, **kw))
            self.files.append(f)
            return f

        builtins.open = tracked
        return self

    def __exit__(self, *exc):
        import builtins

        builtins.open = self.real

    def left(self):
        return [f for f in self.files if not f.closed]


def fill_flash(folder):
    """Plain 4000-byte files (a block each) in `folder` until LittleFS refuses: the flash
    is full. -> how many were written."""
    from mimi import fs

    fs.makedirs(folder)
    n = 0
    try:
        while True:
            with open("%s/%d" % (folder, n), "wb") as f:
                f.write(b"j" * 4000)
            n += 1
    except OSError as e:
        assert e.args[0] == 28, e
    return n


def leave_free(budget):
    """Take the heap with ballast until `budget` bytes are left free (spread as the
    heap leaves them); -> the ballast, to keep while what is measured runs."""
    import gc

    gc.collect()
    ballast = []
    size = 64 * 1024
    while size >= 32:
        if gc.mem_free() - size < budget:
            size //= 2
            continue
        try:
            ballast.append(bytearray(size - 16))
        except MemoryError:
            size //= 2
    gc.collect()
    return ballast


def leave_holes(n, size):
    """Take the heap with ballast but for n separate free blocks of `size` bytes (a
    heap broken up: no block bigger than that); -> the ballast, to keep meanwhile."""
    import gc

    gc.collect()
    holes = []
    ballast = []
    for _ in range(n):
        holes.append(bytearray(size - 16))
        ballast.append(bytearray(16))  # keeps the holes apart
    ballast.append(leave_free(0))
    holes = None
    gc.collect()
    return ballast


def leave_pieces(size):
    """Take the heap but for free blocks of at most `size` bytes (about half of what was
    free, every other piece of a run of them; a heap broken up as a long run leaves it);
    -> the ballast, to keep meanwhile. The lists are made first: a list grown while the
    heap is taken would leave its old, bigger storage free."""
    import gc

    gc.collect()
    n = gc.mem_free() // size + 8
    pieces = [None] * n
    rest = [None] * 512
    k = 0
    try:  # pieces end to end where the free heap is long enough for them
        while k < n:
            pieces[k] = bytearray(size - 16)
            k += 1
    except MemoryError:
        pass
    j = 0
    s = size
    while s >= 32 and j < len(rest):  # the shorter free blocks taken too
        try:
            rest[j] = bytearray(s - 16)
            j += 1
        except MemoryError:
            s //= 2
    for i in range(0, k, 2):
        pieces[i] = None
    gc.collect()
    return pieces, rest


def rules_load():
    """The rules' loop's state (services/rules/__init__.py) loaded, as its first pass or a
    change does (services/rules/upkeep.py load())."""
    import mimi
    import mimi.services.rules as engine

    mimi.run("services.rules.upkeep", "load")
    return engine


async def rules_pass(now):
    """One pass of the rules' loop at ticks `now` (services/rules/check.py step()) -> ms
    until the next is due."""
    __import__("mimi.services.rules.check")
    return await sys.modules["mimi.services.rules.check"].step(now)
