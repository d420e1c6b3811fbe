# What people and the model read of the devices: a reading's text, a device's line, and
# the ## Devices part of the system prompt (agent/context.py), made from what
# devices/state.py keeps, without the table's code. Loaded for that and dropped.
import time
from mimi.devices import state

DEVICES = ("Parts wired to this board, with their last readings (device_read reads one now, "
           "device_set drives one). A pin the tools refuse stays refused: tell the user.\n")


def text(reading):
    return ", ".join((q[0] + " " if q[0] else "") + q[2] for q in reading)


def ago(name):
    r = state.last.get(name)
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
    r = state.last.get(name)
    if r is None:
        return head + (": off (as at boot)" if kind == "out" else ": not read yet")
    if kind == "out":
        return "%s: %s" % (head, text(r[0]))
    return "%s: %s (%s)" % (head, text(r[0]), ago(name))


def part(cap):
    """The `## Devices` text: one line a device, at most `cap` bytes."""
    import mimi.devices as devices

    if not state.fresh():
        with devices.use():
            pass
    out = [DEVICES]
    n = len(DEVICES)
    for row in state.rows:
        line = "- %s\n" % line_of(row)
        b = len(line.encode())
        if n + b > cap:
            break
        out.append(line)
        n += b
    return "".join(out)
