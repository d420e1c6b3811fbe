# Boot sequence and the runtime shape: defaults installed, settings loaded, the
# agent thread started, then one asyncio loop for everything else.
import os
import asyncio
import binascii
import mimi
from mimi import limits, log, config, defaults, board

cfg = config.cfg
started = False


def ensure_ws_token():
    """First boot: make the gateway token and show it once on the console."""
    if cfg.is_set("ws_token"):
        return None
    token = binascii.hexlify(os.urandom(12)).decode()
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


def banner():
    h = board.heap()
    f = board.fs_info()
    print("=" * 60)
    print("MimiClaw %s on %s (id %s)" % (mimi.VERSION, board.NAME, board.unique_id()))
    print("  provider %s, model %s" % (cfg.get("provider"), cfg.get("model") or "(default)"))
    print("  gateway ws://%s:%d/  (auth %s)" % (
        board.wlan().ifconfig()[0], cfg.get("ws_port"), "on" if cfg.get("ws_token") else "OFF"))
    print("  heap free %d, flash free %d of %d" % (h["free"], f["free"], f["total"]))
    print("  REPL: help() lists the commands")
    print("=" * 60)


async def _idle():
    while True:
        await asyncio.sleep(3600)


def tasks():
    """The loop's long-running tasks. Later parts (gateway, Telegram, cron...) add theirs here."""
    return [_idle()]


async def run():
    for coro in tasks():
        asyncio.create_task(coro)
    log.info("app", "ready")
    while True:
        await asyncio.sleep(3600)


def main():
    global started
    boot()
    started = True
    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        log.info("app", "loop stopped (Ctrl-C); REPL commands are available, restart() to boot again")
    finally:
        asyncio.new_event_loop()
