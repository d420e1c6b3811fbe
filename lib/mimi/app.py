# Boot sequence and the runtime shape: defaults installed, settings loaded, the
# agent thread started, then one asyncio loop for everything else.
import asyncio
import mimi
from mimi import log, config, defaults, board

cfg = config.cfg


def ensure_ws_token():
    """First boot: make the gateway token and show it once on the console."""
    if cfg.is_set("ws_token"):
        return None
    from mimi.net import random_id

    token = random_id(12)
    cfg.set("ws_token", token)
    print("WebSocket gateway token (also in config_show(); shown in full only now):")
    print("    ws_token =", token)
    return token


def boot():
    try:
        defaults.install()
    except OSError as e:
        log.error("boot", "installing default files failed: %s", e)
    cfg.load()
    ensure_ws_token()
    banner()
    for m in cfg.missing():
        log.warning("boot", m)


def gateway_url():
    """Where the WebSocket gateway will listen, as far as it is known before it starts."""
    port = cfg.get("ws_port")
    w = board.wlan()
    host = w.ifconfig()[0] if w.isconnected() else "<board IP once WiFi is up>"
    if not port:  # ws_port 0: a free port, picked when the gateway starts
        return "ws://%s:<free port chosen at start, see 'gateway listening'>/" % host
    return "ws://%s:%d/" % (host, port)


def banner():
    h = board.heap()
    f = board.fs_info()
    provider = cfg.get("provider")
    model = cfg.get("model") or "%s (default)" % config.DEFAULT_MODEL[provider]
    print("=" * 60)
    print("MimiClaw %s on %s (id %s)" % (mimi.VERSION, board.NAME, board.unique_id()))
    print("  provider %s, model %s" % (provider, model))
    print("  gateway %s  (auth %s)" % (gateway_url(), "on" if cfg.get("ws_token") else "OFF"))
    print("  heap free %d (largest block %d), flash free %d of %d" % (
        h["free"], h["largest"], f["free"], f["total"]))
    if "internal_free" in h:  # the board: WiFi and TLS live in internal RAM
        print("  internal RAM free %d (largest %d)%s" % (h["internal_free"], h["internal_largest"],
              ", PSRAM free %d" % h["psram_free"] if "psram_free" in h else ", no PSRAM"))
    print("  REPL: help() lists the commands")
    print("=" * 60)


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
