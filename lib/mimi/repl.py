# The REPL commands of SPEC §6 (MimiClaw's serial CLI, as Python functions).
# console.commands() and main.py put them in the REPL namespace (`from mimi.repl
# import *`), and mpremote's shortcuts import them from here. Only their names stay
# in RAM: a call loads the body (console/commands.py; ota_* from update/ota.py, the way
# back from update/boot.py through safemode.update(); heap_info from console/heapinfo.py,
# usage from usage/report.py), runs it and drops the module again, so the commands
# cost the heap nothing between calls.
import sys
import mimi

# Names only (interned, no string objects in the heap): the bodies are elsewhere.
_NAMES = (
    "help", "config_show", "config_set", "config_reset", "set_wifi", "wifi_status",
    "wifi_scan", "set_tg_token", "set_api_key", "set_model", "set_model_provider",
    "set_api_base", "set_search_key", "set_tavily_key", "set_proxy", "clear_proxy",
    "allow_chat", "set_feishu_creds", "allow_feishu", "feishu_send", "heap_info", "log_tail",
    "restart", "memory_read", "memory_write", "session_list", "session_clear", "skill_list",
    "skill_show", "skill_search", "tool_exec", "ota_update", "ota_firmware", "ota_status",
    "ota_rollback", "cron_list", "heartbeat_trigger", "web_search", "usage",
    "devices", "device_add", "device_remove", "device_read", "device_set", "device_history",
    "rules", "rule_add", "rule_remove")
if sys.platform != "esp32":  # the simulator's parts (SPEC §13, mimi/devices/sim/parts.py)
    _NAMES += ("sim_set", "sim_get")


class _Command:
    """One REPL command: its name (a function made per command by a closure took
    three objects, 48 bytes on 32-bit; this one 32)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "<REPL command %s>" % self.name

    def __call__(self, *args, **kw):
        name = self.name
        if name in ("ota_status", "ota_rollback"):  # the way back: even when this version's
            from mimi import safemode  # update code does not load (the previous one's then)

            return safemode.update(name, *args, **kw)
        where = "update.ota update.download update.boot update" if name[:4] == "ota_" \
            else "console.heapinfo console" if name == "heap_info" \
            else "usage.report usage.file" if name == "usage" else "devices.sim.parts" if name[:4] == "sim_" \
            else "console.commands console"
        return mimi.run(where, name, *args, **kw)


for _name in _NAMES:
    globals()[_name] = _Command(_name)
del _name
__all__ = _NAMES
