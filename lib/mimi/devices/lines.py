# What people and the model read of the devices: a device's line, and the ## Devices
# part of the system prompt (agent/context.py), made from the checked rows
# (mimi.devices.rows) and the readings' texts devices/state.py keeps (no reading yet
# while it is not loaded), without the table's code. Loaded for that and dropped.
import sys
import time
import mimi.devices as pkg


def kept():
    """[row, ...] of mimi.devices.rows (lists where the table has tuples); [] before the
    table is loaded."""
    import json

    return json.loads(pkg.rows or "[]")


def fresh():
    """Are the rows kept those of the table the settings make now?"""
    from mimi.config.settings import cfg

    return pkg.rows is not None and pkg.made == (cfg.get("board"), cfg.get("gpio_allow"))


def _checked():
    """kept(), the table loaded first when the rows are not those of the settings."""
    if not fresh():
        with pkg.use():
            pass
    return kept()


def logging():
    """[(name, log_min)] of the devices whose readings the history keeps."""
    return [(r[0], r[2]["log_min"]) for r in kept() if not r[10] and r[2].get("log_min")]


def owned():
    """{pin: device name} of the pins devices use."""
    return {p: row[0] for row in _checked() for p in row[6]}


def _last(name):
    """(the last reading's text, its ticks_ms) of device `name`, or None."""
    state = sys.modules.get("mimi.devices.state")
    b = state.last.get(name) if state else None
    return None if b is None else (b[4:].decode(), int.from_bytes(b[:4], "little"))

DEVICES = ("Parts wired to this board, with their last readings (device_read reads one now, "
           "device_set drives one). A pin the tools refuse stays refused: tell the user.\n")


def ago(name):
    r = _last(name)
    if r is None:
        return "not read yet"
    s = time.ticks_diff(time.ticks_ms(), r[1]) // 1000
    if s < 0:
        return "a while ago"
    return "now" if s < 60 else "%d min ago" % (s // 60) if s < 3600 else "%d h ago" % (s // 3600)


def line_of(row):
    """A device's line from its row (devices/table.py _FIELDS): `living_temp (sht3x at
    0x44 on SDA 8 / SCL 9): 21.5 °C, humidity 40 % (2 min ago)`."""
    name, typ, kind, where, err = row[0], row[1], row[4], row[5], row[10]
    if err:
        return "%s (%s): unusable: %s" % (name, typ, err)
    head = "%s (%s%s)" % (name, typ, where)
    r = _last(name)
    if r is None:
        return head + (": off (as at boot)" if kind == "out" else ": not read yet")
    if kind == "out":
        return "%s: %s" % (head, r[0])
    return "%s: %s (%s)" % (head, r[0], ago(name))


def part(cap):
    """The `## Devices` text: one line a device, at most `cap` bytes."""
    out = [DEVICES]
    n = len(DEVICES)
    for row in _checked():
        line = "- %s\n" % line_of(row)
        b = len(line.encode())
        if n + b > cap:
            break
        out.append(line)
        n += b
    return "".join(out)
