# Changes of the device table: a device added (checked by devices/types.py, met: a
# sensor read, an actuator set to its off level; then saved) or removed (left at its
# off level), and the file written (atomic, through mimi.fs; with no device left it
# goes). Nothing is written when a step fails. Loaded for a change and dropped.
import json
import mimi
from mimi import limits, log, fs
import mimi.devices as pkg
from mimi.devices import state, table as t
from mimi.devices.table import Fault, TAG


def forget(name):
    """Nothing kept of a device of that name (devices/state.py, its lock)."""
    for d in (state.mem, state.last, state.presses or {}, t.locks):
        d.pop(name, None)


def entry(d):
    """A device's line of the file: name, type, then the parameters in the type's order."""
    if d.raw is not None:
        return json.dumps(d.raw)
    p = d.params
    keys = d.keys + tuple(k for k in p if k not in d.keys)
    return "{%s}" % ",".join("%s:%s" % (json.dumps(k), json.dumps(v)) for k, v in
                             [("name", d.name), ("type", d.type)] + [(k, p[k]) for k in keys])


def save(devs=None):
    """Write the file's devices; OSError: nothing changed on the flash."""
    entries = [entry(d) for d in devs or t.listed() if not d.builtin]
    if entries:
        fs.write_atomic(limits.DEVICES_PATH, '{"devices": [\n%s\n]}\n' % ",\n".join(entries))
    elif fs.exists(limits.DEVICES_PATH):
        with fs.lock:
            import os

            os.remove(limits.DEVICES_PATH)
    pkg.saved(bool(entries))


def add(name, typ, params):
    """Check, meet and save a new device -> (device, its first reading). Refused
    (ValueError) or Fault: nothing was written."""
    with t._lock:
        devs = t.listed()
        dev = mimi.run("devices.types devices.user", "make", name, typ, params, devs)
        forget(name)  # nothing of an earlier device of that name
        try:
            r = _first(dev)
        except Exception as e:  # said as a read would say it
            why = t.said(dev, e)[len("Error: "):]
            close(dev)
            forget(name)
            raise Fault("value", why + "; nothing was added")
        new = devs[:]
        new.insert(sum(1 for d in new if not d.builtin), dev)
        try:
            save(new)
        except OSError:
            close(dev)
            forget(name)
            raise
        t._set(new)
    log.info(TAG, "added %s", dev.label())
    return dev, r


def _first(dev):
    """A new device's first contact: a sensor is read (a part that does not answer is
    not added), an actuator set to its off level."""
    with dev.lock:
        drv = dev.driver()
        off = getattr(drv, "off", None)
        r = t.run(off() if off else drv.read())
        dev.dirty = False  # saved with the device
        return t.done(dev, r)


def remove(name):
    """Forget a device (its actuator left at its off level) -> the device. Fault when
    there is none or it is built in; OSError when the file could not be written."""
    with t._lock:
        dev = t.need(name)
        if dev.builtin:
            raise Fault("value", "%s is part of the board (%s): it cannot be removed%s" % (
                name, dev.type, "" if dev.type == "chip_temp" else "; the board setting adds it"))
        new = [d for d in t.listed() if d is not dev]
        save(new)
        t._set(new)
    with dev.lock:
        close(dev)
    forget(dev.name)
    log.info(TAG, "removed %s", dev.label())
    return dev


def close(dev):
    """The device's driver let go: an actuator at its off level, an interrupt released,
    an I2C controller no other device uses freed for other pins."""
    drv, dev.drv = dev.drv, None
    fn = getattr(drv, "close", None)
    if fn:
        try:
            fn()
        except Exception as e:
            log.exception(TAG, "%s: closing failed" % dev.name, e)
    if dev.bus and dev.bus[0] == "i2c" and not any(d.bus == dev.bus for d in t.listed() if d is not dev):
        state.i2c_ids.pop(dev.bus[1] << 8 | dev.bus[2], None)


def reload():
    """The device file read and checked again (one edited by hand, copied with mpremote)
    -> (added, removed, changed) names. A device that went or changed lets go of its
    driver (an actuator left off); a new actuator is set to its off level at once, as at
    boot; the others keep their drivers and state."""
    with t._lock:
        old = {d.name: d for d in t.listed()}
        pkg.rows = None  # checked again, not taken as kept
        t._load(pkg.made)
        new = {d.name: d for d in t.listed()}
    gone = [d for n, d in old.items() if new.get(n) is not d]
    for d in gone:
        with d.lock:
            close(d)
        forget(d.name)
    added = []
    for n, d in new.items():
        if old.get(n) is d:
            continue
        added.append(n)
        if d.kind == "out" and not d.err:
            try:
                _first(d)
            except Exception as e:
                log.warning(TAG, "%s: %s", n, t.said(d, e))
    changed = [n for n in added if n in old]
    return ([n for n in added if n not in old], [d.name for d in gone if d.name not in new], changed)

