# A full flash (issue 16 item 6): what the file tools, the sessions and fs_info do
# when LittleFS says ENOSPC, and the room the file tools' default quota leaves for
# the system's own files.
import os
import json
from support import fill_flash, read
from mimi import limits, fs, log, board
from mimi.config.settings import cfg
from mimi.tools.registry import registry
from mimi.tools import files
from mimi.memory import sessions

FS_BLOCKS = 160
JUNK = "/junk"


def setup():
    cfg.load()
    files._used = None


def call(name, **args):
    return registry.call(name, args)


def fill():
    """Plain files (no file tool) until LittleFS refuses: the flash is full."""
    return fill_flash(JUNK)


def unfill(n=8):
    for name in sorted(os.listdir(JUNK))[:n]:
        os.remove(JUNK + "/" + name)


def tmp_files():
    return [p for p in fs.walk_files("/") if p.endswith(".tmp")]


def test_write_on_full_flash_is_an_error_and_leaves_the_old_file():
    assert call("write_file", path="/spiffs/memory/MEMORY.md", content="old").startswith("OK:")
    fill()
    r = call("write_file", path="/spiffs/memory/MEMORY.md", content="new " * 3000)
    assert r.startswith("Error:") and "flash is full" in r, r
    assert read("/spiffs/memory/MEMORY.md") == "old"
    # Counted again after that failure: the quota now refuses before LittleFS does.
    r = call("write_file", path="/spiffs/memory/new.md", content="n" * 9000)
    assert r.startswith("Error: no room") and "flash" in r, r
    assert not fs.exists("/spiffs/memory/new.md")
    r = call("edit_file", path="/spiffs/memory/MEMORY.md", old_string="old", new_string="x" * 9000)
    assert r.startswith("Error: no room"), r
    assert read("/spiffs/memory/MEMORY.md") == "old"
    assert tmp_files() == []
    # Room made elsewhere (more than the reserve) is seen without a reboot.
    unfill(limits.FILES_RESERVE // limits.BLOCK_SIZE + 8)
    assert call("write_file", path="/spiffs/memory/new.md", content="n" * 9000).startswith("OK:")
    assert tmp_files() == []


def test_quota_counted_on_a_full_flash_refuses_growth_allows_shrinking():
    assert call("write_file", path="/spiffs/a.md", content="a" * 9000).startswith("OK:")
    fill()
    files._used = None  # a boot with the flash already full
    r = call("write_file", path="/spiffs/b.md", content="b")
    assert r.startswith("Error:") and "KB" in r and "flash is full" not in r, r
    assert call("write_file", path="/spiffs/a.md", content="a").startswith("OK:")
    assert read("/spiffs/a.md") == "a"


def test_session_save_on_full_flash_is_said_and_kept():
    key = "ws_full"
    sessions.append(key, "user", "q1")
    sessions.append(key, "assistant", "a1")
    assert sessions.flush() is None
    fill()
    mark = len(log.recent(100))
    q2 = "q2 " + "x" * 600  # (more than LittleFS keeps inline in the folder's metadata: a block)
    sessions.append(key, "user", q2)
    a2 = ("a2 ", "\u00e9\"" * 400, " end")  # a long answer in pieces (bus.pieces())
    sessions.append(key, "assistant", a2)
    err = sessions.flush()
    assert err and "not saved" in err and "flash is full" in err, err
    assert any("session" in line for line in log.recent(100)[mark:])
    # The chat goes on with what could not be written.
    assert [m["content"] for m in sessions.load(key)] == ["q1", "a1", q2, "".join(a2)]
    unfill()
    assert sessions.flush() is None
    with open(sessions.path(key)) as f:
        assert [json.loads(x)["content"] for x in f.read().split("\n") if x] == ["q1", "a1", q2, "".join(a2)]
    assert tmp_files() == []


def test_unsaved_lines_stay_bounded():
    fill()
    for i in range(200):
        sessions.append("ws_b", "user", "%d " % i + "x" * 500)
    assert sessions._pending_bytes <= 2 * limits.SESSION_PENDING_MAX
    msgs = sessions.load("ws_b", 1000)
    assert msgs == [] or msgs[-1]["role"] == "assistant"


def test_worker_says_when_the_chat_was_not_saved():
    from mimi import bus
    from mimi.agent import worker
    from mimi.llm import provider

    class Stub:
        def chat(self, system, messages, tools):
            return provider.Reply("the answer")

    provider.from_config = lambda c: Stub()
    fill()
    out = worker.run_message(bus.Msg("websocket", "wf", "hello"))
    assert out.startswith("the answer") and "not saved" in out, out
    unfill()
    assert worker.run_message(bus.Msg("websocket", "wf", "again")) == "the answer"


def test_fs_info_counts_folders_once_and_never_wraps():
    for i in range(20):
        os.mkdir("/d%d" % i)
    free = board.fs_info()["free"] // limits.BLOCK_SIZE
    n = fill()  # 4000-byte files: a block each
    assert free - 8 <= n <= free, (free, n)  # a few blocks go to the folder's metadata
    info = board.fs_info()
    assert 0 <= info["free"] <= 2 * limits.BLOCK_SIZE, info
    assert info["total"] == FS_BLOCKS * limits.BLOCK_SIZE
    st = os.statvfs("/")
    assert not 0 <= st[3] <= st[2]  # LittleFS's own count wrapped: what fs_info corrects


def test_default_quota_leaves_room_for_the_system():
    assert cfg.get("files_quota_kb") == 0
    used, cap = files.usage()
    assert cap <= board.fs_info()["free"] - limits.FILES_RESERVE
    # The model fills all it may, big files first, then small ones.
    refused = None
    for size in (60000, 9000, 1000):
        i = 0
        while True:
            r = call("write_file", path="/spiffs/fill/%d-%d.md" % (size, i), content="f" * size)
            if not r.startswith("OK:"):
                refused = r
                break
            i += 1
    assert refused.startswith("Error: no room") and "flash is full" not in refused, refused
    # The system's own files still save: settings, a full cron.json, the Telegram
    # offset and a chat grown past its compaction size.
    cfg.set("tz", "+01:00")
    cfg.set("heartbeat_min", 15)
    fs.write_atomic(limits.SPIFFS + "/cron.json", json.dumps({"jobs": [], "pad": "p" * (limits.CRON_FILE_MAX - 100)}))
    fs.write_atomic(limits.TG_OFFSET_PATH, '{"offset": 12345}')
    for i in range(100):
        sessions.append("tg_1", "user", "question %d " % i + "q" * 700)
        sessions.append("tg_1", "assistant", "answer %d " % i + "a" * 700)
        assert sessions.flush() is None
    assert 0 < fs.size(sessions.path("tg_1")) <= limits.SESSION_FILE_MAX
    cfg.load()
    assert cfg.get("tz") == "+01:00"
    assert tmp_files() == []


def test_unsaved_lines_survive_a_short_heaps_unloading():
    # on a short heap the agent lets its code go after a turn (worker._forget()), the
    # sessions' with it: the lines a full flash refused, which the chat was told are
    # "kept in memory until a restart", went with the module (the next turn's history
    # lacked them; the next flush never wrote them)
    import sys
    from mimi.agent import worker

    key = "ws_short"
    fill()
    sessions.append(key, "user", "q1")
    sessions.append(key, "assistant", "a1")
    assert "not saved" in sessions.flush()
    worker._forget(True)
    from mimi.memory import sessions as again

    assert [m["content"] for m in again.load(key)] == ["q1", "a1"]
    unfill()
    assert again.flush() is None
    worker._forget(True)  # (nothing held: the code goes)
    assert "mimi.memory.sessions" not in sys.modules
    with open(sessions.path(key)) as f:
        assert [json.loads(x)["content"] for x in f.read().split("\n") if x] == ["q1", "a1"]
