# The device tools that work on the table as a whole (SPEC §13): device_list,
# device_add, device_remove; loaded for them only, so a read or a set (tools/devices.py)
# does not load this. Each holds the table while it runs (`with devices.use() as t`); its
# classes are t's (t.Fault), never imported here.
import mimi
from mimi import fs, limits, devices

_RELAY_NOTE = ("; most opto relay modules switch on when their IN is LOW: if it clicked on "
               "just now, remove it and add it again with inverted=true")


def device_list(args, ctx):
    with devices.use() as t:
        out = []
        for d in t.listed():
            if d.type == "chip_temp":
                try:  # cheap and always there: read now
                    t.read(d.name)
                except Exception:
                    pass
            out.append(t.line(d))
    if devices.problem:
        out.append("Note: " + devices.problem)
    return "\n".join(out)


def device_add(args, ctx):
    params = dict(args)
    name, typ = params.pop("name", None), params.pop("type", None)
    if not isinstance(typ, str):
        return "Error: 'type' required (string)"
    with devices.use() as t:
        try:
            dev, r = mimi.run("devices.edit", "add", name, typ.strip().lower(), params)
        except OSError as e:
            return "Error: not saved (%s); nothing changed" % fs.why(e)
        except Exception as e:  # Refused (ValueError) or the part's Fault: nothing was written
            return "Error: %s" % e
        note = _RELAY_NOTE if dev.type == "relay" and not dev.params["inverted"] else ""
        return "OK: added %s: %s = %s%s" % (dev.label(), dev.name, t.text(r), note)


def device_remove(args, ctx):
    name = args.get("name")
    if isinstance(name, str) and fs.exists(limits.RULES_PATH):
        ids = mimi.run("services.rules.book services.rules.upkeep", "users", name)
        if ids:
            return "Error: rule %s uses %s: remove it first (rule_remove)" % (
                ", ".join(str(i) for i in ids), name)
    with devices.use() as t:
        try:
            dev = mimi.run("devices.edit", "remove", name)
        except t.Fault as e:
            return "Error: %s" % e
        except OSError as e:
            return "Error: not saved (%s); nothing changed" % fs.why(e)
    if fs.isdir(limits.HISTORY_DIR):  # its readings go with it
        mimi.run("services.history.store services.history", "remove", dev.name)
    return "OK: removed %s%s" % (dev.label(), " (left off)" if dev.kind == "out" else "")
