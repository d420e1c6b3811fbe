# The check a version on trial passes before it is confirmed (safemode.check(), by app.guard(), runs
# it once the loop is up), as ESP-IDF asks an app to validate itself before
# esp_ota_mark_app_valid_cancel_rollback(). The loop running 60 s shows little: a
# version whose ReAct loop did not import answered every message "Sorry", one whose
# update code did not load could be neither updated nor rolled back again. It must show
#   - the update path loads: what ota_update(), ota_status(), ota_rollback() and
#     make deploy run (update/staging.py, ota.py, download.py, boot.py), and the REPL's
#     commands with the settings' rules (how a person fixes the board);
#   - every module of each running channel's package loads (a reply's code, say, is
#     loaded only when one goes out);
#   - the agent thread builds a turn's prompt and LLM request and reads a canned answer
#     (agent/selftest.py; no network).
# Each part is loaded for the check and dropped after. run() -> None when all of it
# worked, else why not; MemoryError when the heap had no room to tell.
import sys
import mimi
from mimi import limits

UPDATE = (("mimi.update", ()),
          ("mimi.update.boot", ("boot_check", "rollback", "ota_status", "ota_rollback")),
          ("mimi.update.download", ("get", "start")),
          ("mimi.update.ota", ("download", "verify", "install", "ota_update", "ota_firmware")),
          ("mimi.update.staging", ("begin_deploy", "finish_deploy")))
# the REPL's commands and the settings' rules: how a person fixes the board
REPL = (("mimi.console.commands", ("config_set", "config_show", "set_wifi", "restart")),
        ("mimi.config.rules", ()))


async def trial():
    """The check of a version on trial, as safemode.check() runs it: -> True to confirm
    it; a version that fails is logged and the board reset (the boot check rolls it
    back after OTA_TRIAL_BOOTS such boots). No room in the heap to finish the check is
    tried again, then not held against the version."""
    import asyncio
    from mimi import log, board

    for n in range(limits.OTA_CHECK_TRIES):
        try:
            why = await run()
        except MemoryError as e:
            log.warning("ota", "version %s: no room in the heap to finish its check (%s; try %d of %d)",
                        mimi.VERSION, e, n + 1, limits.OTA_CHECK_TRIES)
            await asyncio.sleep(limits.OTA_CHECK_RETRY_S)
            continue
        if why is None:
            return True
        log.error("ota", "version %s cannot do its job: %s", mimi.VERSION, why)
        print("OTA: version %s failed its check; resetting (after %d failed boots the previous "
              "version comes back)." % (mimi.VERSION, limits.OTA_TRIAL_BOOTS))
        board.reset()
        return False
    log.warning("ota", "version %s kept on what its check could show (the heap had no room for "
                "the rest)", mimi.VERSION)
    return True


async def run():
    import asyncio

    why = _load(UPDATE)
    if why:
        return "the update code: " + why
    why = _load(REPL)
    if why:
        return "the REPL: " + why
    for pkg, names in _channels():
        await asyncio.sleep_ms(0)  # imports hold the loop: one package at a time
        why = _load([(pkg, ())] + [(pkg + "." + n, ()) for n in names])
        if why:
            return "channel %s: %s" % (pkg.rpartition(".")[2], why)
    return await _agent()


# what those modules load on the way that a settled firmware does not hold (stateless)
DROP = ("mimi.update", "mimi.channels.", "mimi.net.", "mimi.console.commands", "mimi.config.rules",
        "mimi.devices.pins")


def _load(mods):
    """Import each (module, names it must have) -> why one failed (None: all did);
    what was not loaded before is dropped again."""
    before = set(sys.modules)
    try:
        for m, names in mods:
            try:
                __import__(m)
            except MemoryError:
                raise
            except Exception as e:
                return "%s does not load (%s: %s)" % (m, type(e).__name__, e)
            for n in names:
                if not hasattr(sys.modules[m], n):
                    return "%s has no %s()" % (m, n)
        return None
    finally:
        for m in [m for m in sys.modules if m not in before and m.startswith(DROP)]:
            mimi.unload(m)


def _channels():
    """[(package, module names)] of the running channels that have a package of their
    own under mimi.channels (a frozen firmware, whose folders cannot be listed: the
    channel's running module only)."""
    import os

    dispatch = sys.modules.get("mimi.channels.dispatch")
    out = []
    for name in dispatch._started if dispatch else ():
        from mimi import channels

        row = channels.find(name)
        pkg = row.module.rpartition(".")[0] if row and row.module else ""
        if not pkg.startswith("mimi.channels."):
            continue
        had = pkg in sys.modules  # (dispatch lets a running channel's package go once its module is loaded)
        try:
            files = os.listdir(__import__(pkg, None, None, ("",)).__path__)
        except (ImportError, OSError, AttributeError):
            files = ()
        if not had:
            mimi.unload(pkg)
        names = []
        for f in files:
            n, dot, ext = f.rpartition(".")
            if dot and ext in ("py", "mpy") and n != "__init__" and n not in names:
                names.append(n)
        out.append((pkg, sorted(names)))
    return out


async def _agent():
    """The agent thread's part (worker.check) -> its answer; MemoryError when it had
    no room."""
    import time
    import asyncio
    from mimi.agent import worker

    if not worker.running():
        return "the agent thread is not running"
    worker.check = worker.ASKED
    t0 = time.ticks_ms()
    while worker.check is worker.ASKED:
        if time.ticks_diff(time.ticks_ms(), t0) > limits.OTA_CHECK_AGENT_S * 1000:
            return "the agent thread did not do its part within %d s" % limits.OTA_CHECK_AGENT_S
        await asyncio.sleep_ms(100)
    why, memory = worker.check
    worker.check = None
    if memory:
        raise MemoryError("the agent's part: " + why)
    return "the agent: " + why if why else None
