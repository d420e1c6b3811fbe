# Crash-boots are counted in (fake) RTC memory; three in a row start safe mode,
# a healthy run clears the count, restart() leaves safe mode.
from support import raises, Capture
from mimi import safemode, limits, board


def boot():
    with Capture() as c:
        active = safemode.boot_start(reboot=False)
    return active, c.text


def test_three_crash_boots_enter_safe_mode_and_restart_leaves():
    for n in range(1, limits.SAFE_MODE_BOOTS + 1):
        active, text = boot()  # each of these crashes before HEALTHY_AFTER_S
        assert not active and "SAFE MODE" not in text, n
        assert safemode.count() == n
    active, text = boot()
    assert active and safemode.active
    assert "SAFE MODE" in text and "restart()" in text
    safemode.healthy()  # a quiet safe-mode run does not leave by itself
    assert safemode.count() == limits.SAFE_MODE_BOOTS + 1
    active, _ = boot()
    assert active
    from mimi import repl

    with Capture():
        e = raises(SystemExit, repl.restart)
    assert e.args[0] == limits.SIM_RESET_EXIT
    assert safemode.count() == 0
    active, _ = boot()
    assert not active


def test_healthy_boot_clears_the_count():
    boot()
    boot()
    safemode.healthy()
    assert safemode.count() == 0
    for _ in range(limits.SAFE_MODE_BOOTS):
        assert not boot()[0]


def test_counter_lives_in_rtc_memory_next_to_other_data():
    board.rtc_memory(b'{"other": 1}')
    boot()
    assert b'"other"' in board.rtc_memory() and safemode.count() == 1
    board.rtc_memory(b"\xff garbage")  # cold boot noise is not a crash count
    boot()
    assert safemode.count() == 1


async def test_guard_task_marks_healthy():
    import sys
    from mimi import app

    boot()
    limits.HEALTHY_AFTER_S = 0  # the module constant, shortened for this test
    await app.guard()
    assert safemode.count() == 0
    assert "mimi.safemode" not in sys.modules  # not held by the settled firmware


async def test_guard_waits_without_the_module_and_keeps_it_in_safe_mode():
    import sys
    import asyncio
    from mimi import app

    boot()
    limits.HEALTHY_AFTER_S = 1
    task = asyncio.create_task(app.guard())
    await asyncio.sleep_ms(200)
    assert "mimi.safemode" not in sys.modules  # its 3.6 KB of code not kept while it waits
    await task
    assert safemode.count() == 0
    board.rtc_memory(b'{"boots": %d}' % limits.SAFE_MODE_BOOTS)
    assert boot()[0]  # safe mode: the guard keeps the module, its state
    sys.modules["mimi.safemode"] = safemode
    task = asyncio.create_task(app.guard())
    await asyncio.sleep_ms(200)
    assert sys.modules.get("mimi.safemode") is safemode and safemode.active
    await task
    assert safemode.count() == limits.SAFE_MODE_BOOTS + 1 and sys.modules.get("mimi.safemode") is safemode


async def test_a_healthy_boot_short_of_memory_is_marked_later_not_forgotten():
    # issue 25 item 13: clearing the crash-boot count at 60 s found no room (reading the
    # RTC memory) and killed the guard task: the count stayed, and three such boots
    # started safe mode. Now it is tried again until done.
    boot()
    boot()
    limits.HEALTHY_AFTER_S = 0
    limits.HEALTHY_RETRY_S = 0
    rtc, tries = board.rtc_memory, []

    def short_of_memory(*args):
        tries.append(args)
        if len(tries) < 3:
            raise MemoryError("memory allocation failed, allocating 256 bytes")
        return rtc(*args)

    board.rtc_memory = short_of_memory
    try:
        with Capture() as c:
            from mimi import app

            await app.guard()
    finally:
        board.rtc_memory = rtc
    assert safemode.count() == 0
    assert c.text.count("no room in the heap to mark the boot healthy") == 2, c.text


def test_safe_mode_boot_runs_no_channels_and_no_agent():
    import sys
    from mimi import app
    from mimi.config import settings as config
    from mimi.agent import worker

    config.cfg.load()
    board.rtc_memory(b'{"boots": %d}' % limits.SAFE_MODE_BOOTS)  # this boot is one too many
    app._stop.set()  # the loop ends as soon as its tasks are made
    with Capture() as c:
        app.main()
    assert safemode.active and "SAFE MODE" in c.text
    assert not worker.running()
    for mod in ("mimi.channels.telegram.poller", "mimi.channels.websocket.gateway", "mimi.channels.dispatch",
                "mimi.services.cron", "mimi.services.heartbeat"):
        assert mod not in sys.modules, mod
    assert "mimi.services.wifi" in sys.modules  # the portal's code loads only when it opens


def test_a_good_version_is_confirmed_on_a_short_heap():
    # Issue 25 (item 13's update part): at 224-256 KB "confirming the update failed:
    # MemoryError" (the update code was loaded to confirm), the good version stayed
    # on trial and the next reboots rolled it back. Confirming takes no big block.
    import json
    import support
    from mimi import fs

    fs.makedirs(limits.OTA_DIR + "/prev")
    fs.write_atomic(limits.OTA_DIR + "/state.json", json.dumps(
        {"state": "trial", "version": "9.9.9", "prev": "0.1.0", "tops": ["lib/mimi"], "boots": 0}))
    boot()  # trial boot 1
    safemode.checked = True  # it showed it can do its job (update/check.py)
    ballast = support.leave_holes(4, 512)  # no free block over 512 bytes
    safemode.healthy()
    del ballast
    with open(limits.OTA_DIR + "/state.json") as f:
        assert json.load(f)["state"] == "ok"


def test_the_update_check_is_loaded_only_with_an_ota_folder():
    # without /ota the boot check has nothing to finish, count or clean: not loaded
    # (its names would stay in the qstr pool); with one it runs as before
    from mimi import fs

    calls = []
    real = safemode.update
    safemode.update = lambda fn, **kw: calls.append(fn)
    try:
        assert not fs.exists(limits.OTA_DIR)
        boot()
        assert calls == []
        fs.makedirs(limits.OTA_DIR + "/new")
        boot()
        assert calls == ["boot_check"]
    finally:
        safemode.update = real
    boot()  # the real check: the staging a reset interrupted is cleaned as before
    assert not fs.exists(limits.OTA_DIR + "/new")


async def test_a_crash_after_the_guard_dropped_the_module_is_told_right():
    import sys
    import asyncio
    from mimi import app

    app.counted = True  # app._boot_start() counted this boot, then the guard let the module go
    boot()
    limits.HEALTHY_AFTER_S = 1
    task = asyncio.create_task(app.guard())
    await asyncio.sleep_ms(100)
    from mimi import safemode as fresh  # main.py's import after a crash while the guard waits

    with Capture() as c:
        raises(SystemExit, fresh.crashed)
    assert "Boot failed (1 in a row); resetting." in c.text and fresh.count() == 1, c.text
    await task  # up HEALTHY_AFTER_S: marked healthy; a crash after that is no crash-boot
    del sys.modules["mimi.safemode"]
    from mimi import safemode as fresh

    with Capture() as c:
        raises(SystemExit, fresh.crashed)
    assert "The firmware failed after it was up; resetting." in c.text and fresh.count() == 0, c.text
    app.counted = False
