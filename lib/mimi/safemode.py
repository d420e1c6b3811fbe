# Boot guard and safe mode. Every boot counts itself in RTC memory (kept over
# resets, cleared by a power cycle); the count goes back to 0 once the app has run
# HEALTHY_AFTER_S. After SAFE_MODE_BOOTS crash-boots in a row the board starts only
# the REPL and WiFi, so a person can fix what makes it crash; restart() leaves.
# An update on trial (update/boot.py) is confirmed only once it passed its check
# (update/check.py: it can do its job, not only run); one that fails the check resets,
# and after OTA_TRIAL_BOOTS such boots the boot check puts the previous version back.
# The boot guard's task (app.guard()) waits without this module: loaded again, its state
# is a normal boot's (safe mode keeps it loaded), and the guard hands back the trial's.
import json
import mimi
from mimi import limits, log, board, fs

active = False
boots = 0
trial = False  # this boot runs a version on trial
checked = False  # ... which passed its check


def _load():
    try:
        d = json.loads(board.rtc_memory() or b"{}")
        return d if isinstance(d, dict) else {}
    except (ValueError, OSError, TypeError):
        return {}


def _store(d):
    try:
        board.rtc_memory(json.dumps(d).encode())
    except (OSError, ValueError) as e:
        log.warning("safemode", "cannot keep the boot counter: %s", e)


def count():
    """Boots since the app last came up healthy (this one included, once started)."""
    return int(_load().get("boots", 0))


def boot_start(reboot=True):
    """First thing at boot: count this boot, let a trial update roll back, and
    decide safe mode. Returns True in safe mode."""
    global active, boots, trial
    d = _load()
    boots = int(d.get("boots", 0)) + 1
    d["boots"] = boots
    _store(d)
    try:  # (no /ota: nothing to finish or count, and the update code is not loaded for it)
        done = update("boot_check", reboot=False) if fs.exists(limits.OTA_DIR) else None
    except Exception as e:  # a broken update check must not add to the crash loop
        log.exception("safemode", "update check failed", e)
        done = None
    trial = done == "trial"
    if done in ("swapped", "rolled back"):
        # Other files are in place now: their boots count from 0 (a rolled-back
        # version must not start in safe mode for the new one's crashes).
        d["boots"] = boots = 0
        _store(d)
        if reboot:  # the modules in RAM are the other version's
            board.reset()
    active = boots > limits.SAFE_MODE_BOOTS
    if active:
        print("!" * 60)
        print("SAFE MODE: the last %d boots crashed before running %d s." % (
            boots - 1, limits.HEALTHY_AFTER_S))
        print("Only the REPL and WiFi run (no channels, no agent). Fix the cause")
        print("(config_show(), log_tail(), ota_rollback(), config_set(...)), then restart().")
        print("!" * 60)
    return active


def crashed():
    """main.py caught a crash at boot (the app failed while importing or
    starting). Count it if the app got no further than its imports, so a trial
    update rolls back (boot_start resets then), and reset to try again. In safe
    mode the REPL is all that is left: no reset, no loop."""
    import sys

    if not boots and not getattr(sys.modules.get("mimi.app"), "counted", False):
        boot_start()  # (counted: this boot was, then this module dropped by the guard)
    if active:
        print("The firmware failed in safe mode; the REPL stays (fix, then restart()).")
        return
    n = boots or count()  # 0: this boot was marked healthy before it failed
    print("Boot failed (%d in a row); resetting." % n if n else "The firmware failed after it was up; resetting.")
    board.reset()


def clear():
    """Forget the crash-boots; the next boot starts normally."""
    d = _load()
    if d.pop("boots", None) is not None:
        _store(d)


def healthy(state=None):
    """The app has been up HEALTHY_AFTER_S: this boot was good (a version on trial
    only once it passed its check: check()). Safe mode stays until restart(), so a
    person has time to look. state: (trial, checked) as check() left them, when the
    guard loaded this module again."""
    on_trial, passed = state or (trial, checked)
    if on_trial:
        if passed and not active:
            confirm()
    else:
        _firmware_valid()
    if not active:
        clear()


def confirm():
    """Keep the version on trial: its confirmed state, written by its boot check,
    renamed into place. No module to load, nothing big to allocate: a good version
    is never left unconfirmed (and rolled back by later boots) for want of memory."""
    import os
    import gc

    for _ in range(3):
        try:
            os.rename(limits.OTA_CONFIRM, limits.OTA_STATE)
            log.info("ota", "version %s confirmed", mimi.VERSION)
            break
        except MemoryError:
            gc.collect()
        except OSError as e:
            if e.args[0] != 2:  # ENOENT: nothing on trial (confirmed already)
                log.error("ota", "confirming: %s", e)
            break
    _firmware_valid()


def _firmware_valid():
    """The firmware slot this boot runs is kept (esp_ota_mark_app_valid_cancel_rollback)."""
    try:
        board.firmware_valid()
    except (OSError, AttributeError, MemoryError):
        pass  # no rollback support in this firmware build (or no room to ask now: next boot)


def update(fn, *args, **kw):
    """update/boot.py's fn (the boot check, ota_status, ota_rollback), loaded for the
    call and dropped after. When this version's copy does not load (a broken update),
    the copy of the version kept in /ota/prev runs: the way back never depends on the
    new version's update code."""
    import sys

    new = [m for m in ("mimi.update.boot", "mimi.update.ota", "mimi.update") if m not in sys.modules]
    try:
        try:
            __import__("mimi.update.boot")
            mod = sys.modules["mimi.update.boot"]
        except MemoryError:
            raise
        except Exception as e:
            log.error("ota", "update code does not load (%r): the previous version's runs", e)
            mod = _previous(fn)
        return getattr(mod, fn)(*args, **kw)
    finally:
        for m in new:
            mimi.unload(m)
        if new:
            import gc

            gc.collect()


def _previous(fn):
    """The module of the version kept in /ota/prev that has fn: its update/boot.py (or
    the ota.py of a version from before the way back moved there)."""
    import sys

    pkg = sys.modules.get("mimi.update")
    if pkg is None:
        raise ImportError("no mimi.update package")
    here = pkg.__path__
    pkg.__path__ = limits.OTA_DIR + "/prev/lib/mimi/update"
    try:
        for name in ("mimi.update.boot", "mimi.update.ota"):
            __import__(name)
            mod = sys.modules[name]
            if hasattr(mod, fn):
                return mod
        raise ImportError("the previous version has no %s" % fn)
    finally:
        pkg.__path__ = here


async def check():
    """A version on trial takes its check (update/check.py trial(), which resets when it
    fails) -> whether it passed (the boot guard's first step, app.guard())."""
    global checked
    if trial and not active:
        try:
            checked = await mimi.run("update.check update", "trial")
        except Exception as e:  # the check does not load: this version's (no room: not)
            checked = isinstance(e, MemoryError)
            if not checked:
                log.error("ota", "version %s: its check does not load: %s", mimi.VERSION, e)
                board.reset()
    return checked
