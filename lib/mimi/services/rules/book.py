# The rule book: /rules.json (limits.RULES_PATH, outside /spiffs: only the rule tools and
# the REPL change it), every rule checked before it is written (atomically: a power cut
# leaves the old file or the new one), and the rules as people read them. Loaded for a
# change or a listing, and dropped after; the file is read by services/rules/upkeep.py,
# all the engine loads of it.
#
# The file, one rule a line:
#   {"rules": [
#   {"id":1,"name":"fan","device":"living_temp","when":"above","value":28,"hysteresis":1,
#    "every_s":10,"cooldown_s":0,"then":"set","target":"fan","to":"on","otherwise":"off",
#    "channel":"telegram","chat_id":"42"}
#   ]}
# "device" is a device's name, or name.label for another of its readings
# ("living_temp.humidity"); "channel"/"chat_id": the chat the rule was made in (none:
# made on the REPL, its notices go to the owner). A file that is not that shape is
# moved aside to limits.RULES_BAD with a log line; the firmware runs without rules.
import json
from mimi import limits, log, fs
from mimi.services.rules import upkeep  # (its names taken when used: the rules' loop on the asyncio
# thread may be importing it right now, and the unix port has no import lock: a module
# being imported is in sys.modules half-made)

TAG = "rules"
KEYS = ("name", "device", "when", "value", "hysteresis", "every_s", "cooldown_s", "then", "target",
        "to", "otherwise", "text", "prompt")
_ASKED = ("channel", "chat_id", "id")  # kept with a rule besides KEYS


class Refused(ValueError):
    pass


def _save(rules):
    """Write the rules (OSError: nothing changed); with none left the file goes."""
    if rules:
        fs.write_atomic(limits.RULES_PATH, '{"rules": [\n%s\n]}\n' % ",\n".join(json.dumps(r) for r in rules))
    else:
        fs.remove(limits.RULES_PATH)


def _number(key, v):
    if isinstance(v, str):
        try:
            v = float(v.strip())
        except ValueError:
            pass
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), -float("inf")):
        raise Refused("'%s' must be a number, not %s" % (key, json.dumps(v)[:40]))
    return v


def _whole(key, v, lo, hi):
    v = _number(key, v)
    if v != int(v) or not lo <= v <= hi:
        raise Refused("'%s' must be a whole number of seconds, %d to %d" % (key, lo, hi))
    return int(v)


def _text(key, v):
    if not isinstance(v, str) or not v.strip():
        raise Refused("'%s' is required: text" % key)
    v = v.strip()
    if len(v) > limits.RULE_TEXT_MAX:
        raise Refused("'%s' is at most %d characters" % (key, limits.RULE_TEXT_MAX))
    return v


def check(args, channel=None, chat_id=None):
    """A new rule (dict, not saved yet) from the tool's or the REPL's arguments, with the
    watched reading's text now -> (rule, reading); Refused saying why."""
    if not isinstance(args, dict):
        raise Refused("the rule must be an object")
    for k in args:
        if k not in KEYS:
            raise Refused("unknown '%s'; a rule takes %s" % (str(k)[:24], ", ".join(KEYS)))
    name = args.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > limits.RULE_NAME_MAX or \
            any(ord(c) < 32 for c in name):
        raise Refused("'name' is required: a short text (at most %d characters)" % limits.RULE_NAME_MAX)
    when, then = args.get("when"), args.get("then")
    if when not in upkeep.WHEN:
        raise Refused("'when' must be one of %s" % ", ".join(upkeep.WHEN))
    if then not in upkeep.THEN:
        raise Refused("'then' must be set (a device), notify (a text) or ask (a prompt)")
    r = {"id": 0, "name": name.strip(), "device": args.get("device"), "when": when}
    given = [k for k in KEYS if args.get(k) is not None]

    def only(keys, why):
        for k in given:
            if k not in keys:
                raise Refused("'%s' does not go with %s" % (k, why))

    # the condition
    if when in ("above", "below"):
        if args.get("value") is None:
            raise Refused("'%s' needs 'value': the threshold (a number)" % when)
        r["value"] = _number("value", args["value"])
    elif args.get("value") is not None:
        raise Refused("'%s' takes no 'value'%s" % (when, "; above/below take one" if when != "pressed" else ""))
    if args.get("hysteresis") is not None:
        if when == "pressed":
            raise Refused("'pressed' takes no 'hysteresis' (a press is debounced)")
        r["hysteresis"] = h = _number("hysteresis", args["hysteresis"])
        if h < 0:
            raise Refused("'hysteresis' must be 0 or more")
    if when == "pressed":
        if args.get("every_s") is not None:
            raise Refused("'pressed' takes no 'every_s': a press is seen as it happens")
    else:
        every = args.get("every_s")
        r["every_s"] = _whole("every_s", limits.RULE_EVERY_S if every is None else every, 1, limits.RULE_EVERY_MAX_S)
    # the action
    r["then"] = then
    if then == "set":
        only(("name", "device", "when", "value", "hysteresis", "every_s", "cooldown_s", "then", "target",
              "to", "otherwise"), "then=set")
        if args.get("otherwise") is not None and when not in ("above", "below"):
            raise Refused("'otherwise' goes with above/below (a condition that clears)")
        low = 0
    else:
        what = "text" if then == "notify" else "prompt"
        only(("name", "device", "when", "value", "hysteresis", "every_s", "cooldown_s", "then", what),
             "then=" + then)
        r[what] = _text(what, args.get(what))
        low = limits.RULE_COOLDOWN_MIN_S
    cool = args.get("cooldown_s")
    r["cooldown_s"] = _whole("cooldown_s", limits.RULE_COOLDOWN_S if cool is None and low else cool or 0,
                             low, limits.RULE_EVERY_MAX_S)
    if channel:
        r["channel"], r["chat_id"] = channel, str(chat_id)
    reading = _devices(r, args)
    return r, reading


def _devices(r, args):
    """The rule's devices checked on the table: the watched one exists and reads (a
    number where the condition compares), a target is an actuator that takes the
    values. -> the watched reading's text now."""
    import mimi.devices as devices

    dev = r["device"]
    if not isinstance(dev, str) or not dev:
        raise Refused("'device' is required: the device to watch (device_list names them)")
    name, _, label = dev.partition(".")
    with devices.use() as t:
        try:
            d = t.need(name)
        except t.Fault as e:
            raise Refused(str(e))
        if r["when"] == "pressed":
            if d.type != "button" or label:
                raise Refused("'pressed' watches a button; %s is %s" % (dev, d.type))
            reading = "a button"
        else:
            try:
                got = t.read(name)
            except Exception as e:
                raise Refused(t.said(d, e)[len("Error: "):] + "; the rule was not added")
            item = pick(got, label)
            if item is None:
                raise Refused("%s has no reading '%s' (it reads %s)" % (name, label, t.text(got)))
            if r["when"] != "changes" and (isinstance(item[1], bool) or not isinstance(item[1], (int, float))):
                raise Refused("%s reads '%s': '%s' needs a number" % (dev, item[2], r["when"]))
            reading = "%s = %s" % (dev, item[2])
        if r["then"] == "set":
            target = args.get("target")
            if not isinstance(target, str):
                raise Refused("'set' needs 'target': the actuator to set")
            try:
                a = t.need(target)
            except t.Fault as e:
                raise Refused(str(e))
            if a.kind != "out":
                raise Refused("%s is a sensor (%s): 'set' drives an actuator" % (target, a.type))
            r["target"] = target
            if args.get("to") is None:
                raise Refused("'set' needs 'to': the value to set %s to" % target)
            for k in ("to", "otherwise"):
                v = args.get(k)
                if v is None:
                    continue
                if isinstance(v, (list, dict)):
                    raise Refused("'%s' must be a value such as on, off, 40 or red" % k)
                try:
                    fn = getattr(a.driver(), "check", None)
                    if fn:
                        fn(v)
                except t.Fault as e:
                    raise Refused("'%s': %s" % (k, e))
                r[k] = v
    return reading


def pick(reading, label):
    """The (label, value, text) of a reading that a rule watches: the first, or the one
    labelled `label` ("humidity")."""
    for item in reading:
        if item[0] == label or not label:
            return item
    return None


def add(args, channel=None, chat_id=None):
    """Check and save a new rule -> "rule N: <in words>; now <the reading>". Refused, or
    OSError when the file could not be written: nothing changed."""
    r, reading = check(args, channel, chat_id)
    with fs.lock:
        rules = upkeep.read()
        if len(rules) >= limits.RULES_MAX:
            raise Refused("at most %d rules; remove one first (rule_list)" % limits.RULES_MAX)
        r["id"] = max([x["id"] for x in rules] + [0]) + 1
        _save(rules + [r])
    words = describe(r)
    log.info(TAG, "added rule %d: %s", r["id"], words)
    return "rule %d: %s; now %s" % (r["id"], words, reading)


def remove(rid):
    """Remove rule `rid` -> the rule, or None when there is none; OSError: not saved."""
    try:
        rid = int(rid)
    except (TypeError, ValueError):
        return None
    with fs.lock:
        rules = upkeep.read()
        gone = [r for r in rules if r["id"] == rid]
        if not gone:
            return None
        _save([r for r in rules if r["id"] != rid])
    log.info(TAG, "removed rule %d", rid)
    return gone[0]


def users(device):
    """Ids of the rules that watch or set `device`."""
    return [r["id"] for r in upkeep.read() if r["device"].partition(".")[0] == device or r.get("target") == device]


def describe(r):
    """A rule in words: 'when living_temp above 28 (hysteresis 1), checked every 10 s:
    set fan to on, otherwise off'."""
    w = r["when"]
    cond = "%s %s" % (r["device"], w if w in ("changes", "rises", "falls", "pressed") else "%s %s" % (w, _n(r["value"])))
    if r.get("hysteresis"):
        cond += " (hysteresis %s)" % _n(r["hysteresis"])
    if w != "pressed":
        cond += ", checked every %d s" % r["every_s"]
    if r["then"] == "set":
        act = "set %s to %s" % (r["target"], r["to"])
        if r.get("otherwise") is not None:
            act += ", otherwise %s" % r["otherwise"]
    elif r["then"] == "notify":
        act = "notify %s" % json.dumps(r["text"])
    else:
        act = "ask the agent %s" % json.dumps(r["prompt"])
    if r.get("cooldown_s"):
        act += " (at most every %d s)" % r["cooldown_s"]
    return "when %s: %s" % (cond, act)


def _n(v):
    return ("%.2f" % v).rstrip("0").rstrip(".") if isinstance(v, float) else str(v)


def _states():
    """{rule id: its state in words} while the rules' loop runs (services/rules/__init__.py
    holds the rules as services/rules/check.py's flat list), else {}."""
    import sys
    import time

    eng = sys.modules.get("mimi.services.rules")
    out = {}
    now = time.ticks_ms()
    R = eng and eng.rules or ()
    for i in range(0, len(R), 15):  # (check.py's _N slots a rule: its id, device, on, fired)
        s = []
        if R[i + 12] is not None:
            s.append("holds now" if R[i + 12] else "does not hold now")
        if R[i + 14] is not None:
            s.append("acted %d s ago" % (time.ticks_diff(now, R[i + 14]) // 1000))
        b = eng.bad.get(R[i + 1])
        if b:
            s.append("%s failed %d reads in a row" % (R[i + 1], b[0]))
        out[R[i]] = ", ".join(s)
    return out


def listing():
    """Every rule in words, for rule_list and rules(), with its state now when the
    rules' loop runs."""
    rules = upkeep.read()
    states = _states()
    out = []
    for r in rules:
        who = "%s %s" % (r["channel"], r["chat_id"]) if r.get("channel") else "the owner"
        line = "%d %s: %s; to %s" % (r["id"], r["name"], describe(r), who)
        s = states.get(r["id"])
        if s:
            line += "; " + s
        out.append(line)
    if fs.exists(limits.RULES_BAD):
        out.append("Note: a damaged rule file was moved aside to %s" % limits.RULES_BAD)
    return "\n".join(out) if out else "No rules. rule_add makes one (%d at most)." % limits.RULES_MAX
