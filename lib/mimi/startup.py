# The one-shot steps of a boot, run by app.main() and dropped after: the default
# files installed, the *.tmp files a reset left behind removed, the settings loaded,
# the gateway token made on the first boot, the banner; and the loop's task list. A full flash stops none of
# them: what cannot be saved is said.
import mimi
from mimi import log, board, fs
from mimi.config import settings as config

cfg = config.cfg


def boot():
    try:
        mimi.run("config.defaults", "install")
    except OSError as e:
        log.error("boot", "installing default files failed: %s", fs.why(e))
    clean_tmp()
    cfg.load()
    ensure_ws_token()
    banner()
    for m in cfg.missing():
        log.warning("boot", m)


def clean_tmp():
    """Remove the temporary files of atomic writes (fs.write_atomic) that a reset or
    a power cut interrupted: nothing else names a file *.tmp (the file tools refuse it)."""
    for path, is_dir, _ in fs.entries("/"):
        if not is_dir and path.endswith(".tmp"):
            fs.remove(path)
            log.info("boot", "removed %s (an unfinished write)", path)


def ensure_ws_token():
    """First boot: make the gateway token and show it once on the console."""
    if cfg.is_set("ws_token"):
        return None
    from mimi.net import random_id

    token = random_id(12)
    try:
        cfg.set("ws_token", token)
        saved = ""
    except OSError as e:
        cfg.hold({"ws_token": token})  # auth stays on for this boot
        saved = "; NOT saved (%s): a new one is made at the next boot" % fs.why(e)
    print("WebSocket gateway token (also in config_show(); shown in full only now%s):" % saved)
    print("    ws_token =", token)
    return token


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


def tasks(stop):
    """The loop's long-running tasks (add yours here), each watched by the stall
    detector. Safe mode (a crash loop) runs WiFi with its onboarding portal and the
    REPL only: no channels, no agent."""
    from mimi import safemode, app
    from mimi.services import wifi, loopwatch, watchdog

    w = loopwatch.watch  # each task's steps timed: "W loop: stalled 850 ms in telegram"
    wifi.supervisor.portal = True  # the onboarding portal's check runs while offline
    ts = [w("wifi", wifi.supervisor.run()), w("boot guard", app.guard()),
          w("watchdog", watchdog.task()), loopwatch.task()]
    if not safemode.active:
        from mimi.channels import dispatch
        from mimi.services import ntp, cron

        ts.append(w("dispatch", dispatch.run()))
        ts += dispatch.tasks()  # the configured channels (each watched), senders registered
        ts.append(w("ntp", ntp.run()))
        ts.append(w("cron", cron.task()))
        from mimi import devices

        ts.append(w("rules", devices.body()))  # the rules and the history (SPEC §14)
    ts += board.tasks()  # the simulator's Ctrl-C (board/host.py)
    if board.CONSOLE:
        ts.append(w("console", app.console(stop), quiet=True))  # holds the loop for mpremote
    return ts
