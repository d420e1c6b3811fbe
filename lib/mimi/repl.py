# The REPL commands of SPEC §6 (MimiClaw's serial CLI, as Python functions).
# `from mimi.repl import *` in main.py puts them in the REPL namespace. Each prints
# its result for a person and returns None, so the REPL shows nothing noisy.
from mimi import config, log, board

cfg = config.cfg

__all__ = [
    "help", "config_show", "config_set", "config_reset", "set_wifi", "wifi_status",
    "wifi_scan", "set_tg_token", "set_api_key", "set_model", "set_model_provider",
    "set_api_base", "set_search_key", "set_tavily_key", "set_proxy", "clear_proxy",
    "allow_chat", "heap_info", "log_tail", "restart",
]


def _set(changes, note=None):
    try:
        done = cfg.update(changes)
    except ValueError as e:
        print("Error:", e)
        return
    for k in done:
        print("OK: %s = %s" % (k, cfg.shown(k)))
    if note:
        print(note)


def config_show():
    for key, shown, src in cfg.rows():
        print("%-14s %-40s %s" % (key, shown, src))
    for m in cfg.missing():
        print("note:", m)


def config_set(key, value):
    _set({key: value})


def config_reset():
    cfg.reset()
    print("OK: all settings back to defaults (a new ws_token is made at next boot)")


def set_wifi(ssid, password=""):
    _set({"wifi_ssid": ssid, "wifi_pass": password}, "WiFi settings saved; the board reconnects with them.")


def set_tg_token(token):
    _set({"tg_token": token})


def set_api_key(key):
    _set({"api_key": key})


def set_model(model):
    _set({"model": model})


def set_model_provider(provider):
    _set({"provider": provider})


def set_api_base(url):
    _set({"api_base": url})


def set_search_key(key):
    _set({"search_key": key})


def set_tavily_key(key):
    _set({"tavily_key": key})


def set_proxy(host, port, type="http"):
    _set({"proxy_host": host, "proxy_port": port, "proxy_type": type})


def clear_proxy():
    _set({"proxy_host": "", "proxy_port": 0, "proxy_type": "http"})


def allow_chat(chat_id):
    current = cfg.get("tg_allow")
    ids = [x for x in current.split(",") if x]
    cid = str(chat_id).strip()
    if cid in ids:
        print("chat %s is already allowed" % cid)
        return
    _set({"tg_allow": ",".join(ids + [cid])})


def wifi_status():
    w = board.wlan()
    if w.isconnected():
        print("WiFi: connected, ip", w.ifconfig()[0])
    else:
        print("WiFi: not connected (ssid %r)" % cfg.get("wifi_ssid"))


def wifi_scan():
    try:
        nets = board.wlan().scan()
    except OSError as e:
        print("Error: scan failed:", e)
        return
    for n in sorted(nets, key=lambda n: -n[3]):
        ssid = n[0].decode("utf-8", "replace") if isinstance(n[0], bytes) else n[0]
        print("%-32s ch %2d  %4d dBm" % (ssid or "(hidden)", n[2], n[3]))


def heap_info():
    h = board.heap()
    for k in sorted(h):
        print("%-14s %d" % (k, h[k]))
    try:
        f = board.fs_info()
        print("%-14s %d of %d bytes free" % ("flash", f["free"], f["total"]))
    except OSError:
        pass


def log_tail(n=20):
    for line in log.recent(n):
        print(line)


def restart():
    print("restarting...")
    board.reset()


USAGE = (
    ("config_show()", "every setting, secrets masked"),
    ("config_set(key, value)", "change one setting (validated)"),
    ("config_reset()", "all settings back to defaults"),
    ("set_wifi(ssid, password)", "WiFi network to join"),
    ("wifi_status()", "connection state and IP"),
    ("wifi_scan()", "nearby networks"),
    ("set_tg_token(token)", "Telegram bot token from @BotFather"),
    ("allow_chat(chat_id)", "let a Telegram chat talk to the bot"),
    ("set_api_key(key)", "LLM API key"),
    ("set_model_provider(p)", "'anthropic' or 'openai' (any OpenAI-compatible server)"),
    ("set_model(name)", "model name ('' = provider default)"),
    ("set_api_base(url)", "API base URL ('' = provider default)"),
    ("set_search_key(key)", "Brave Search key"),
    ("set_tavily_key(key)", "Tavily key"),
    ("set_proxy(host, port, type)", "HTTP CONNECT or socks5 proxy"),
    ("clear_proxy()", "no proxy"),
    ("heap_info()", "RAM and flash figures"),
    ("log_tail(n=20)", "recent log lines"),
    ("restart()", "reboot the board"),
)


def help():
    print("MimiClaw REPL commands:")
    for usage, what in USAGE:
        print("  %-30s %s" % (usage, what))
