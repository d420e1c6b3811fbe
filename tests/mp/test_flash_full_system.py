# A full flash at boot, for the settings and for cron (issue 16 item 6): boot goes
# on, what cannot be saved is said in words, nothing half-written stays.
from support import Capture, read, write
from test_flash_full import fill, tmp_files
from mimi import repl
from mimi.config import settings as config
from mimi.config.settings import cfg

FS_BLOCKS = 160
# A /config.json too big to live inside its folder's metadata (files up to the
# mount's 512-byte cache do, limits.FS_READ_SIZE), as a configured board's is: saving
# it needs a free block.
BIG = {"api_base": "https://" + "a" * 150 + ".example.com", "model": "m" * 90, "tavily_key": "t" * 120,
       "search_key": "s" * 120, "proxy_user": "u" * 90}


def setup():
    cfg.load()


def boot():
    from mimi import app

    with Capture() as c:
        app.boot()
    return c.text


def test_first_boot_on_a_full_flash_keeps_the_gateway_locked():
    cfg.update(BIG)
    fill()
    text = boot()
    token = cfg.get("ws_token")
    assert token and "ws_token = " + token in text, text
    assert "NOT saved (the flash is full)" in text and "(auth on)" in text, text
    assert not config.Config().load().is_set("ws_token")
    assert cfg.get("model") == BIG["model"] and tmp_files() == []
    cfg.load()  # read again (as simboot's --set and the boot do): the unsaved token stays
    assert cfg.get("ws_token") == token


def test_config_set_on_a_full_flash_says_so_and_changes_nothing():
    cfg.update(BIG)
    fill()
    with Capture() as c:
        repl.config_set("model", "other")
        repl.set_proxy("10.0.0.1", 8080)
    lines = c.text.strip().split("\n")
    assert len(lines) == 2 and all(x == "Error: not saved (the flash is full); nothing changed" for x in lines), c.text
    assert cfg.get("model") == BIG["model"] and cfg.get("proxy_port") == 0
    assert config.Config().load().get("model") == BIG["model"] and tmp_files() == []


def test_unfinished_writes_are_removed_at_boot():
    write("/spiffs/memory/MEMORY.md", "kept")
    write("/spiffs/memory/MEMORY.md.tmp", "half of a new vers")
    write("/config.json.tmp", '{"mod')
    write("/spiffs/sessions/tg_42.jsonl.tmp", "x")
    text = boot()
    assert tmp_files() == [] and read("/spiffs/memory/MEMORY.md") == "kept"
    assert "removed /config.json.tmp" in text and "removed /spiffs/memory/MEMORY.md.tmp" in text


def test_cron_add_on_a_full_flash_is_an_error_not_ok():
    from mimi.tools.registry import registry
    import mimi.tools.cron  # noqa: F401 - registers the tools
    from mimi.services.cron import service

    add = {"schedule_type": "every", "interval_s": 3600, "message": "water the plants " * 8}
    for i in range(3):  # a cron.json too big to be inline
        assert registry.call("cron_add", dict(add, name="j%d" % i)).startswith("OK:")
    fill()
    r = registry.call("cron_add", dict(add, name="lost"))
    assert r == "Error: not saved (the flash is full); the job was not added", r
    first = service.list()[0]["id"]
    r = registry.call("cron_remove", {"job_id": first})
    assert r.startswith("Error:") and "not saved (the flash is full); the job stays" in r, r
    assert [j["name"] for j in service.list()] == ["j0", "j1", "j2"]
    service.loaded = False  # what a reboot reads
    assert [j["name"] for j in service.list()] == ["j0", "j1", "j2"] and tmp_files() == []


def test_heap_info_on_a_full_flash_never_wraps():
    # issue 16: heap_info() showed 17,592,185,880,576 bytes free on a full flash
    fill()
    with Capture() as c:
        repl.heap_info()
    line = [x for x in c.text.split("\n") if x.startswith("flash")][0]
    free, total = [int(w) for w in line.split() if w.isdigit()]
    assert 0 <= free <= 2 * 4096 and total == FS_BLOCKS * 4096, line
