# MicroPython side of bench/history.py and bench/prompt.py: session history loads and
# system prompt builds on a board image (LittleFS), timed with ticks_us, with the
# bytes allocated per call measured with the GC off (gc.mem_alloc() difference).
#   micropython bench/mp/storage.py ARGS.json   ({"image":..., "lib":..., "mode": "sessions"|"prompt", "n": N})
import sys
import json

with open(sys.argv[1]) as _f:  # a JSON file: long argv items abort the unix port
    A = json.load(_f)
sys.path[:] = [".frozen", A["lib"]]  # a frozen mimi first, as below (and on the board)
from mimi import board  # noqa: E402

board.mount_image(A["image"])
sys.path[:] = ["", ".frozen", "/lib"]
import gc  # noqa: E402
import time  # noqa: E402
from mimi import fs, log  # noqa: E402
from mimi.config import defaults  # noqa: E402

log.info = lambda *a: None  # keep the output to the BENCH lines


def out(rec):
    print("BENCH " + json.dumps(rec))


def measure(fn, n):
    """-> (median µs, bytes allocated by one call, bytes still held by its result)."""
    fn()  # warm: imports, first-open caches
    times = []
    for _ in range(n):
        gc.collect()
        t0 = time.ticks_us()
        fn()
        times.append(time.ticks_diff(time.ticks_us(), t0))
    times.sort()
    gc.collect()
    a = gc.mem_alloc()
    gc.disable()
    r = fn()
    churn = gc.mem_alloc() - a
    gc.enable()
    gc.collect()
    held = gc.mem_alloc() - a
    r = None  # noqa: F841
    return times[len(times) // 2], churn, held


class Counting:
    """A file that counts the bytes read through it."""
    read_bytes = 0

    def __init__(self, f):
        self.f = f

    def read(self, *a):
        d = self.f.read(*a)
        Counting.read_bytes += len(d)
        return d

    def readinto(self, b):
        n = self.f.readinto(b)
        Counting.read_bytes += n or 0
        return n

    def __getattr__(self, name):
        return getattr(self.f, name)


def sessions_bench():
    from mimi.memory import sessions

    fs.makedirs(sessions.DIR)
    text = "word " * 96  # ~500-byte messages, as in a chatty session
    for size in A["sizes"]:
        key = "ws_s%d" % size
        written = k = 0
        with open(sessions.path(key), "wb") as f:
            while written < size:
                role = "user" if k % 2 == 0 else "assistant"
                line = json.dumps({"role": role, "content": "%d: %s" % (k, text), "ts": k}) + "\n"
                f.write(line)
                written += len(line)
                k += 1
        us, churn, held = measure(lambda: sessions.load(key), A["n"])
        msgs = sessions.load(key)
        real_open = open
        sessions.open = lambda *a: Counting(real_open(*a))
        Counting.read_bytes = 0
        sessions.load(key)
        del sessions.open

        def whole():
            with open(sessions.path(key), "rb") as f:
                return f.read()

        wus, wchurn, _ = measure(whole, A["n"])
        # a short heap's load for a request: its texts sent from the file; what the tail's
        # read holds once it has the 20 messages (the turn's start), and allocates
        _, tchurn, theld = measure(lambda: sessions._tail(sessions.path(key), 20, True, True), A["n"])
        out({"size": fs.size(sessions.path(key)), "lines": k, "us": us, "churn": churn,
             "held": held, "msgs": len(msgs), "read": Counting.read_bytes,
             "whole_us": wus, "whole_churn": wchurn, "tail_churn": tchurn, "tail_held": theld})


def prompt_bench():
    from mimi.agent import context
    from mimi.memory import store, skills

    defaults.install()
    cases = [("default files", None)]
    big = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 1200  # ~68 KB
    cases.append(("oversized: SOUL/USER/MEMORY 68 KB each, 3 notes 68 KB, 40 skills", big))
    for label, data in cases:
        if data:
            for p in (context.SOUL_PATH, context.USER_PATH, store.MEMORY_PATH):
                fs.write_atomic(p, data.encode())
            for d in range(3):
                fs.write_atomic(store.note_path(_day(-d)), data.encode())
            fs.makedirs(skills.DIR)
            for i in range(40):
                fs.write_atomic("%s/skill%02d.md" % (skills.DIR, i),
                                ("# Skill %d\n\nDoes thing %d. " % (i, i) + data[:4000]).encode())
        # what a turn builds: the prompt escaped for the request, in pieces (context.encoded)
        us, churn, held = measure(lambda: context.encoded("websocket", "bench"), A["n"])
        fixed, dynamic = context.build_parts("websocket", "bench")
        parts = {}
        from mimi import limits
        for name, fn in (("notes", lambda: store.recent_notes(limits.NOTES_MAX)),
                         ("skills", lambda: skills.summary(limits.SKILLS_MAX)),
                         ("memory", lambda: _file_section("M", store.MEMORY_PATH, limits.MEMORY_MAX)),
                         ("soul", lambda: _file_section("P", context.SOUL_PATH, limits.PROMPT_MAX)),
                         ("fixed", context.fixed_part)):
            parts[name] = measure(fn, 3)[1]
        # Anthropic marks the fixed block and the sections, not the per-turn context
        turn = context._turn("websocket", "bench", False)
        out({"case": label, "us": us, "churn": churn, "held": held, "parts": parts,
             "bytes": len((fixed + dynamic).encode()), "fixed": len(fixed.encode()),
             "marked": len((fixed + dynamic).encode()) - len(turn.encode())})


def _file_section(title, path, cap):
    """One file's prompt section, as context._build makes it (the file opened once)."""
    from mimi.agent import context

    opened = context._opened(path)
    try:
        return context._file_section(title, path, opened, cap, [], lambda x: x)
    finally:
        context._closed(opened)


def _day(offset):
    from mimi.memory import store

    return store.today(board.clock.unix() + offset * 86400)


if A["mode"] == "sessions":
    sessions_bench()
else:
    prompt_bench()
