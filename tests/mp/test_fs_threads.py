# Two threads write the flash at once through the firmware's own code paths, as the
# agent thread (sessions, file tools, daily notes) and the asyncio loop (settings,
# cron, Telegram offset, REPL memory_write) do. The unix port has no GIL, so without
# the filesystem lock their LittleFS calls interleave and corrupt the image. Afterwards
# the image is mounted again with MicroPython's own VfsLfs2 (no firmware layer
# in between) and every file is read and checked against what was written last.
import gc
import os
import vfs
import json
import time
import _thread
from mimi import board, bus, fs, limits
from mimi.config.settings import cfg
from mimi.memory import sessions, store
from mimi.services.cron import Scheduler
from mimi.channels.telegram import poller as telegram, updates
from mimi.tools.registry import registry
import mimi.tools.files  # noqa: F401 - registers the file tools

FS_BLOCKS = 512
HEAPSIZE = "4m"
TIMEOUT = 300
ROUNDS = 40
T0 = 1800000000
NOTE_DATE = "2027-01-15"
KEYS = ("ws_a", "ws_b", "tg_7")
FILL = "0123456789abcdef" * 40  # 640 bytes: files past LittleFS's inline size


class FakeClock:
    def unix(self):
        return T0

    def valid(self):
        return True


def memory_text(who, i):
    return "# Memory\n\n%s %d\n%s\n" % (who, i, FILL * 2)


def note_file(i):
    return "/spiffs/notes/n%d.md" % (i % 4)


def note_text(i):
    return "note %d\n%s\n" % (i, FILL * (1 + i % 5))


def session_text(key, i):
    return "%s message %d %s" % (key, i, FILL * 6)  # ~4 KB: compaction every few rounds


class Results:
    def __init__(self):
        self.lock = _thread.allocate_lock()
        self.errors = []
        self.done = False

    def error(self, what):
        with self.lock:
            self.errors.append(what)


def agent_side(res):
    """What the agent thread writes: sessions (appends + compaction), file tools
    (write_file, edit_file, MEMORY.md), and the day's note (appends)."""
    try:
        for i in range(ROUNDS):
            key = KEYS[i % len(KEYS)]
            sessions.append(key, "user", session_text(key, i))
            sessions.append(key, "assistant", session_text(key, i))
            sessions.flush()
            for args in ({"path": note_file(i), "content": note_text(i)},
                         {"path": store.MEMORY_PATH, "content": memory_text("agent", i)}):
                r = registry.call("write_file", args)
                if not r.startswith("OK"):
                    res.error("write_file %s: %s" % (args["path"], r))
            r = registry.call("edit_file", {"path": "/spiffs/notes/count.md",
                                            "old_string": "count=%d;" % i,
                                            "new_string": "count=%d;" % (i + 1)})
            if not r.startswith("OK"):
                res.error("edit_file: " + r)
            store.append_note("agent %d" % i, NOTE_DATE)
    except Exception as e:
        res.error("agent thread: %r" % e)
    with res.lock:
        res.done = True


def loop_side(sched, bot):
    """What the loop writes: settings, cron.json, the Telegram offset, memory_write."""
    ids = []
    for i in range(ROUNDS):
        cfg.set("model", "model-%d" % i)
        ids.append(sched.add("job%d" % i, "every", "check %d" % i, interval_s=60 + i)["id"])
        if len(ids) > 6:
            assert sched.remove(ids.pop(0))
        bot.offset = 1000 + i
        updates.save_offset(bot)
        store.write_memory(memory_text("loop", i))
        store.append_note("loop %d" % i, NOTE_DATE)
    return ids


def remount_raw():
    """The image mounted by MicroPython's VfsLfs2 alone (no firmware layer around it), as
    the board mounts it at boot (boot.py: mimi/flashmount.py)."""
    from mimi.board import host, host_vfs
    from mimi.flashmount import lfs

    bdev = host_vfs.FileBlockDev(board.host_path(host.image_path), FS_BLOCKS)
    vfs.umount("/")
    vfs.mount(lfs(bdev), "/")


def all_files(top):
    out = []
    for e in os.ilistdir(top):
        full = top.rstrip("/") + "/" + e[0]
        if full == board.HOST_MOUNT:
            continue
        if e[1] & 0x4000:
            out.extend(all_files(full))
        else:
            out.append(full)
    return out


def read(path):
    gc.collect()
    with open(path, "rb") as f:
        return f.read()


def session_lines(key):
    rows = []
    for raw in read(sessions.path(key)).split(b"\n"):
        if raw:
            rows.append(json.loads(raw))  # every line whole
    return rows


def test_two_writers_leave_a_sound_filesystem():
    cfg.load()
    fs.makedirs("/spiffs/notes")
    fs.write_atomic("/spiffs/notes/count.md", "count=0;\n" + FILL)
    sched = Scheduler(clock=FakeClock(), inbound=bus.Queue(16), tz=lambda: 0)
    sched.load()
    bot = telegram.Telegram()
    bot.bot_id = "42"
    res = Results()
    _thread.stack_size(limits.AGENT_STACK)
    _thread.start_new_thread(agent_side, (res,))
    try:
        ids = loop_side(sched, bot)
    except Exception as e:
        res.error("loop: %r" % e)
        ids = None
    while True:
        with res.lock:
            if res.done:
                break
        time.sleep_ms(20)
    assert not res.errors, res.errors

    remount_raw()
    files = all_files("/")
    for p in files:
        read(p)  # every file readable to its end
    assert not [p for p in files if p.endswith(".tmp")], files
    assert sorted(e[0] for e in os.ilistdir("/") if "/" + e[0] != board.HOST_MOUNT) == [
        "config.json", "spiffs", "tg_offset.json"]
    assert json.loads(read("/config.json")) == {"model": "model-%d" % (ROUNDS - 1)}
    assert json.loads(read(limits.TG_OFFSET_PATH)) == {"bot": "42", "offset": 1000 + ROUNDS - 1}
    assert [j["id"] for j in json.loads(read("/spiffs/cron.json"))["jobs"]] == ids
    for i in range(ROUNDS - 4, ROUNDS):
        assert read(note_file(i)) == note_text(i).encode()
    assert read("/spiffs/notes/count.md") == ("count=%d;\n" % ROUNDS + FILL).encode()
    assert read(store.MEMORY_PATH) in (memory_text("agent", ROUNDS - 1).encode(),
                                       memory_text("loop", ROUNDS - 1).encode())
    note = read(store.note_path(NOTE_DATE)).decode().split("\n")
    assert note[0] == "# " + NOTE_DATE and note.count(note[0]) == 1, note[:3]
    for who in ("agent", "loop"):
        assert [x for x in note if x.startswith(who)] == ["%s %d" % (who, i) for i in range(ROUNDS)]
    for n, key in enumerate(KEYS):
        rows = session_lines(key)
        last = max(i for i in range(ROUNDS) if i % len(KEYS) == n)
        assert [r["role"] for r in rows[-2:]] == ["user", "assistant"]
        assert rows[-1]["content"] == session_text(key, last)
        assert os.stat(sessions.path(key))[6] <= limits.SESSION_FILE_MAX


def test_lock_is_reentrant_exclusive_and_released_on_error():
    order = []
    done = _thread.allocate_lock()
    done.acquire()

    def other():
        with fs.lock:
            order.append("other")
        done.release()

    with fs.lock:
        with fs.lock:  # the same thread again: no deadlock
            _thread.start_new_thread(other, ())
            time.sleep_ms(50)
            order.append("main")  # the other thread is still waiting
    done.acquire()
    assert order == ["main", "other"], order
    try:
        with fs.lock:
            raise ValueError("boom")
    except ValueError:
        pass
    with fs.lock:  # released by the error above
        pass
    assert fs.lock._depth == 0 and fs.lock._owner is None
