# The boot sequence (mimi.app.boot, mimi/startup.py): defaults installed without touching user edits,
# settings loaded, the status banner.
from support import write, read, Capture

HEAP = {"test_a_small_heap_is_collected_often": "256k", "test_a_psram_sized_heap_is_left_alone": "1024k"}


def boot():
    from mimi import app

    with Capture() as c:
        app.boot()
    return c.text


def test_user_edited_default_files_survive_a_second_boot():
    write("/defaults/config/SOUL.md", "shipped soul")
    write("/defaults/memory/MEMORY.md", "shipped memory")
    first = boot()
    assert read("/spiffs/config/SOUL.md") == "shipped soul"
    assert "ws_token =" in first  # made at first boot, shown once
    write("/spiffs/config/SOUL.md", "my own soul")  # the user (or the agent) edits it
    second = boot()
    assert read("/spiffs/config/SOUL.md") == "my own soul"
    assert read("/spiffs/memory/MEMORY.md") == "shipped memory"
    assert "ws_token =" not in second


def test_banner_names_the_default_model_and_the_gateway():
    from mimi.config.settings import cfg
    from mimi.config.settings import DEFAULT_MODEL

    text = boot()
    assert "model %s (default)" % DEFAULT_MODEL["anthropic"] in text, text
    assert "ws://127.0.0.1:18789/" in text and "(auth on)" in text
    cfg.update({"provider": "openai", "model": "", "ws_port": 0})
    text = boot()
    assert "provider openai, model %s (default)" % DEFAULT_MODEL["openai"] in text, text
    assert ":0/" not in text and "chosen at start" in text, text
    cfg.set("model", "llama3")
    assert "model llama3\n" in boot()


def test_banner_before_wifi_is_up():
    from mimi import startup, board

    board.wlan().active(False)
    try:
        assert "ws://<board IP once WiFi is up>:18789/" == startup.gateway_url()
    finally:
        board.wlan().active(True)


def test_boot_steps_leave_no_module_behind():
    import sys

    boot()
    for m in ("mimi.startup", "mimi.config.defaults"):
        assert m not in sys.modules, m


def test_a_small_heap_is_collected_often():
    # without it the long-lived objects of a boot end up spread over a board-sized heap
    # (tests/host/test_board_heap_e2e.py is the whole firmware's proof)
    import gc
    from mimi import app, limits

    gc.threshold(-1)
    app.collect_often()
    assert gc.threshold() == limits.GC_THRESHOLD


def test_a_psram_sized_heap_is_left_alone():
    import gc
    from mimi import app

    gc.threshold(-1)
    app.collect_often()
    assert gc.threshold() == -1
