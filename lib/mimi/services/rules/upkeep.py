# The rule file read (/rules.json, limits.RULES_PATH; its shape: services/rules/book.py),
# and what the rules' loop needs now and then, not every pass (services/rules/check.py is
# the pass, loaded every second on a heap without PSRAM): the rules (re)loaded from the
# file and the logging devices from the table, a logging device's reading kept (keep())
# and a failed read's backoff and word to its chats (failed()), both run after the pass's
# reads with what else it says (said()), a device's batch of readings written to
# the history, every waiting reading written (a reset, the loop's end), history of
# removed devices pruned at boot. Loaded for that and dropped. A firing rule (act.py)
# and the rule book read the file here too: what the loop loads stays clear of book.py's
# checks and words, whose names MicroPython interns for good as a .mpy loads. A file that
# is not the book's shape is moved aside to limits.RULES_BAD with a log line; the
# firmware runs without rules. The rules in RAM: check.py's flat list (each rule's
# definition, then its state). The engine and the device state are imported where they are used (book.py
# loads this without them).
import sys
import time
import json
import struct
import mimi
from micropython import const
from mimi import limits, log, fs

TAG = "rules"
WHEN = ("above", "below", "changes", "rises", "falls", "pressed")
THEN = ("set", "notify", "ask")
_ID = const(0)  # (check.py's slots of a rule)
_DEV = const(1)
_WHEN = const(3)
_EVERY = const(6)
_NEXT = const(11)
_N = const(15)
_REC = const(12)  # bytes of a waiting reading (check.py)


# The keys of a rule that the loop reads, spelled in one string longer than the 10
# characters under which MicroPython interns a literal (as _FIELDS below): loading the
# rules adds no names to its qstr pool for them.
_KEYS = "device when then"


def read():
    """The rules of the file ([] without one); a damaged file is moved aside."""
    dev, when, then = _KEYS.split()
    try:
        if fs.size(limits.RULES_PATH) > limits.RULES_FILE_MAX:
            raise ValueError("over %d bytes" % limits.RULES_FILE_MAX)
        text = fs.read_text(limits.RULES_PATH, limits.RULES_FILE_MAX)
    except OSError:
        return []
    try:
        rules = json.loads(text)["rules"]
        ids = set()
        for r in rules:
            if not isinstance(r.get("id"), int) or r["id"] in ids or r.get(when) not in WHEN or \
                    r.get(then) not in THEN or not isinstance(r.get(dev), str):
                raise ValueError("a bad rule %r" % (r.get("id"),))
            ids.add(r["id"])
        return rules
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        try:
            fs.rename(limits.RULES_PATH, limits.RULES_BAD)
            where = "moved aside to " + limits.RULES_BAD
        except OSError as x:
            where = "could not be moved aside (%s)" % fs.why(x)
        log.error(TAG, "%s is damaged (%s): %s; no rules run", limits.RULES_PATH, e, where)
        return []


# The fields of a rule's row after its device and condition, in the row's order: one
# string longer than the 10 characters under which MicroPython interns a literal, so
# these keys add no names to its qstr pool (json.loads interns none either).
_FIELDS = "value hysteresis every_s cooldown_s then target to otherwise"


def _row(d, old):
    """Rule d's _N slots in engine.rules (check.py): its definition, then its state,
    which `old` (its slots before, or None) keeps when the definition is the same."""
    dev, when, _ = _KEYS.split()
    name, _, label = d[dev].partition(".")
    v = [d.get(k) for k in _FIELDS.split()]
    r = [d["id"], name, label, d[when], v[0], v[1] or 0, (v[2] or 0) * 1000, (v[3] or 0) * 1000]
    # (target, to, otherwise: a set rule's only; a set rule is one with a target, "" if the file has none)
    r += (v[5] or "", v[6], v[7]) if v[4] == "set" else (None, None, None)
    r += (time.ticks_ms(), None, None, None)
    for i, x in enumerate(r):  # its words and names as qstrs, kept once (devices/table.py word())
        if isinstance(x, str) and len(x) <= limits.DEVICE_NAME_MAX:  # (a long `to` stays a string)
            getattr(None, x, None)
            r[i] = x[:]
    return old if old and old[:_NEXT] == r[:_NEXT] else r


def load():
    """The rules from the file, the logging devices from the device table; what did not
    change keeps its state (and its waiting readings)."""
    from mimi.devices import state
    import mimi.services.rules as engine

    first = engine.rules is None
    if first:  # (the loop's first pass) its waiting readings written before a reset
        if __name__ not in mimi.closers:
            mimi.closers.append(__name__)
        # (at boot) history of devices that are gone goes. The store is loaded for
        # it only when a segment there is one's (/history/<device>.<tier><start>): loaded,
        # its names stay in the qstr pool for good, and a boot whose devices all remain has
        # no need of them (the logging's first batch brings them). (Here, not a function of
        # its own: one name fewer.)
        keep = [r[0] for r in mimi.run("devices.lines", "kept")]
        gone = set()
        for p in fs.walk_files(limits.HISTORY_DIR):
            name, _, rest = p[len(limits.HISTORY_DIR) + 1:].partition(".")
            if name not in keep and rest != "bad":
                gone.add(name)
        for name in gone:
            mimi.run("services.history.store services.history", "remove", name)
    engine.stale = False
    R = engine.rules or ()
    old = {R[i + _ID]: R[i:i + _N] for i in range(0, len(R), _N)}
    rows = [_row(d, old.get(d["id"])) for d in read()]
    old = None
    R = [None] * (len(rows) * _N)  # (one list, its size exact: check.py)
    for i, r in enumerate(rows):
        R[i * _N:i * _N + _N] = r
    engine.rules = R
    rows = None
    new = {}
    for name, m in mimi.run("devices.lines", "logging"):
        lg = engine.logs.get(name)
        new[name] = (struct.pack("<II", m * 60000, time.ticks_ms()) if lg is None or
                     struct.unpack_from("<I", lg)[0] != m * 60000 else lg)
    alive = [r[0] for r in mimi.run("devices.lines", "kept")]
    for name, lg in engine.logs.items():
        if name not in new and len(lg) > 8 and name in alive:
            write(name, True)  # (its logging stopped: what it read is kept; a removed device's goes)
    engine.logs = new
    buttons = [R[i + _DEV] for i in range(0, len(R), _N) if R[i + _WHEN] == "pressed"]
    import mimi.devices as devices

    state.pressed = devices.changed if buttons else None
    if buttons:  # their interrupts armed (the handler outlives the driver: devices/button.py)
        with devices.use() as t:
            for name in buttons:
                try:
                    t.need(name).driver()
                except Exception as e:
                    log.warning(TAG, "button %s: %s", name, e)
    files = sys.modules.get("mimi.tools.files")
    if files:  # the room the file tools leave for the history follows the devices that log
        files.recount()
    if first:
        log.info(TAG, "running: %d rule(s), %d device(s) logging", len(R) // _N, len(new))


def said(calls):
    """What a pass had to say (check.py later()), after its reads: [(module, function,
    args)], "upkeep" or "act" (loaded here once for them all; mimi.run() drops it after)."""
    for m, fn, args in calls:
        getattr(mimi.load("mimi.services.rules." + m), fn)(*args)


def failed(name, rs, logs, why, now):
    """A pass could not read device `name` (check.py): its rules `rs` due (their places
    in engine.rules) are tried again with backoff (doubling up to RULE_BACKOFF_MAX_S)
    and their chats told once; logs: it was due for its history too."""
    import mimi.services.rules as engine

    R = engine.rules
    b = engine.bad.setdefault(name, [0, False])
    b[0] += 1
    for i in rs:
        back = min(R[i + _EVERY] << min(b[0], 16), limits.RULE_BACKOFF_MAX_S * 1000)
        R[i + _NEXT] = time.ticks_add(now, max(back, R[i + _EVERY]))
    if logs:
        keep(name, now, None)
        once(name, "read", why)
    if rs and not b[1]:
        b[1] = True
        log.warning(TAG, "%s did not read: %s", name, why)
        # (said() runs this with act.py loaded, and drops it after the batch)
        mimi.load("mimi.services.rules.act").tell([R[i + _ID] for i in rs], why + ". Its rules wait and try again.", now)


def keep(name, now, reading):
    """A logging device read by a pass (reading None: it failed): its next reading due a
    period after now, and the reading waits for its batch (written here when it is whole:
    HISTORY_BATCH readings, or HISTORY_FLUSH_S since the first). Loaded for it once per
    reading, not every pass (check.py)."""
    import mimi.services.rules as engine
    from mimi import board

    lg = engine.logs[name]
    every = struct.unpack_from("<I", lg)[0]
    head = struct.pack("<II", every, time.ticks_add(now, every))
    engine.logs[name] = head + lg[8:]  # (a new bytes: the agent thread's readers take the old or the new, whole)
    if reading is None:
        return
    if not board.clock.valid():
        return once(name, "clock", "the clock is not set")
    v = reading[0][1]
    v2 = reading[1][1] if len(reading) > 1 else None
    if not _num(v):
        return once(name, "value", "it reads %r, not a number" % reading[0][2])
    t = board.clock.unix()
    n = (len(lg) - 8) // _REC + 1
    lg = lg[8 + _REC:] if n > limits.HISTORY_PENDING_MAX else lg[8:]  # (the flash refused the batches: the oldest go)
    engine.logs[name] = lg = head + lg + struct.pack("<Iff", t, v, v2 if _num(v2) else float("nan"))
    if n >= limits.HISTORY_BATCH or t - struct.unpack_from("<I", lg, 8)[0] >= limits.HISTORY_FLUSH_S:
        write(name, False)


def _num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def once(name, what, why):
    """Said once in the log until it is over: history that cannot be kept."""
    import mimi.services.rules as engine

    if (name, what) not in engine.bad:
        engine.bad[(name, what)] = 1
        log.warning(TAG, "%s: its history is not kept now: %s", name, why)


def write(name, whole):
    """The waiting readings of device `name` to the store (loaded for it): all of them,
    or for a device read more often than every 5 minutes those of the slots that ended."""
    import mimi.services.rules as engine

    buf = engine.logs[name]
    n = (len(buf) - 8) // _REC
    every_s = struct.unpack_from("<I", buf)[0] // 1000
    if not whole and every_s < limits.HISTORY_STEP_S and n:
        slot = struct.unpack_from("<I", buf, 8 + (n - 1) * _REC)[0] // limits.HISTORY_STEP_S
        while n and struct.unpack_from("<I", buf, 8 + (n - 1) * _REC)[0] // limits.HISTORY_STEP_S == slot:
            n -= 1
    if not n:
        return
    why = mimi.run("services.history.store services.history", "take", name, buf, n, every_s)
    if why:
        once(name, "write", why)
    else:
        buf = engine.logs[name]
        engine.logs[name] = buf[:8] + buf[8 + n * _REC:]  # (what the loop added meanwhile stays)
        engine.bad.pop((name, "write"), None)


def flush():
    """Every waiting reading written (mimi.close(): a reset, the loop's end)."""
    import mimi.services.rules as engine

    for name, lg in engine.logs.items():
        if len(lg) > 8:
            try:
                write(name, True)
            except Exception as x:
                log.exception(TAG, "%s: its history was not written" % name, x)
