# Boot sequence and the runtime shape: defaults installed, settings loaded, the
# agent thread started, then one asyncio loop for everything else.
import asyncio
import mimi
from mimi import log, board


def boot():
    """Default files, settings, first-boot token, banner (mimi/startup.py, dropped after)."""
    mimi.run("startup", "boot")


def tasks():
    """The loop's long-running tasks. Imported here, not at the top, so safe mode
    never loads the channels or the agent's modules."""
    from mimi import safemode

    if safemode.active:  # crash loop: only WiFi (+ onboarding) and the REPL
        return safemode.tasks(stop)
    from mimi.services import wifi, loopwatch

    w = loopwatch.watch  # each task's steps timed: "W loop: stalled 850 ms in telegram"
    ts = [w("wifi", wifi.supervisor.run())]
    ts += safemode.guard_tasks()  # healthy-boot timer, watchdog, onboarding portal, stall heartbeat
    from mimi import channels
    from mimi.channels import dispatch

    ts.append(w("dispatch", dispatch.run()))
    ts += channels.tasks()  # the configured channels (each watched), senders registered
    from mimi.services import ntp, cron

    ts.append(w("ntp", ntp.run()))
    ts.append(w("cron", cron.task()))
    if board.CONSOLE:
        from mimi import console

        ts.append(w("console", console.task(stop), quiet=True))  # holds the loop for mpremote
    return ts


async def run():
    from mimi import bus
    from mimi.services import loopwatch

    bus.prepare_loop()  # before any ThreadSafeFlag waits (unix port poll bug)
    loopwatch.install()  # tasks started by a watched task are watched too
    for coro in tasks():
        asyncio.create_task(coro)
    log.info("app", "ready")
    await _stop.wait()


_stop = asyncio.Event()


def stop():
    """Ends the loop as Ctrl-C does (the console's Ctrl-D); the REPL stays."""
    log.info("app", "loop stopped (console Ctrl-D); REPL commands are available, restart() to boot again")
    _stop.set()


def main():
    from mimi import safemode

    safemode.boot_start()  # boot counter, update trial/rollback, safe mode
    boot()
    from mimi.agent import worker

    if not safemode.active:
        worker.start()
    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        log.info("app", "loop stopped (Ctrl-C); REPL commands are available, restart() to boot again")
    finally:
        from mimi.services import watchdog

        watchdog.release()  # the REPL stays usable: nothing may reset it now
        asyncio.new_event_loop()
