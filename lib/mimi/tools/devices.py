# The device tools that read and drive one device (SPEC §13): device_read, device_set
# (device_list, device_add and device_remove are tools/devedit.py; i2c_scan and i2c_io
# tools/i2c.py). The table (mimi/devices/table.py) does the work; these shape the answers:
# `living_temp = 21.5 °C, humidity 40 %`, `OK: ...`, `Error: ...` that says what to check.
# Each holds the table only while it runs (`with devices.use() as t`): on a short heap the
# device code goes after it, so its classes are t's (t.Fault), never imported here.
from mimi import devices


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
