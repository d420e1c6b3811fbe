# The bodies of the REPL commands of SPEC §6 (MimiClaw's serial CLI, as Python
# functions). mimi/repl.py puts their names in the REPL namespace and loads this
# module only while one of them runs. Each prints its result for a person and
# returns None, so the REPL shows nothing noisy.
import sys
from mimi import log, board, fs, limits, channels
from mimi.config.settings import cfg


def _set(changes, note=None):
    try:
        done = cfg.update(changes)
    except ValueError as e:
        print("Error:", e)
        return
    except OSError as e:
        print("Error: not saved (%s); nothing changed" % fs.why(e))
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
    try:
        cfg.reset()
    except OSError as e:
        print("Error: not saved (%s); nothing changed" % fs.why(e))
        return
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


def set_proxy(host, port, type="http", user="", password=""):
    _set({"proxy_host": host, "proxy_port": port, "proxy_type": type, "proxy_user": user,
          "proxy_pass": password})


def clear_proxy():
    _set({"proxy_host": "", "proxy_port": 0, "proxy_type": "http", "proxy_user": "", "proxy_pass": ""})


def _allow(key, chat_id):
    ids = [x for x in cfg.get(key).split(",") if x]
    cid = str(chat_id).strip()
    if cid in ids:
        print("%s is already allowed" % cid)
        return
    _set({key: ",".join(ids + [cid])})


def allow_chat(chat_id):
    _allow("tg_allow", chat_id)


def set_feishu_creds(app_id, app_secret):
    _set({"feishu_app_id": app_id, "feishu_app_secret": app_secret}, "The Feishu channel connects with them.")


def allow_feishu(feishu_id):
    _allow("feishu_allow", feishu_id)


def feishu_send(feishu_id, text):
    import sys

    row = channels.of_setting("feishu_app_id")
    name = row.module.rpartition(".")[0] + ".repl"  # the channel's REPL body, in its package
    __import__(name)
    sys.modules[name].send(feishu_id, text)


def wifi_status():
    from mimi.services import wifi

    sup = wifi.supervisor
    rssi = "-"
    if sup.online():
        try:
            rssi = "%d dBm" % sup.wlan().status("rssi")
        except (OSError, ValueError, TypeError):
            pass
    print("WiFi: %s" % sup.state)
    print("  ssid        %s" % (sup.ssid or cfg.get("wifi_ssid") or "(not set: set_wifi(ssid, password))"))
    print("  ip          %s" % (sup.ip if sup.online() else "0.0.0.0"))
    print("  rssi        %s" % rssi)
    print("  retries     %d (reconnects since boot %d)" % (sup.retries, sup.reconnects))
    if sup.last_error:
        print("  last error  %s" % sup.last_error)
    import sys

    portal = sys.modules.get("mimi.services.portal")  # loaded only while it is open
    print("  " + (portal.current.status_line() if portal and portal.current else "onboarding AP off"))


def wifi_scan():
    w = board.wlan()
    try:
        w.active(True)
        nets = w.scan()
    except OSError as e:
        print("Error: scan failed:", e)
        return
    mine = cfg.get("wifi_ssid")
    for n in sorted(nets, key=lambda n: -n[3]):
        ssid = fs.decode(n[0]) if isinstance(n[0], bytes) else n[0]  # any bytes: no raise
        bssid = ":".join("%02x" % b for b in n[1]) if isinstance(n[1], bytes) else ""
        print("%s %-32s %s ch %2d %4d dBm%s" % ("*" if ssid and ssid == mine else " ", ssid or "(hidden)",
                                             bssid, n[2], n[3], "" if n[4] else "  open"))


def log_tail(n=20):
    for line in log.recent(n):
        print(line)


def restart():
    print("restarting...")
    from mimi import safemode

    safemode.clear()  # a deliberate restart is not a crash: it also leaves safe mode
    ledger = sys.modules.get("mimi.usage.ledger")
    if ledger:  # what the usage ledger counted since its last save
        ledger.tick(True)
    board.reset()


def memory_read():
    from mimi.memory import store

    try:
        print(fs.read_text(store.MEMORY_PATH, limits.FILE_READ_MAX))
    except OSError:
        print("(%s does not exist yet)" % store.MEMORY_PATH)


def memory_write(text):
    from mimi.memory import store

    store.write_memory(text)
    print("OK: wrote %d bytes to %s" % (len(str(text).encode()), store.MEMORY_PATH))


def session_list():
    from mimi.memory import sessions

    rows = sessions.list()
    for key, n in rows:
        print("%-40s %7d bytes" % (key, n))
    if not rows:
        print("(no sessions)")


def session_key_of(chat_id):
    """A full session key (a channel's prefix, '_', the chat id) as is; a bare id
    belongs to the first channel of channels.TABLE."""
    cid = str(chat_id).strip()
    if channels.of_session(cid):
        return cid
    from mimi import bus

    return bus.session_key(channels.TABLE[0].name, cid)


def session_clear(chat_id):
    from mimi.memory import sessions

    key = session_key_of(chat_id)
    if sessions.clear(key):
        print("OK: cleared session %s" % key)
    else:
        print("no session %s (see session_list())" % key)


def skill_list():
    from mimi.memory import skills

    rows = skills.skill_list()
    for name, title, desc in rows:
        print("%-20s %s: %s" % (name, title, desc))
    if not rows:
        print("(no skills)")


def skill_show(name):
    from mimi.memory import skills

    text = skills.skill_show(name)
    print(text if text is not None else "no skill %r (see skill_list())" % name)


def skill_search(word):
    from mimi.memory import skills

    rows = skills.skill_search(word)
    for name, line in rows:
        print("%-20s %s" % (name, line))
    if not rows:
        print("no skill matches %r" % word)


def tool_exec(name, json_args="{}"):
    print(_registry().call(name, json_args))


USAGE = (
    ("config_show()", "every setting, secrets masked"),
    ("config_set(key, value)", "change one setting (validated)"),
    ("config_reset()", "all settings back to defaults"),
    ("set_wifi(ssid, password)", "WiFi network to join"),
    ("wifi_status()", "connection state and IP"),
    ("wifi_scan()", "nearby networks"),
    ("set_tg_token(token)", "Telegram bot token from @BotFather"),
    ("allow_chat(chat_id)", "let a Telegram chat talk to the bot"),
    ("set_feishu_creds(id, secret)", "Feishu/Lark app id and secret (developer console)"),
    ("allow_feishu(id)", "let a Feishu user (ou_...) or group (oc_...) talk to the bot"),
    ("feishu_send(id, text)", "send a Feishu message to a user or group"),
    ("set_api_key(key)", "LLM API key"),
    ("set_model_provider(p)", "'anthropic' or 'openai' (any OpenAI-compatible server)"),
    ("set_model(name)", "model name ('' = provider default)"),
    ("set_api_base(url)", "API base URL ('' = provider default)"),
    ("set_search_key(key)", "Brave Search key"),
    ("set_tavily_key(key)", "Tavily key"),
    ("set_proxy(host, port, type, user, password)", "HTTP CONNECT or socks5 proxy (user: if it asks)"),
    ("clear_proxy()", "no proxy"),
    ("heap_info()", "memory left for a turn (heap, largest block, IDF RAM) and flash"),
    ("log_tail(n=20)", "recent log lines"),
    ("usage()", "LLM calls, tokens, cache hits and cost: this hour, today, 7 days; the caps"),
    ("memory_read()", "show /spiffs/memory/MEMORY.md"),
    ("memory_write(text)", "replace MEMORY.md with text"),
    ("session_list()", "stored chat sessions and their sizes"),
    ("session_clear(id)", "forget a chat: a key from session_list(), or a bare %s chat id" % channels.TABLE[0].label),
    ("skill_list()", "installed skills"),
    ("skill_show(name)", "a skill's full text"),
    ("skill_search(word)", "skills mentioning a word"),
    ("tool_exec(name, json_args)", "run a tool, e.g. tool_exec('list_dir', '{}')"),
    ("cron_list()", "scheduled jobs (cron_remove via tool_exec)"),
    ("heartbeat_trigger()", "check /spiffs/HEARTBEAT.md now"),
    ("web_search(query)", "search the web with the configured key"),
    ("devices()", "the parts wired to the board and their last readings; reads a hand-edited /devices.json again"),
    ("device_add(name, type, **params)", "add one, e.g. device_add('fan', 'relay', pin=21, inverted=True)"),
    ("device_remove(name)", "remove one (an actuator is left off)"),
    ("device_read(name)", "read one now"),
    ("device_set(name, value)", "drive one: 'on', 40, 90, 'red 30%', '440 300'"),
    ("device_history(name, hours=24)", "min, max, mean of a device that logs (device_add(..., log_min=5))"),
    ("rules()", "the rules the board runs by itself (README: Rules)"),
    ("rule_add(name, device, when, then, **kw)", "e.g. rule_add('fan', 'temp', 'above', 'set', value=28, "
     "hysteresis=1, target='fan', to='on', otherwise='off')"),
    ("rule_remove(id)", "remove one (rules() shows the ids)"),
    ("restart()", "reboot the board (also leaves safe mode)"),
    ("ota_update(url)", "install an app update bundle (rolls back if it fails to boot)"),
    ("ota_status()", "version and update state"),
    ("ota_rollback()", "go back to the previous app version"),
    ("ota_firmware(url, sha256)", "optional: new MicroPython firmware (OTA partition table)"),
)


def _registry():
    """The tool registry, imported under the flash's lock (mimi.load): the agent's turn
    drops it and the mimi.tools package on a short heap, and a module half-made by one
    thread must not be taken by the other."""
    import mimi

    return mimi.load("mimi.tools.registry").registry


def _device_tool(name, args):
    """A device tool's answer for a person (they run on the console's thread: a slow part,
    a DS18B20's 750 ms, holds the console that long)."""
    print(_registry().call(name, args))


def devices():
    """The devices, /devices.json read again first: one edited by hand or copied with
    mpremote is taken without a restart."""
    import mimi
    from mimi import devices as pkg

    with pkg.use():
        added, removed, changed = mimi.run("devices.edit", "reload")
    said = [w + " " + ", ".join(n) for w, n in (("added", added), ("removed", removed), ("changed", changed)) if n]
    if said:
        print("Read %s again: %s" % (limits.DEVICES_PATH, "; ".join(said)))
    _device_tool("device_list", {})


def device_add(name, type, **params):
    params.update(name=name, type=type)
    _device_tool("device_add", params)


def device_remove(name):
    _device_tool("device_remove", {"name": name})


def _on_loop(fn, args, *value):
    """A device read or set typed on the firmware's console, which runs on the asyncio
    loop: left for the console to await (console/serial.py later), so a slow part (a
    DS18B20's 750 ms) never holds the loop, and a device the rules' loop is reading is
    waited for, not deadlocked on. Elsewhere (the board's own REPL once the firmware
    stopped, aiorepl, mpremote's raw REPL, which holds the loop anyway) it blocks."""
    s = sys.modules.get("mimi.console.serial")
    if s is None or s.later is None:
        return False
    import mimi

    mine = "mimi.tools.devices" not in sys.modules
    tools = mimi.load("mimi.tools.devices")  # (under the lock: the agent's turn may drop mimi.tools)

    async def work():
        try:
            print(fn == "drive" and tools.no_value(args) or await tools.aact(args, fn, *value))
        finally:
            if mine:
                mimi.unload("mimi.tools.devices")

    s.later.append(work())
    return True


def device_read(name):
    if not _on_loop("read", {"name": name}):
        _device_tool("device_read", {"name": name})


def device_set(name, value):
    args = {"name": name, "value": value}
    if not _on_loop("drive", args, value):
        _device_tool("device_set", args)


def device_history(name, hours=24):
    _device_tool("device_history", {"name": name, "hours": hours})


def rules():
    _device_tool("rule_list", {})


def rule_add(name, device, when, then, **more):
    more.update(name=name, device=device, when=when, then=then)
    _device_tool("rule_add", more)


def rule_remove(id):
    _device_tool("rule_remove", {"id": id})


def cron_list():
    import mimi

    print(mimi.load("mimi.tools.cron").cron_list({}, None))  # (under the lock: a turn may drop mimi.tools)


def heartbeat_trigger():
    from mimi.services import heartbeat

    heartbeat.trigger()


def web_search(query):
    import mimi

    print(mimi.run("tools.search", "search", query))  # (under the flash's lock: the agent may load it too)


def help():
    print("MimiClaw REPL commands:")
    for usage, what in USAGE:
        print("  %-30s %s" % (usage, what))
