# MEMORY.md and daily notes: local dates, one path function, recent notes joined
# newest first within the cap.
from support import write, read
from mimi import limits, fs, board
from mimi.config import settings as config
from mimi.memory import store

NOW = 1764676800  # 2025-12-02 12:00:00 UTC


def setup():
    board.set_unix(NOW)


def test_memory_read_write_atomic():
    assert store.read_memory() == ""
    store.write_memory("# Long-term Memory\n\n- User: Ada\n")
    assert store.read_memory() == "# Long-term Memory\n\n- User: Ada\n"
    assert read("/spiffs/memory/MEMORY.md").endswith("Ada\n")
    assert not fs.exists("/spiffs/memory/MEMORY.md.tmp")
    store.write_memory("é" * 5000)
    m = store.read_memory()
    assert len(m.encode()) <= limits.MEMORY_MAX and m == "é" * (limits.MEMORY_MAX // 2)


def test_note_path_uses_local_date():
    assert store.note_path() == "/spiffs/memory/2025-12-02.md"
    config.cfg.set("tz", "+14:00")
    assert store.note_path() == "/spiffs/memory/2025-12-03.md"
    config.cfg.set("tz", "-12:30")
    assert store.note_path() == "/spiffs/memory/2025-12-01.md"
    assert store.note_dates() == ["2025-12-01", "2025-11-30", "2025-11-29"]
    assert store.note_path("2024-02-29") == "/spiffs/memory/2024-02-29.md"


def test_append_note_creates_with_header():
    p = store.append_note("- first")
    store.append_note("- second\n")
    assert p == store.note_path()
    assert read(p) == "# 2025-12-02\n\n- first\n- second\n"


def test_recent_notes_newest_first_three_days():
    write(store.note_path("2025-12-02"), "today stuff")
    write(store.note_path("2025-12-01"), "yesterday stuff")
    write(store.note_path("2025-11-30"), "two days ago")
    write(store.note_path("2025-11-29"), "too old")
    r = store.recent_notes()
    assert "too old" not in r
    assert r.find("today stuff") < r.find("yesterday stuff") < r.find("two days ago")
    assert "2025-12-01 (/spiffs/memory/2025-12-01.md)" in r
    assert r.count(store.NOTE_SEP) == 2


def test_recent_notes_missing_days_and_empty():
    assert store.recent_notes() == ""
    write(store.note_path("2025-11-30"), "only this")
    r = store.recent_notes()
    assert r.startswith("2025-11-30 (") and "only this" in r and store.NOTE_SEP not in r


def test_recent_notes_capped():
    for d in store.note_dates():
        write(store.note_path(d), "ü" * 3000)
    r = store.recent_notes()
    assert len(r.encode()) <= limits.NOTES_MAX
    assert "[cut: /spiffs/memory/" in r
    assert "\ufffd" not in r  # never cut inside a character


def test_repl_memory_read_write():
    from support import Capture
    from mimi import repl

    with Capture() as c:
        repl.memory_read()
    assert "does not exist" in c.text
    with Capture() as c:
        r = repl.memory_write("- User: Grace\n")
    assert r is None and "OK: wrote 14 bytes to /spiffs/memory/MEMORY.md" in c.text
    with Capture() as c:
        repl.memory_read()
    assert c.text == "- User: Grace\n\n"
    from mimi.console import commands as replcmds

    assert "memory_read" in repl.__all__ and any(u[0] == "memory_read()" for u in replcmds.USAGE)


def test_default_files():
    import support

    src = support.REPO + "/spiffs_data"
    from mimi.services import hbcheck

    with open(src + "/HEARTBEAT.md") as f:
        hb = f.read()
    assert hbcheck.open_tasks(hb) == []  # shipped: no task, so no LLM call
    assert "- [ ]" in hb  # it shows how to add a task
    assert "HTML comment" in hb and "<!--" in hb  # and says comments are ignored
    for rel in ("/config/SOUL.md", "/config/USER.md", "/memory/MEMORY.md"):
        with open(src + rel) as f:
            text = f.read()
        assert 20 < len(text) < 2048, rel
    with open(src + "/config/SOUL.md") as f:
        assert "MimiClaw" in f.read()
