# Session history: tail loading, corrupt and long lines, alternation repair,
# batching, compaction, file names, clear and list.
import json
from support import write
from mimi import limits, fs, log, bus
from mimi.memory import sessions

FS_BLOCKS = 1536
HEAP = {"test_tail_of_1mb_file_with_capped_heap": "160k"}  # (64-bit: 128 KB no longer held the imports)
TIMEOUT = 120


def line(role, content, ts=1):
    return json.dumps({"role": role, "content": content, "ts": ts}) + "\n"


def pairs(n, tag="m"):
    out = []
    for i in range(n):
        out.append(line("user", "%s-q%d" % (tag, i)))
        out.append(line("assistant", "%s-a%d" % (tag, i)))
    return "".join(out)


def test_append_flush_load_roundtrip():
    from mimi import board

    board.set_unix(1800000000)  # ts is Unix time from the board clock (epoch-2000 safe)
    sessions.append("tg_1", "user", "hello")
    sessions.append("tg_1", "assistant", "hi there")
    assert not fs.exists("/spiffs/sessions/tg_1.jsonl")  # batched until flush
    sessions.flush()
    with open("/spiffs/sessions/tg_1.jsonl") as f:
        rows = [json.loads(x) for x in f.read().split("\n") if x]
    assert [r["role"] for r in rows] == ["user", "assistant"]
    assert rows[0]["content"] == "hello" and 1800000000 <= rows[0]["ts"] < 1800000100
    assert [set(r) for r in rows] == [{"role", "content", "ts"}] * 2  # SPEC §4 line format
    assert sessions.load("tg_1") == [
        {"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi there"}]


def test_load_includes_unflushed_messages():
    sessions.append("ws_a", "user", "q")
    sessions.append("ws_a", "assistant", "a")
    assert len(sessions.load("ws_a")) == 2


def test_last_20_messages():
    write(sessions.path("tg_2"), pairs(30))
    h = sessions.load("tg_2")
    assert len(h) == limits.HISTORY_MAX
    assert h[0] == {"role": "user", "content": "m-q20"}
    assert h[-1] == {"role": "assistant", "content": "m-a29"}


def test_tail_of_1mb_file_with_capped_heap():
    p = sessions.path("tg_big")
    fs.makedirs(sessions.DIR)
    b = (line("user", "x" * 80) + line("assistant", "y" * 80)).encode() * 10
    with open(p, "wb") as f:
        while f.tell() < 1024 * 1024:
            f.write(b)
        f.write(pairs(10, "tail").encode())
    b = None
    assert fs.size(p) > 1024 * 1024
    import gc

    gc.collect()
    before = gc.mem_alloc()
    h = sessions.load("tg_big")
    gc.collect()
    print("load kept", gc.mem_alloc() - before)
    assert len(h) == 20
    assert h[0]["content"] == "tail-q0" and h[-1]["content"] == "tail-a9"


def test_10kb_line_survives():
    big = "é" * 5000  # 10 KB of UTF-8
    write(sessions.path("tg_3"), pairs(2) + line("user", "long?") + line("assistant", big))
    h = sessions.load("tg_3")
    assert h[-1]["content"] == big
    assert len(h) == 6


def test_oversized_line_skipped_not_the_rest():
    huge = "z" * (limits.SESSION_LINE_MAX + 5000)
    write(sessions.path("tg_4"), pairs(2, "old") + line("user", huge) + line("assistant", "ok") + pairs(1, "new"))
    h = sessions.load("tg_4")
    contents = [m["content"] for m in h]
    assert "old-q0" in contents and "new-a0" in contents
    assert huge not in contents


def test_oversized_append_is_cut_to_a_loadable_line():
    sessions.append("tg_5", "user", "q")
    sessions.append("tg_5", "assistant", "w" * (limits.SESSION_LINE_MAX * 2))
    sessions.flush()
    h = sessions.load("tg_5")
    assert len(h) == 2 and h[1]["content"].startswith("www")
    assert h[1]["content"].endswith("[cut: message too long]")


def test_corrupt_middle_line_skipped():
    log.clear()
    text = pairs(2, "a") + '{"role": "user", "content": "broken\n' + "\x00\xff garbage\n" + pairs(2, "b")
    write(sessions.path("tg_6"), text)
    h = sessions.load("tg_6")
    contents = [m["content"] for m in h]
    assert contents == ["a-q0", "a-a0", "a-q1", "a-a1", "b-q0", "b-a0", "b-q1", "b-a1"]
    assert any("corrupt" in x for x in log.recent())


def test_alternation_repair():
    text = (line("assistant", "orphan reply") + line("user", "u1") + line("user", "u2") +
            line("assistant", "a1") + line("system", "nope") + line("assistant", "a2") +
            line("user", "") + line("user", "unanswered"))
    write(sessions.path("tg_7"), text)
    h = sessions.load("tg_7")
    assert h == [{"role": "user", "content": "u1\n\nu2"}, {"role": "assistant", "content": "a1\n\na2"}]


def test_repair_rules():
    r = sessions.repair
    assert r([]) == []
    assert r([{"role": "user", "content": "x"}]) == []
    assert r([{"role": "assistant", "content": "x"}]) == []
    msgs = [{"role": "user", "content": "q%d" % i} if i % 2 == 0 else {"role": "assistant", "content": "a" * 100}
            for i in range(10)]
    out = r(msgs, budget=250)
    assert out[0]["role"] == "user" and out[-1]["role"] == "assistant"
    assert len(out) == 4 and out[0]["content"] == "q6"


def test_window_starting_with_assistant_drops_it():
    write(sessions.path("tg_8"), line("user", "first") + pairs(10))
    h = sessions.load("tg_8")  # last 20 lines start at m-q0; 21 lines total
    assert h[0]["content"] == "m-q0" and len(h) == 20
    write(sessions.path("tg_9"), pairs(10) + line("user", "last q") + line("assistant", "last a"))
    h = sessions.load("tg_9")
    assert h[0]["role"] == "user" and h[-1]["content"] == "last a"
    assert len(h) == 20


def test_rotation_bounds_file_size():
    for i in range(200):
        sessions.append("tg_10", "user", "question %d %s" % (i, "q" * 300))
        sessions.append("tg_10", "assistant", "answer %d %s" % (i, "a" * 300))
        sessions.flush()
        assert fs.size(sessions.path("tg_10")) <= limits.SESSION_FILE_MAX
    h = sessions.load("tg_10")
    assert len(h) == 20 and h[-1]["content"].startswith("answer 199 ")
    assert not fs.exists(sessions.path("tg_10") + ".tmp")
    # The compacted file starts at a whole line.
    with open(sessions.path("tg_10")) as f:
        json.loads(f.readline())


def test_pending_buffer_flushes_itself():
    for i in range(40):
        sessions.append("tg_11", "user", "p" * 500)
    assert fs.size(sessions.path("tg_11")) > 0


def test_pending_bytes_follow_what_is_buffered():
    sessions.append("tg_p1", "user", "a" * 100)
    sessions.append("tg_p2", "user", "b" * 100)
    one = sessions._pending_bytes // 2
    sessions.load("tg_p1")  # flushes tg_p1 only
    assert sessions._pending_bytes == one
    sessions.clear("tg_p2")
    assert sessions._pending_bytes == 0
    sessions.append("tg_p3", "user", "c")
    sessions.flush()
    assert sessions._pending_bytes == 0 and sessions._pending == {}


def test_file_names_are_safe():
    for key in ("ws_../../config", "ws_a/b", "ws_a\\b", "ws_\x00x", "tg_" + "9" * 300, "ws_", "ws_ä"):
        name = sessions.file_name(key)
        assert name.endswith(".jsonl")
        stem = name[:-6]
        assert stem and len(stem) <= limits.SESSION_NAME_MAX
        for c in stem:
            assert c in sessions._OK, (key, name)
    assert sessions.file_name("tg_123") == "tg_123.jsonl"
    assert sessions.file_name("tg_-100123") == "tg_-100123.jsonl"
    assert sessions.file_name("ws_a/b") != sessions.file_name("ws_a_b")
    assert sessions.file_name("tg_" + "9" * 300) != sessions.file_name("tg_" + "9" * 301)
    sessions.append("ws_../../x", "user", "q")
    sessions.flush()
    assert fs.walk_files("/spiffs/sessions") == [sessions.path("ws_../../x")]
    assert not fs.exists("/spiffs/x.jsonl") and not fs.exists("/x.jsonl")


def test_clear_and_list():
    key = bus.session_key("telegram", "42")
    sessions.append(key, "user", "q")
    sessions.append(key, "assistant", "a")
    sessions.append("ws_x", "user", "q")
    sessions.append("ws_x", "assistant", "a")
    names = [k for k, n in sessions.list()]
    assert names == ["tg_42", "ws_x"]
    assert sessions.clear(key) is True
    assert sessions.load(key) == []
    assert [k for k, n in sessions.list()] == ["ws_x"]
    assert sessions.clear(key) is False
    # Clearing drops buffered messages too.
    sessions.append("ws_y", "user", "q")
    assert sessions.clear("ws_y") is True
    sessions.flush()
    assert not fs.exists(sessions.path("ws_y"))


def test_threads_append_safely():
    import _thread
    import time

    done = []

    def worker(tag):
        for i in range(30):
            sessions.append("tg_t", "user", "%s%d" % (tag, i))
            sessions.append("tg_t", "assistant", "r")
            if i % 5 == 0:
                sessions.flush()
        done.append(tag)

    _thread.start_new_thread(worker, ("a",))
    _thread.start_new_thread(worker, ("b",))
    while len(done) < 2:
        time.sleep_ms(10)
    sessions.flush()
    with open(sessions.path("tg_t")) as f:
        rows = [json.loads(x) for x in f.read().split("\n") if x]
    assert len(rows) == 120


def test_repl_session_list_and_clear():
    from support import Capture
    from mimi import repl

    for key in ("tg_123", "ws_abc", "sys_cron", "tg_-100"):
        sessions.append(key, "user", "q")
        sessions.append(key, "assistant", "a")
    sessions.flush()
    with Capture() as c:
        repl.session_list()
    for key in ("tg_123", "ws_abc", "sys_cron", "tg_-100"):
        assert key in c.text
    with Capture() as c:
        repl.session_clear(123)  # a bare Telegram id
        repl.session_clear("ws_abc")  # a full key
        repl.session_clear("-100")
        repl.session_clear("sys_cron")
        repl.session_clear("tg_999")
    assert c.text.count("OK: cleared session") == 4 and "no session tg_999" in c.text
    assert sessions.list() == []
    with Capture() as c:
        repl.session_list()
    assert "(no sessions)" in c.text
