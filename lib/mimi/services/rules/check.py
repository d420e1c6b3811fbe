# One pass of the rules' loop (devices.body() runs it, services/rules/__init__.py holds its state):
# the devices due read (devices.use(): t.aread, conversions awaited), the rules judged
# and acted on, the logging devices' readings kept for their batch. Loaded for a pass;
# on a heap without PSRAM dropped after it, with the device layer's code.
#
# Rules: above/below a value with hysteresis (holds above x, clears below x - h),
# changes (by more than the hysteresis from the value it last acted on), rises/falls
# (by more than it from the lowest/highest since), pressed (the engine's presses).
# A rule that fires drives its target here (`set`, and back to `otherwise` when an
# above/below condition clears), or hands its notice or ask to act.py. Each has a
# cooldown: a set rule switches again only after it (its state is judged again at the
# next check), a notify or ask rule's firing within it is logged and dropped. A device
# that fails to read is retried with backoff (doubling up to RULE_BACKOFF_MAX_S) and its
# rules' chats are told once, and again when it reads again (upkeep.failed()).
#
# History: a logging device's readings wait in the engine (upkeep.keep(), once per
# reading); HISTORY_BATCH of them or an hour's go to services/history/store.py
# (upkeep.write(): for a device read more often than every 5 minutes only whole 5-minute
# slots; the store averages each slot into its long tier).
#
# The rules in RAM are one flat list (engine.rules), _N slots a rule: its definition (the
# file's, services/rules/book.py) then its state, rule k at k * _N; the texts of notices
# and asks and whether they notify or ask stay in the file. (One list, not a list a rule:
# 96 B less for four rules on 32-bit, the lists' heads and the outer list's slots.) What a pass needs only now and
# then (the rules loaded, a failed read, a reading kept, a batch written, the states
# listed) is services/rules/upkeep.py, loaded for it after the pass's reads (later()): the
# pass, loaded every second on a heap without PSRAM, stays small (2.8 KB of .mpy, was 3.4).
import gc
import sys
import time
import struct
import mimi
from micropython import const
from mimi import limits, log
import mimi.devices as devices
import mimi.services.rules as engine

TAG = "rules"
_ID = const(0)
_DEV = const(1)
_LABEL = const(2)  # "" (the device's value) or the reading's label ("humidity")
_WHEN = const(3)
_VALUE = const(4)
_HYST = const(5)
_EVERY = const(6)  # ms
_COOL = const(7)  # ms
_TARGET = const(8)  # a set rule's actuator (None: a notify or ask rule, act.py reads which from the file)
_TO = const(9)
_ELSE = const(10)
_NEXT = const(11)  # ticks_ms of its next check
_ON = const(12)  # above/below: the condition holds (None: not judged yet)
_REF = const(13)  # changes/rises/falls: the value it compares with
_FIRED = const(14)  # ticks_ms it last acted (None: never)
_N = const(15)  # slots a rule (upkeep.py _row())


def due(t, now):
    return time.ticks_diff(now, t) >= 0


async def step(now):
    """One pass at ticks `now` (the loop's, devices.body()): the rules loaded
    if they changed, presses, then every device due, then waiting notices. -> ms until
    the next is due. One bad pass stops nothing: logged, the next a second later. On a
    heap without PSRAM this module and the device layer's code go after it, unless the
    layer was loaded before it (a user's, still using it)."""
    table = "mimi.devices.table" in sys.modules
    try:
        return await _step(now)
    except MemoryError:  # a moment of a short heap (a long reply going out): nothing lost
        log.warning(TAG, "no room in the heap for a pass; the next one tries again")
    except Exception as e:
        log.exception(TAG, "a pass failed", e)
    finally:
        if gc.mem_free() + gc.mem_alloc() <= limits.GC_SMALL_HEAP:  # no PSRAM
            mimi.unload("mimi.services.rules.check")
            t = sys.modules.get("mimi.devices.table")
            if t and not table:
                t.drop()
    return 1000


async def _step(now):
    if engine.stale:
        mimi.run("services.rules.upkeep", "load")
    R = engine.rules
    p = engine.presses
    if p:  # taken whole (a press while they are acted on starts a new list: the next pass's)
        engine.presses = None
    for name in p or ():
        for i in range(0, len(R), _N):
            if R[i + _WHEN] == "pressed" and R[i + _DEV] == name:
                await fire(R, i, None, "pressed", now)
    names = []
    for i in range(0, len(R), _N):
        if R[i + _WHEN] != "pressed" and due(R[i + _NEXT], now) and R[i + _DEV] not in names:
            names.append(R[i + _DEV])
    for name, lg in engine.logs.items():
        if due(struct.unpack_from("<I", lg, 4)[0], now) and name not in names:
            names.append(name)
    _say()  # (the presses' notices)
    if names:  # the device layer loaded once for them all: each read's and action's use nests
        try:
            with devices.use():  # in this one (on a short heap each use's end dropped it, loaded again by the next)
                for name in names:
                    await _take(name, now)
        finally:  # what they said, once the device layer's code is gone (a short heap): not both at once
            _say()
    n = engine.notes  # (act.py's: notices held while offline, counted beyond the hour's ceiling)
    if n and (n[0] or (n[1] and time.ticks_diff(now, n[2]) >= 3600000)):
        from mimi.services import wifi

        if wifi.online():
            mimi.run("services.rules.act", "release", now)
    wait = limits.RULE_EVERY_MAX_S * 1000
    for i in range(0, len(R), _N):
        if R[i + _WHEN] != "pressed":
            wait = min(wait, time.ticks_diff(R[i + _NEXT], now))
    for lg in engine.logs.values():
        wait = min(wait, time.ticks_diff(struct.unpack_from("<I", lg, 4)[0], now))
    return max(wait, 0 if engine.stale or engine.presses else 1)


# What the reads and the rules have to say (act.py's notices and tells, upkeep.py's batches and
# once-said lines): done after the reads, not in their middle, so that on a short heap act.py,
# upkeep.py and the rule file's words (act.py reads them) are never loaded beside the device
# layer's code and the drivers (a pass that tells "reads again" and switches a relay held
# them all at once, ~20 KB, at a turn's peak): [(module, function, args)], upkeep.py's or
# act.py's, run by upkeep.said() with each module loaded once (a pass reading four logging
# devices loaded and dropped upkeep.py, and collected, four times in one stretch of the loop).
_later = []


def later(module, fn, *args):
    _later.append((module, fn, args))


def _say():
    if _later:
        calls = _later[:]
        _later.clear()
        mimi.run("services.rules.upkeep services.rules.act", "said", calls)


async def _read(name):
    """-> (reading, None) or (None, why). No room in the heap to read (the driver's code
    not loaded, a turn at its peak) is not the device's failure: the pass ends (step()
    says it), the device's rules are read again at the next."""
    with devices.use() as t:
        try:
            return await t.aread(name), None
        except MemoryError:
            raise
        except Exception as e:
            d = t.find(name)
            return None, t.said(d, e)[7:] if d else "there is no device %s" % name  # (past its "Error: ")


async def _take(name, now):
    """Read device `name`, judge its rules due, keep its reading if it logs. (Its rules
    as their places in engine.rules, which changes only at a pass's start.)"""
    R = engine.rules
    rs = [i for i in range(0, len(R), _N) if R[i + _DEV] == name and R[i + _WHEN] != "pressed" and due(R[i + _NEXT], now)]
    lg = engine.logs.get(name)
    if lg and not due(struct.unpack_from("<I", lg, 4)[0], now):
        lg = None
    reading, why = await _read(name)
    if reading is None:  # (its backoff and what it says: upkeep.py, after the reads)
        return later("upkeep", "failed", name, rs, lg is not None, why, now)
    b = engine.bad.pop(name, None)
    engine.bad.pop((name, "read"), None)
    if b and b[1]:
        log.info(TAG, "%s reads again", name)
        later("act", "tell", [R[i + _ID] for i in rs], "%s reads again; its rules run." % name, now)
    if lg:  # (the reading kept: upkeep.py, after the reads)
        later("upkeep", "keep", name, now, reading)
    for i in rs:
        R[i + _NEXT] = time.ticks_add(now, R[i + _EVERY])
        await check(R, i, reading, now)


def num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


async def check(r, i, reading, now):
    """Judge the rule at r[i:i + _N] (r: engine.rules) on a reading."""
    label = r[i + _LABEL]
    for item in reading:
        if item[0] == label or not label:
            break
    else:
        return
    v = item[1]
    when = r[i + _WHEN]
    ref = r[i + _REF]
    if when == "changes":
        if ref is None or (abs(v - ref) > r[i + _HYST] if num(v) and num(ref) else v != ref):
            r[i + _REF] = v
            if ref is not None:
                await fire(r, i, None, item[2], now)
        return
    if not num(v):
        return
    h = r[i + _HYST]
    if when in ("rises", "falls"):
        up = when == "rises"
        if ref is not None and (v > ref + h if up else v < ref - h):
            r[i + _REF] = v
            await fire(r, i, None, item[2], now)
        elif ref is None or (v < ref if up else v > ref):
            r[i + _REF] = v  # the lowest (highest) since it last fired
        return
    x = r[i + _VALUE]
    was = r[i + _ON]
    if when == "above":  # holds above x; clears below x - h
        on = v > x or (was is True and v >= x - h)
    else:
        on = v < x or (was is True and v <= x + h)
    if on != was:
        await fire(r, i, on, item[2], now)


async def fire(r, i, on, text, now):
    """Act on the rule at r[i:i + _N] (r: engine.rules): on True (its condition began to
    hold), False (it cleared) or None (an event: a change, a rise, a press)."""
    rid, fired, target = r[i + _ID], r[i + _FIRED], r[i + _TARGET]
    cool = r[i + _COOL] and fired is not None and time.ticks_diff(now, fired) < r[i + _COOL]
    if target is not None:  # a set rule
        to = r[i + _ELSE] if on is False else r[i + _TO]
        if cool and to is not None:
            return  # a switch too soon: the state is judged again at the next check
        was = r[i + _ON]
        r[i + _ON] = on
        if to is None:
            return
        r[i + _FIRED] = now
        with devices.use() as t:
            try:
                got = await t.adrive(target, to)
                # (its first item's text: the reading's whole text is devices/lines.py's, which a
                # pass leaves to the agent thread: one module imported by two threads at once
                # shows the second a half-made module)
                log.info(TAG, "rule %d: %s %s: %s = %s", rid, r[i + _DEV], text, target, got[0][2])
                if target not in r[_DEV::_N]:  # (a watched one's state is its reads')
                    engine.bad.pop(target, None)
            except MemoryError:  # (no room to drive it: not switched, judged again at the next check)
                r[i + _ON], r[i + _FIRED] = was, fired
                raise
            except Exception as e:
                d = t.find(target)
                why = t.said(d, e) if d else "no device %s" % target
                log.warning(TAG, "rule %d: %s", rid, why)
                b = engine.bad.setdefault(target, [0, False])
                if not b[1]:
                    b[1] = True
                    later("act", "tell", [rid], why, now)
        return
    r[i + _ON] = on
    if on is False:
        return
    if cool:
        log.info(TAG, "rule %d: %s %s (held by its cooldown)", rid, r[i + _DEV], text)
        return
    r[i + _FIRED] = now
    label = r[i + _LABEL]
    later("act", "fire", rid, r[i + _DEV] + ("." + label if label else ""), text, now)
