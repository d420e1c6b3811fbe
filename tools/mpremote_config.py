# mpremote user config with MimiClaw shortcuts. Install it with `make mpremote-config`
# (copies this file to ~/.config/mpremote/config.py; an existing one is kept unless
# you pass --force, and its name is printed so you can merge by hand).
#
#   mpremote connect /dev/ttyACM0 memory-read
#   mpremote connect /dev/ttyACM0 memory-write "'The user likes green tea.'"
#   mpremote connect /dev/ttyACM0 config-set "'model'" "'claude-sonnet-4-5'"
#   mpremote connect /dev/ttyACM0 log-tail 50
#
# Arguments are Python expressions (mpremote assigns them on the board), so text
# goes in quotes inside the shell's quotes. Every shortcut starts with `resume`:
# the running firmware is not soft-reset. The REPL functions are imported each
# time, so the shortcuts also work after the firmware was stopped.


def _repl(call, help):
    name = call.split("(", 1)[0]
    return {"command": ["resume", "exec", "from mimi.repl import %s\n%s" % (name, call)], "help": help}


commands = {
    "memory-read": _repl("memory_read()", "show the board's long-term memory (MEMORY.md)"),
    "memory-write text": _repl("memory_write(text)", "replace MEMORY.md: memory-write \"'text'\""),
    "config-show": _repl("config_show()", "every setting, secrets masked"),
    "config-set key value": _repl("config_set(key, value)",
                                  "change a setting: config-set \"'model'\" \"'name'\""),
    "log-tail n=20": _repl("log_tail(n)", "recent log lines of the running firmware"),
    "wifi-status": _repl("wifi_status()", "WiFi state, ssid, ip, rssi, retries"),
    "heap-info": _repl("heap_info()", "RAM and flash figures"),
    "mimi-help": _repl("help()", "the MimiClaw REPL commands"),
    "mimi-restart": {"command": ["resume", "exec", "--no-follow",
                                 "from mimi.repl import restart\nrestart()"],
                     "help": "reboot the board"},
}


def _install(argv):
    import os
    import shutil

    force = "--force" in argv
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    try:
        import platformdirs

        base = os.path.dirname(platformdirs.user_config_dir(appname="mpremote", appauthor=False))
    except ImportError:
        pass
    target = os.path.join(base, "mpremote", "config.py")
    src = os.path.abspath(__file__)
    if os.path.exists(target) and not force:
        with open(target) as f:
            if f.read() == open(src).read():
                print("mpremote shortcuts already installed: %s" % target)
                return 0
        print("%s exists and is not ours; left as it is. Merge the `commands` of %s into it, "
              "or run: python tools/mpremote_config.py install --force" % (target, src))
        return 1
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if os.path.exists(target):
        shutil.copy(target, target + ".bak")
        print("previous config saved as %s.bak" % target)
    shutil.copy(src, target)
    print("installed %s: try `mpremote connect PORT mimi-help`" % target)
    return 0


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] != ["install"]:
        print("usage: python tools/mpremote_config.py install [--force]")
        sys.exit(2)
    sys.exit(_install(sys.argv[2:]))
