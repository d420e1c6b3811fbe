# Boot sequence and the runtime shape: defaults installed, settings loaded, the
# agent thread started, then one asyncio loop for everything else (its tasks:
# mimi/startup.py tasks()).
import sys
import asyncio
import mimi
from mimi import log


def boot():
    """Default files, settings, first-boot token, banner (mimi/startup.py, dropped after)."""
    mimi.run("startup", "boot")


async def run():
    global looping
    from mimi import bus
    from mimi.services import loopwatch

    bus.prepare_loop()  # before any ThreadSafeFlag waits (unix port poll bug)
    loopwatch.install()  # tasks started by a watched task are watched too
    for coro in mimi.run("startup", "tasks", stop):
        asyncio.create_task(coro)
    log.info("app", "ready")
    looping = True
    await _stop.wait()


_stop = asyncio.Event()
looping = False  # the loop runs: a REPL command may start loop tasks (an update's download)


def stop():
    """Ends the loop as Ctrl-C does (the console's Ctrl-D); the REPL stays."""
    log.info("app", "loop stopped (console Ctrl-D); REPL commands are available, restart() to boot again")
    _stop.set()


async def console(stop):
    """The serial console's task: its code (console/serial.py) loads with the first byte
    typed (at once when micropython-lib's aiorepl is installed), so a board nobody types
    at holds only this; on a short heap it goes again after a line (serial.serve()).
    Ctrl-C is console input from the start, not an interrupt."""
    import sys
    from mimi import board

    try:
        import aiorepl  # noqa: F401 - its own reader: loaded at once
    except ImportError:
        aiorepl = None
    reader = first = kbd = None
    last = 0  # the byte that ended the line before (a \n after its \r is no new line)
    if aiorepl is None:
        if board.NAME != "host":  # (on the unix port kbd_intr(-1) would unhook SIGINT)
            import micropython

            kbd = micropython.kbd_intr
            kbd(-1)
        reader = asyncio.StreamReader(sys.stdin)
    try:
        while last is not None:
            if reader is not None:
                try:
                    first = await reader.read(1)
                except UnicodeError:  # a byte that is not text: the console shows it as "?"
                    first = b"?"
                first = first.encode() if isinstance(first, str) else first
                if not first:
                    return  # stdin closed (the host without a console)
                if first == b"\n" and last == 13:
                    last = 10  # (the end of the line before: nothing to load the console for)
                    continue
            from mimi.console import serial

            mimi.drop("console")  # its package, a folder (the raw REPL and the commands bring it back for their time)
            last = await serial.task(stop, reader, first, last)
            serial = None
            mimi.drop("console.serial")
    finally:
        if kbd:
            kbd(3)


async def guard():
    """The boot guard's task (mimi/safemode.py): a version on trial takes its check, and
    the boot counts as healthy once the loop has run limits.HEALTHY_AFTER_S. It waits in
    this frame, without safemode.py (3.6 KB of .mpy), which is loaded again to mark the
    boot; safe mode keeps it (its state: no channels, no agent)."""
    import time
    from mimi import limits

    t0 = time.ticks_ms()
    sm = mimi.load("mimi.safemode")
    state, safe = (sm.trial, await sm.check()), sm.active
    sm = None
    if not safe:
        mimi.drop("safemode")
    left = limits.HEALTHY_AFTER_S * 1000 - time.ticks_diff(time.ticks_ms(), t0)
    if left > 0:
        await asyncio.sleep_ms(left)
    while True:
        try:
            mimi.run("safemode", "healthy", state)
            break
        except MemoryError:  # not counted as a crash-boot for want of room (clear()): again
            mimi.spare(False)
            log.warning("safemode", "no room in the heap to mark the boot healthy; again in %d s",
                        limits.HEALTHY_RETRY_S)
            await asyncio.sleep(limits.HEALTHY_RETRY_S)
    import gc

    gc.collect()  # the heap a settled firmware holds, with nobody at the console yet
    log.info("safemode", "up %d s: boot marked healthy (heap in use %d)", limits.HEALTHY_AFTER_S, gc.mem_alloc())


counted = False  # this boot is counted (safemode.boot_start()): a crash is not counted again


def _boot_start():
    """safemode.boot_start() -> True in safe mode; the module is not held here (the
    guard drops it while it waits)."""
    global counted
    from mimi import safemode

    counted = True
    return safemode.boot_start()


def collect_often():
    """On a small heap, a collection every limits.GC_THRESHOLD bytes allocated.
    MicroPython hands out the lowest free run, but garbage is only free after a
    collection: between two, new objects climb the heap, so the long-lived ones made
    meanwhile end up spread all over it. At 256 KB the firmware booted with 159 KB
    free in no piece over 2.5 KB and Telegram could not poll. Frequent collections
    keep them packed low and the top of the heap in one piece; a PSRAM heap is left
    alone (its collections cost more, and its holes are big anyway)."""
    import gc
    from mimi import limits

    if gc.mem_free() + gc.mem_alloc() <= limits.GC_SMALL_HEAP:
        gc.threshold(limits.GC_THRESHOLD)


def devices_off():
    """With a device file, its actuators to their off levels (mimi/devices/outputs.py),
    before anything else starts; a firmware without devices loads nothing for it."""
    from mimi import fs, limits

    if fs.exists(limits.DEVICES_PATH):
        try:
            mimi.run("devices.outputs devices.store devices.pins", "at_boot")
        except Exception as e:  # never stands between the user and the firmware
            log.exception("app", "devices at boot failed", e)


def main():
    global looping
    collect_often()
    mimi.spare()  # low in the heap, before anything else
    devices_off()
    safe = _boot_start()  # boot counter, update trial/rollback, safe mode
    boot()
    from mimi.agent import worker

    if not safe:
        worker.start()
    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        log.info("app", "loop stopped (Ctrl-C); REPL commands are available, restart() to boot again")
    finally:
        looping = False
        from mimi.services import watchdog

        watchdog.release()  # the REPL stays usable: nothing may reset it now
        asyncio.new_event_loop()
        mimi.close()  # what waits in RAM (the history's readings) to the flash
        ledger = sys.modules.get("mimi.usage.ledger")
        if ledger:  # what the usage ledger counted since its last save
            ledger.tick(True)
