# The device tools (SPEC §13): device_list, device_read, device_set, device_add,
# device_remove (i2c_scan and i2c_io are tools/i2c.py).
# The table (mimi/devices/table.py, edit.py) does the work; these shape the answers:
# `living_temp = 21.5 °C, humidity 40 %`, `OK: ...`, `Error: ...` that says what to check.
# Each holds the table only while it runs (`with devices.use() as t`): on a short heap the
# device code goes after it, so its classes are t's (t.Fault), never imported here.
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


def _act(args, fn, *value):
    with devices.use() as t:
        d = _named(t, args)
        if isinstance(d, str):
            return d
        try:
            return _answer(d, t, getattr(t, fn)(d.name, *value), value)
        except Exception as e:
            return t.said(d, e)


async def aact(args, fn, *value):
    """_act on the asyncio loop (the REPL's console): aread / adrive, whose waits are
    awaited and whose locks are polled, so the loop runs on meanwhile."""
    with devices.use() as t:
        d = _named(t, args)
        if isinstance(d, str):
            return d
        try:
            return _answer(d, t, await getattr(t, "a" + fn)(d.name, *value), value)
        except Exception as e:
            return t.said(d, e)


def _named(t, args):
    try:
        return t.need(args.get("name"))
    except t.Fault as e:
        return "Error: %s" % e


def _answer(d, t, r, value):
    return "%s%s = %s" % ("OK: " if value else "", d.name, t.text(r))


def device_read(args, ctx):
    return _act(args, "read")


def no_value(args):
    """device_set's error for a missing or unusable value, or None."""
    value = args.get("value")
    if value is None or isinstance(value, (list, dict)):
        return "Error: 'value' required: on/off, a number, an angle or a colour"
    return None


def device_set(args, ctx):
    return no_value(args) or _act(args, "drive", args["value"])


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
