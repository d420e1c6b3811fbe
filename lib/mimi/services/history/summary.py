# A device's history summed up for the model (device_history: min, max, mean and a
# dozen points in time) and for the chat page (a chart's columns as JSON, drawn there
# as SVG). One streamed pass over the store's records: nothing the size of the range
# is held.
from array import array
from mimi import board, limits
from mimi.services.history import store
# (imported with this module, under the flash's lock when it is (mimi.run), never in a
# function: the other thread's mimi.run may have dropped query.py by then, and an import
# here took it half-made from that thread's)
from mimi.services.history.query import NAN, Stats, num, request, span_of, units, when


def summary(name, hours=24, now=None, points=limits.HISTORY_POINTS):
    """Device `name`'s readings over the last `hours` hours: {"name", "hours", "from",
    "to", "count", "min", "min_t", "max", "max_t", "mean", "last", "last_t",
    "points": [(t, mean)], "second": None or {"count", "min", "min_t", "max", "max_t",
    "mean"}}; times are Unix times, points the mean of each of `points` equal parts
    of the range that has readings, at its middle."""
    s0, s1 = span_of(hours, now)
    a = Stats()
    b = Stats()
    sums = [0.0] * points
    ws = [0] * points
    span = s1 - s0 + 1
    for s, v, v2, w in store.records(name, s0, s1):
        a.add(s, v, w)
        if v2 == v2:
            b.add(s, v2, w)
        k = (s - s0) * points // span
        sums[k] += v * w
        ws[k] += w
    e = store.EPOCH
    out = _stats(a)
    out.update({"name": name, "hours": hours, "from": e + s0, "to": e + s1,
                "last": a.last, "last_t": e + a.last_s if a.n else None,
                "points": [(e + s0 + (2 * k + 1) * span // (2 * points), sums[k] / ws[k])
                           for k in range(points) if ws[k]],
                "second": _stats(b) if b.n else None})
    return out


def _stats(st):
    e = store.EPOCH
    return {"count": st.n, "min": st.lo, "max": st.hi, "mean": st.mean(),
            "min_t": e + st.lo_s if st.n else None, "max_t": e + st.hi_s if st.n else None}


def text(sm, tz_s=0, unit="", unit2=""):
    """summary() in a few lines for the model (the device_history tool's answer)."""
    from mimi.board.clock import format_tz

    name, hours = sm["name"], sm["hours"]
    if not sm["count"]:
        return "%s: no readings in the last %s h" % (name, num(hours))
    days = hours > 24
    u = (" " + unit) if unit else ""
    lines = ["%s, last %s h (%s to %s, UTC%s): %d readings" % (
        name, num(hours), board.clock.local_str(tz_s, sm["from"])[:16],
        board.clock.local_str(tz_s, sm["to"])[:16], format_tz(tz_s), sm["count"]),
        "min %s%s at %s, max %s%s at %s, mean %s%s, last %s%s at %s" % (
            num(sm["min"]), u, when(sm["min_t"], tz_s, days), num(sm["max"]), u,
            when(sm["max_t"], tz_s, days), num(sm["mean"]), u, num(sm["last"]), u,
            when(sm["last_t"], tz_s, days))]
    b = sm["second"]
    if b:
        u2 = (" " + unit2) if unit2 else ""
        lines.append("second value: min %s%s at %s, max %s%s at %s, mean %s%s" % (
            num(b["min"]), u2, when(b["min_t"], tz_s, days), num(b["max"]), u2,
            when(b["max_t"], tz_s, days), num(b["mean"]), u2))
    lines.append("points: " + ", ".join("%s %s" % (when(t, tz_s, days), num(v)) for t, v in sm["points"]))
    return "\n".join(lines)


def reduce(name, s0, s1, columns, field=0):
    """Device `name`'s records between store times s0 and s1 in `columns` equal
    columns: (lo, hi, stats): each column's min and max (array('f'), NaN where it has
    none) and the Stats of all of them."""
    if field not in (0, 1):
        raise ValueError("field is 0 (the value) or 1 (the second value)")
    lo = array("f", bytes(4 * columns))
    hi = array("f", bytes(4 * columns))
    for x in range(columns):
        lo[x] = NAN
        hi[x] = NAN
    st = Stats()
    span = s1 - s0 + 1
    for r in store.records(name, s0, s1):
        v = r[1 + field]
        if v != v:
            continue
        st.add(r[0], v, r[3])
        x = (r[0] - s0) * columns // span
        if not (lo[x] <= v):  # (NaN: the column's first)
            lo[x] = v
        if not (hi[x] >= v):
            hi[x] = v
    return lo, hi, st


def chart_json(name, hours=24, now=None, columns=limits.CHART_COLUMNS, field=0, unit=""):
    """The chart's data for the chat page, which draws it (SVG) itself: compact JSON
    {"type": "chart", "name", "hours", "unit", "from", "to" (Unix times; column i
    covers from + i * (to - from) / columns onwards), "count", "min": [v, t],
    "max": [v, t], "mean", "lo": [...], "hi": [...]} (null: a column without readings)."""
    import json

    s0, s1 = span_of(hours, now)
    lo, hi, st = reduce(name, s0, s1, columns, field)
    e = store.EPOCH
    out = ['{"type":"chart","name":', json.dumps(name), ',"hours":', num(hours), ',"unit":', json.dumps(unit),
           ',"from":%d,"to":%d,"count":%d' % (e + s0, e + s1, st.n)]
    if st.n:
        out.append(',"min":[%s,%d],"max":[%s,%d],"mean":%s' % (
            num(st.lo), e + st.lo_s, num(st.hi), e + st.hi_s, num(st.mean())))
    for key, col in (("lo", lo), ("hi", hi)):
        out.append(',"%s":[' % key)
        out.append(",".join("null" if v != v else num(v) for v in col))
        out.append("]")
    out.append("}")
    return "".join(out)


def answer(name, hours=24, tz_s=0):
    """The device_history tool's answer: text(summary(...)) or "Error: ..."."""
    if not isinstance(name, str) or name not in store.names():
        names = store.names()
        return "Error: no history for %s; %s" % (
            str(name)[:24] if name else "'name' (required)",
            "devices with one: " + ", ".join(names) if names else
            "no device logs yet: add one with log_min (minutes between readings kept)")
    if not board.clock.valid():
        return "Error: the clock is not set yet, so no reading has a time"
    return text(summary(name, hours), tz_s, *units(name))


def page(want):
    """The chat page's chart: chart_json() of want ("/chart NAME [hours]", or [name,
    hours] from the WebSocket or the device_history tool), or an error message's JSON."""
    import json

    try:
        if not isinstance(want, str):
            want = "%s %s" % (want[0], 24 if want[1] is None else want[1])
        name, hours = request(want)
    except (ValueError, TypeError, IndexError) as e:
        return json.dumps({"type": "error", "content": str(e)})
    return chart_json(name, hours, unit=units(name)[0])
