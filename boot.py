# Runs first on every boot, before main.py. Kept tiny on purpose: an error here
# would stand between the user and the REPL.
import sys

if sys.platform == "esp32":
    import machine

    try:  # the flash's LittleFS with the firmware's cache, before anything writes
        import flashbdev
        from mimi import drop, flashmount

        flashmount.remount("/", flashbdev.bdev)
        drop("flashmount")
        del flashbdev, flashmount, drop  # (boot.py's names are the REPL's)
    except Exception as e:
        sys.print_exception(e)
    try:  # an exception in boot.py would skip main.py (pyexec returns 0)
        machine.freq(240000000)
    except ValueError as e:
        sys.print_exception(e)
    if machine.reset_cause() == machine.SOFT_RESET:
        # Ctrl-D / mpremote soft reset: every machine.Timer stopped, but the watchdog
        # the firmware armed cannot be (esp_task_wdt), and the raw REPL skips main.py.
        # Feed it until the firmware's watchdog task takes over (services/watchdog.py).
        try:
            from mimi import limits

            _wdt = machine.WDT(timeout=limits.WDT_TIMEOUT_MS)
            machine.Timer(0).init(period=limits.WDT_FEED_S * 1000, callback=lambda t: _wdt.feed())
        except Exception as e:  # never stand between the user and the REPL
            sys.print_exception(e)
