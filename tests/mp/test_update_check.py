# The check a version on trial passes before it is confirmed (update/check.py, run by
# app.guard(); the agent's part agent/selftest.py in the agent thread), and what
# the boot guard does with its answer: confirmed, reset (and rolled back by the boot
# check after OTA_TRIAL_BOOTS), or, short of memory, tried again and kept.
import sys
import json
from support import Capture
from mimi import limits, fs, safemode
from mimi.config import settings as config

FS_BLOCKS = 512


def setup():
    config.cfg.load()


def on_trial():
    """A version installed and booted once: on trial."""
    fs.makedirs(limits.OTA_DIR + "/prev/lib/mimi")
    fs.write_atomic(limits.OTA_STATE, json.dumps(
        {"state": "trial", "version": "9.9.9", "prev": "0.1.0", "tops": ["lib/mimi"], "boots": 0}))
    with Capture():
        safemode.boot_start(reboot=False)
    assert safemode.trial


def state():
    try:
        with open(limits.OTA_STATE) as f:
            return json.load(f)
    except OSError:
        return None


class FakeCheck:
    """Stands in for update/check.py's run(): answers `answer` (an exception is raised)."""

    def __init__(self, answer):
        self.answer = answer
        self.runs = 0

    async def run(self):
        self.runs += 1
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


def guard_with(check):
    import sys
    import asyncio
    from mimi import app
    from mimi.update import check as real

    sys.modules["mimi.safemode"] = safemode  # this boot's state (the guard dropped it after a check)

    run, real.run = real.run, check.run
    limits.HEALTHY_AFTER_S = 0  # module constants, shortened for the test
    limits.OTA_CHECK_RETRY_S = 0
    try:
        with Capture() as c:
            try:
                asyncio.run(app.guard())
                code = None
            except SystemExit as e:
                code = e.args[0]
    finally:
        real.run = run
    return code, c.text


def test_a_version_that_fails_its_check_resets_and_is_rolled_back():
    on_trial()
    check = FakeCheck("the update code: mimi.update.ota does not load (ImportError: broken)")
    code, text = guard_with(check)
    assert code == limits.SIM_RESET_EXIT and "failed its check" in text, text
    assert state()["state"] == "trial" and not safemode.checked
    with Capture():
        safemode.boot_start(reboot=False)  # trial boot 2: fails again
    code, text = guard_with(check)
    assert code == limits.SIM_RESET_EXIT
    with Capture() as c:
        safemode.boot_start(reboot=False)  # boot 3: the previous version comes back
    assert "restoring 0.1.0" in c.text and state() is None, c.text


def test_no_room_for_the_check_is_not_held_against_a_version():
    # Issue 25: a good version that cannot be confirmed for lack of memory must not be
    # rolled back: the check is tried again, then the version is kept.
    on_trial()
    check = FakeCheck(MemoryError("memory allocation failed, allocating 4097 bytes"))
    code, text = guard_with(check)
    assert code is None, text
    assert check.runs == limits.OTA_CHECK_TRIES
    assert state()["state"] == "ok"


def test_a_version_that_passes_is_confirmed():
    on_trial()
    code, _ = guard_with(FakeCheck(None))
    assert code is None and safemode.checked and state()["state"] == "ok"
    assert not fs.exists(limits.OTA_CONFIRM)


def test_no_check_without_a_trial():
    with Capture():
        safemode.boot_start(reboot=False)
    check = FakeCheck("never asked")
    code, _ = guard_with(check)
    assert code is None and check.runs == 0 and state() is None


def _check_with_the_agent_running():
    """The trial's check (update/check.py run()) with the agent thread and the WebSocket
    channel running, as on a booted board; it must find nothing wrong."""
    import asyncio
    from mimi.agent import worker
    from mimi.channels import dispatch

    dispatch._started.append("websocket")
    assert worker.start()
    try:
        from mimi.update import check

        why = asyncio.run(check.run())
    finally:
        worker.stop()
    assert why is None, why


def test_the_real_check_passes_and_leaves_nothing_loaded():
    import asyncio  # noqa: F401 - loaded before the count, as the helper loads them
    from mimi.agent import worker  # noqa: F401
    from mimi.channels import dispatch  # noqa: F401
    from mimi.channels.websocket import gateway  # noqa: F401 - a running channel

    before = set(sys.modules)
    _check_with_the_agent_running()
    left = sorted(m for m in sys.modules if m not in before)
    # what this test imported, and what the firmware holds anyway (cron, the watchdog,
    # the console's package, the network package, which the gateway's start loads at
    # boot; the JSON and UTF-8 helpers, which the settings' read lets go at boot and any
    # turn loads and keeps)
    assert left == ["mimi.console", "mimi.jsonutil", "mimi.net", "mimi.services", "mimi.services.cron",
                    "mimi.services.watchdog", "mimi.update", "mimi.update.check", "mimi.utf8"], left
    assert worker.check is None


def test_the_agents_part_fails_when_a_turn_cannot_be_built():
    import asyncio
    from mimi.agent import worker
    from mimi.update import check

    # this version's agent package, but its ReAct loop raises at import
    pkg = sys.modules["mimi.agent"]
    fs.makedirs("/agent")
    for name in ("context", "selftest"):
        with open("%s/%s.mpy" % (pkg.__path__, name), "rb") as f, open("/agent/%s.mpy" % name, "wb") as g:
            g.write(f.read())
    with open("/agent/react.py", "w") as f:
        f.write("raise ImportError('this react.py is broken')\n")
    real = pkg.__path__
    pkg.__path__ = "/agent"
    assert worker.start()
    try:
        why = asyncio.run(check._agent())
    finally:
        worker.stop()
        pkg.__path__ = real
    assert why == "the agent: ImportError: this react.py is broken", why


def test_the_check_with_devices_keeps_their_state():
    # The agent's part builds the prompt's ## Devices part and loads every tool's code,
    # the device tools' included, then drops what it loaded: never devices/state.py,
    # which holds what must last (an actuator's value, a button's presses).
    from mimi import app, board
    from mimi.tools.registry import registry

    fs.write_atomic(limits.DEVICES_PATH, json.dumps({"devices": [{"name": "lamp", "type": "relay", "pin": 21}]}))
    config.cfg.set("gpio_allow", "21")
    app.devices_off()  # the boot pass: the table checked and kept in devices/state.py
    assert registry.call("device_set", {"name": "lamp", "value": "on"}) == "OK: lamp = on"
    state = sys.modules["mimi.devices.state"]
    _check_with_the_agent_running()
    assert sys.modules["mimi.devices.state"] is state
    assert board.SIM_PINS[21]["level"] == 1
    assert registry.call("device_read", {"name": "lamp"}) == "lamp = on"


def test_a_running_channels_package_let_go_at_boot_is_listed_all_the_same():
    # dispatch.start() drops a channel's package (only a folder) once its module is loaded;
    # the check still lists and loads each of the channel's modules, then lets it go again
    from mimi import channels
    from mimi.channels import dispatch
    from mimi.update import check

    watched = dispatch.start(channels.find("websocket"))  # as at boot (its task not run here)
    try:
        assert "mimi.channels.websocket.gateway" in sys.modules
        assert "mimi.channels.websocket" not in sys.modules
        got = check._channels()
        assert got == [("mimi.channels.websocket", ["chatpage", "connection", "gateway", "incoming", "start",
                                                    "upgrade"])], got
        assert "mimi.channels.websocket" not in sys.modules
    finally:
        del watched
        dispatch._started.remove("websocket")
        dispatch._lanes.pop("websocket", None)
