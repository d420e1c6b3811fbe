# Fuzzing the tools (issue 16, item 3): every tool of the real table called through
# the registry, as the model calls them, with mutated arguments (missing, wrong types,
# huge, invalid UTF-8, JSON text cut short) and hostile paths for the file tools; the
# device, rule and history tools change only /devices.json, /rules.json and /history.
# Each call must answer with a string (an "Error: ..." for bad input, never a tool's
# crash caught by the registry), nothing outside /spiffs or reserved there may change,
# no *.tmp is left, and the next sound call works. Seed and case count: tests/mp/fuzz.py.
import os
import json
import fuzz
from mimi import fs, limits, log
from mimi.config import settings as config
from mimi.utf8 import valid
from mimi.tools.registry import Ctx, registry
from mimi.tools import files

HEAPSIZE = "4m"
TIMEOUT = 300
FS_BLOCKS = 512
SESSION = limits.SPIFFS + "/sessions/tg_42.jsonl"
CRON = limits.SPIFFS + "/cron.json"
KEEP = (limits.SPIFFS + "/fuzz/keep.md",)
DEVICE_FILES = (limits.DEVICES_PATH[1:], limits.DEVICES_BAD[1:], limits.RULES_PATH[1:], limits.RULES_BAD[1:],
                limits.HISTORY_DIR[1:])

SEGMENTS = ("", ".", "..", "...", "\u2024\u2024", "\uff0e", "sessions", "SESSIONS.", "Sessions",
            "cron.json", "CRON.JSON.", ".defaults.json", "memory", "MEMORY.md", "x.tmp", "a b", " a",
            "a ", "\x00", "\x7f", "\u2028", "\ufeff", "a\\b", "%2e%2e", "\u4e2d\u6587", "\U0001f389",
            "skills", "fuzz", "keep.md", "n" * 80, "con", "a:b", "*", "?", "~")
ROOTS = ("/spiffs/", "/spiffs", "/", "", "/SPIFFS/", "spiffs/", "//spiffs/", "/spiffs//", "/lib/",
         "/config.json", "/host/", "/spiffs/../", "\\spiffs\\")


def hostile_path(r):
    p = r.pick(ROOTS) + "/".join(r.pick(SEGMENTS) for _ in range(r.below(4) + 1))
    if r.chance(10):
        p += "/"
    if r.chance(10):
        p = p.encode() + r.pick(fuzz.BAD_BYTES)
        try:
            p = p.decode()  # MicroPython lets CESU-8 and overlong forms into a str
        except UnicodeError:
            pass
    return p


def sound(r, name):
    """Arguments a model might send for tool `name`."""
    path = hostile_path(r) if r.chance(70) else r.pick(KEEP)
    return {
        "web_search": {"query": r.pick(fuzz.WORDS)},
        "get_current_time": {},
        "read_file": {"path": path},
        "write_file": {"path": path, "content": r.pick(fuzz.WORDS)},
        "edit_file": {"path": path, "old_string": r.pick(("keep", "e", "")), "new_string": "kept"},
        "list_dir": {"prefix": r.pick(("", "/spiffs/memory/", "memory/", "/", "sessions", "/spiffs/sessions/"))},
        "cron_add": {"name": "n", "schedule_type": r.pick(("every", "at", "daily", "never")),
                     "message": "m", "interval_s": r.pick((60, 0, -1, 2 ** 40)),
                     "at_epoch": r.pick((2000000000, 0, 2 ** 63)), "time": r.pick(("08:00", "25:99", "")),
                     "deliver": r.pick((True, False)), "channel": r.pick(("", "telegram", "websocket", "x")),
                     "chat_id": r.pick(("", "42", "7", "cron"))},
        "cron_list": {},
        "cron_remove": {"job_id": r.pick(("", "deadbeef", "../x"))},
        "gpio_write": {"pin": r.pick((2, 0, -1, 48, 2 ** 31, 19)), "state": r.pick((0, 1, 2, -1))},
        "gpio_read": {"pin": r.pick((2, 0, -1, 48, 2 ** 31, 19))},
        "gpio_read_all": {},
        "device_list": {},
        "device_add": {"name": r.pick(("fan", "t", "x" * 30, "Bad", "chip_temp")),
                       "type": r.pick(("relay", "button", "digital_in", "sht3x", "nope", "chip_temp")),
                       "pin": r.pick((2, 4, 0, 19, -1, 99, "4")), "inverted": r.pick((True, "maybe"))},
        "device_read": {"name": r.pick(("fan", "t", "chip_temp", "nope"))},
        "device_set": {"name": r.pick(("fan", "t", "chip_temp")), "value": r.pick(("on", "off", 5, "red", ""))},
        "device_remove": {"name": r.pick(("fan", "t", "chip_temp", "nope"))},
        "i2c_scan": {"sda": r.pick((8, 2, 0, "x")), "scl": r.pick((9, 4, 19))},
        "i2c_io": {"addr": r.pick((0x44, 0x100, -1)), "read": r.pick((2, 0, 99)),
                   "write": r.pick(("0102", "zz", "")), "reg": r.pick((5, 300)), "sda": 2, "scl": 4},
        "device_history": {"name": r.pick(("fan", "t", "nope", "")), "hours": r.pick((24, 0, -1, "48", 1e9)),
                           "chart": r.pick((True, False, "yes"))},
        "rule_add": {"name": r.pick(("r", "", "x" * 40)), "device": r.pick(("fan", "t", "t.humidity", "nope")),
                     "when": r.pick(("above", "below", "changes", "rises", "falls", "pressed", "soon")),
                     "value": r.pick((28, "28", "hot", None)), "hysteresis": r.pick((1, -1, None)),
                     "every_s": r.pick((1, 0, 10, 2 ** 40, None)), "then": r.pick(("set", "notify", "ask", "x")),
                     "target": r.pick(("fan", "t", None)), "to": r.pick(("on", "red", 5, None)),
                     "otherwise": r.pick(("off", None)), "text": r.pick(("{name} {value}", "", None)),
                     "prompt": r.pick(("why?", None)), "cooldown_s": r.pick((0, 5, 60, None))},
        "rule_list": {},
        "rule_remove": {"id": r.pick((1, 2, "1", "x", None))},
    }[name]


def args_for(r, name):
    a = sound(r, name)
    if r.chance(60):
        a = fuzz.mutate(r, a, huge=r.chance(5))
    if r.chance(20):
        text = fuzz.dumps(a)
        if r.chance(50):
            text = fuzz.garble(r, text)
        try:
            return text.decode()
        except UnicodeError:
            return text
    return a


def snapshot():
    """What no tool may change: the files outside /spiffs, reserved ones, the session."""
    out = {}
    for p in ("/config.json", SESSION, limits.DEFAULTS_RECORD):
        out[p] = fs.read_head(p, 1 << 16) if fs.exists(p) else None
    out["/"] = sorted(n for n in os.listdir("/") if n not in DEVICE_FILES)  # the device tools' own
    return out


def created(base):
    return [p for p in fs.walk_files(limits.SPIFFS) if p not in base]


def test_fuzz_tool_calls():
    log.mute = True
    config.cfg.load()
    config.cfg.update({"tg_allow": "42", "gpio_allow": "2,4"})
    fs.makedirs(limits.SPIFFS + "/sessions")
    fs.write_atomic(SESSION, '{"role":"user","content":"private"}\n')
    fs.write_atomic(KEEP[0], "keep this")
    reg = registry
    names = reg.names()
    base = set(fs.walk_files(limits.SPIFFS))
    before = snapshot()
    what = "tools"
    for n, r in fuzz.cases(200, what):
        name = r.pick(names) if r.chance(90) else r.pick(("", "nope", "read_file ", None))
        args = args_for(r, name) if name in names else {}
        ctx = r.pick((Ctx("websocket", "7"), Ctx("telegram", "42"), None))
        try:
            out = reg.call(name, args, ctx)
        except Exception as e:  # noqa: B902 - any escape is the finding
            fuzz.crash(what, n, e, (name, args))
        if not isinstance(out, str) or not valid(out) or len(out.encode()) > limits.TOOL_OUTPUT_MAX:
            fuzz.fail(what, n, "answer %r" % (out,), (name, args))
        if out.startswith("Error: %s failed:" % name):  # the registry caught a tool's exception
            fuzz.fail(what, n, "the tool crashed: %s" % out, (name, args))
        now = snapshot()
        if now != before:
            fuzz.fail(what, n, "changed outside the file tools' reach: %r" % (
                [k for k in now if now[k] != before.get(k)],), (name, args))
        new = created(base)
        for p in new:
            if p == CRON and str(name).startswith("cron_"):
                continue  # the cron tools' own file
            if p.endswith(".tmp") or files.check_path(p)[1]:
                fuzz.fail(what, n, "left or reached %r" % p, (name, args))
        # the next sound calls work
        fs.write_atomic(KEEP[0], "keep this")  # (a fuzzed call may have written it)
        if reg.call("read_file", {"path": KEEP[0]}) != "keep this":
            fuzz.fail(what, n, "read_file of a sound file: %r" % reg.call("read_file", {"path": KEEP[0]}),
                      (name, args))
        ok = reg.call("write_file", json.dumps({"path": limits.SPIFFS + "/fuzz/ok.md", "content": "ok %d" % n}))
        if not ok.startswith("OK") or reg.call("read_file", {"path": limits.SPIFFS + "/fuzz/ok.md"}) != "ok %d" % n:
            fuzz.fail(what, n, "write_file of a sound file: %r" % ok, (name, args))
        for p in created(base):  # the flash back to where it was (quota counted again)
            fs.remove(p)
        files._used = None
