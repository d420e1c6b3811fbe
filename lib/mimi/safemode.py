# Boot guard and safe mode. Every boot counts itself in RTC memory (kept over
# resets, cleared by a power cycle); the count goes back to 0 once the app has run
# HEALTHY_AFTER_S. After SAFE_MODE_BOOTS crash-boots in a row the board starts only
# the REPL and WiFi, so a person can fix what makes it crash; restart() leaves.
import json
import mimi
from mimi import limits, log, board

active = False
boots = 0


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
    global active, boots
    d = _load()
    boots = int(d.get("boots", 0)) + 1
    d["boots"] = boots
    _store(d)
    try:
        done = mimi.run("update.boot update", "boot_check", reboot=False)
    except Exception as e:  # a broken update check must not add to the crash loop
        log.exception("safemode", "update check failed", e)
        done = None
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
    if not boots:
        boot_start()
    if active:
        print("The firmware failed in safe mode; the REPL stays (fix, then restart()).")
        return
    print("Boot failed (%d in a row); resetting." % boots)
    board.reset()


def clear():
    """Forget the crash-boots; the next boot starts normally."""
    d = _load()
    if d.pop("boots", None) is not None:
        _store(d)


def healthy():
    """The app has been up HEALTHY_AFTER_S: this boot was good. Safe mode stays
    until restart(), so a person has time to look."""
    if not active:
        clear()
    try:
        mimi.run("update.boot update", "mark_healthy")
    except MemoryError:
        raise  # guard() tries again: a good version is never rolled back for want of room
    except Exception as e:
        log.exception("safemode", "confirming the update failed", e)


async def guard():
    """Loop task: the boot counts as healthy once the loop has run long enough."""
    import asyncio

    await asyncio.sleep(limits.HEALTHY_AFTER_S)
    while True:
        try:
            healthy()
            break
        except MemoryError:  # not counted as a crash-boot, nor rolled back, for want of room
            mimi.spare(False)
            log.warning("safemode", "no room in the heap to mark the boot healthy; again in %d s",
                        limits.HEALTHY_RETRY_S)
            await asyncio.sleep(limits.HEALTHY_RETRY_S)
    import gc

    gc.collect()  # the heap a settled firmware holds, with nobody at the console yet
    log.info("safemode", "up %d s: boot marked healthy (heap in use %d)", limits.HEALTHY_AFTER_S, gc.mem_alloc())
