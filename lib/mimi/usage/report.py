# The usage ledger's report: usage() on the REPL, /usage on Telegram and Feishu, the
# WebSocket {"type":"usage"} request. This hour, today (per model), the last 7 days,
# the share of input tokens served from the prompt cache, an estimated cost, the caps.
# And a cap's refusal: its words, and the owner's notice. Loaded when asked, dropped
# after (mimi.run).
from mimi import log
from mimi.usage import ledger, file as usagefile
from mimi.config.settings import cfg

NOTICE = "Usage limit: %s. Until then no chat, heartbeat or cron turn calls the LLM."
CAPS = {"max_calls_hour": ("hourly", "LLM calls"), "max_calls_day": ("daily", "LLM calls"),
        "max_tokens_day": ("daily", "tokens")}


def refusal(cap, most, hour, who):
    """Why an LLM call is refused (`cap` reached: `most`), e.g. "the daily limit of 1000
    LLM calls is reached; it resets at 00:00 (+08:00), or raise max_calls_day"; the first
    refusal of a cap period (per cap: the hour, or the day) tells the owner too, unless
    the owner is `who` ((channel, chat_id) of the turn)."""
    span, what = CAPS[cap]
    text = "the %s limit of %d %s is reached; it resets at %02d:00 (%s), or raise %s" % (
        span, most, what, (hour + 1) % 24 if span == "hourly" else 0, cfg.get("tz"), cap)
    period = (cap, hour if span == "hourly" else ledger.day)
    with ledger.lock:
        if ledger.told == period:
            return text
        ledger.told = period
    from mimi import bus, channels

    log.warning("usage", "%s", text)
    dest = channels.owner()
    if dest is not None and who != dest and not bus.outbound.put(bus.Msg(dest[0], dest[1], NOTICE % text)):
        log.warning("usage", "outbound queue full; the owner was not told")
    return text

# USD per million tokens: input, output, cache read, cache write (None: billed as
# input). The first row whose name starts the model's wins. price_in / price_out
# replace the input and output prices of every model.
PRICES = (
    ("claude-opus-4-5", 5, 25, 0.5, 6.25),
    ("claude-opus-4", 15, 75, 1.5, 18.75),
    ("claude-sonnet-4", 3, 15, 0.3, 3.75),
    ("claude-haiku-4-5", 1, 5, 0.1, 1.25),
    ("claude-3-5-haiku", 0.8, 4, 0.08, 1),
    ("gpt-5-mini", 0.25, 2, 0.025, None),
    ("gpt-5-nano", 0.05, 0.4, 0.005, None),
    ("gpt-5", 1.25, 10, 0.125, None),
    ("gpt-4.1-mini", 0.4, 1.6, 0.1, None),
    ("gpt-4o-mini", 0.15, 0.6, 0.075, None),
    ("gpt-4o", 2.5, 10, 1.25, None),
)
NAMES = ("calls", "input", "cache_read", "cache_write", "output")


def prices(key):
    """(input, output, cache read, cache write) USD per million tokens for ledger key
    "provider/model", or None when unknown. With price_in set, cache reads cost a tenth
    of it and cache writes 1.25 times it on Anthropic (the input price elsewhere)."""
    model = key.partition("/")[2]
    row = None
    for r in PRICES:
        if model.startswith(r[0]):
            row = r
            break
    pin, pout = cfg.get("price_in"), cfg.get("price_out")
    if row is None and not (pin and pout):
        return None
    if pin:
        read, write = pin / 10, pin * 1.25 if key.startswith("anthropic/") else pin
    else:
        pin, read, write = row[1], row[3], row[1] if row[4] is None else row[4]
    return pin, pout or row[2], read, write


def cost(models):
    """USD of a day's {model: row}, and whether every model's price was known."""
    usd = 0.0
    known = True
    for key, n in models.items():
        p = prices(key)
        if p is None:
            known = known and not n[0]
            continue
        plain = max(0, n[1] - n[2] - n[3])
        usd += (plain * p[0] + n[2] * p[2] + n[3] * p[3] + n[4] * p[1]) / 1e6
    return usd, known


def _dict(n, **more):
    d = {k: n[i] for i, k in enumerate(NAMES)}
    d.update(more)
    return d


def _model(key, n):
    usd, known = cost({key: n})
    return _dict(n, cost=round(usd, 4), cost_known=known)


def _hit(n):
    """Share of input tokens read from the prompt cache (None: no input)."""
    return round(n[2] / n[1], 3) if n[1] else None


def report():
    """The ledger as a dict (the WebSocket answer's fields) with "text" for a person."""
    day, hour, hrow, drow, models = ledger.snapshot()
    date = usagefile.date(day)
    want = [usagefile.date(day - k) for k in range(7)]  # today first
    days = {date: (drow, models)}
    each = usagefile.lines()
    try:
        for line in each:
            if line.startswith(usagefile.DAY):
                p = usagefile.parse(line)
                if p and p[1] in want and p[1] != date:
                    days[p[1]] = (p[2], p[3])
    finally:
        each.close()
    week = [0] * 5
    week_usd, week_known = 0.0, True
    out_days = []
    for d in want:
        if d not in days:
            continue
        n, m = days[d]
        usd, known = cost(m)
        week = [a + b for a, b in zip(week, n)]
        week_usd += usd
        week_known = week_known and known
        out_days.append(_dict(n, date=d, cost=round(usd, 4), cost_known=known))
    usd, known = cost(models)
    caps = {k: cfg.get(k) for k in ("max_calls_hour", "max_calls_day", "max_tokens_day")}
    r = {"type": "usage", "tz": cfg.get("tz"),
         "hour": _dict(hrow, start="%02d:00" % (hour % 24)),
         "today": _dict(drow, date=date, cost=round(usd, 4), cost_known=known,
                        models={k: _model(k, v) for k, v in models.items()}),
         "days": out_days,
         "week": _dict(week, cost=round(week_usd, 4), cost_known=week_known),
         "cache_hit": _hit(week), "limits": caps}
    r["text"] = text(r)
    return r


def _n(x):
    return str(x) if x < 10000 else "%.1fk" % (x / 1000) if x < 1000000 else "%.2fM" % (x / 1e6)


def _usd(d):
    if not d["calls"]:
        return ""
    if not d["cost_known"]:
        return ", cost unknown (set price_in/price_out)"
    return ", ~$%.2f" % d["cost"] if d["cost"] >= 0.01 else ", <$0.01"


def _line(label, d, more=""):
    cached = ""
    if d["input"]:
        cached = " (%d%% cached%s)" % (
            d["cache_read"] * 100 // d["input"],
            ", %s written to cache" % _n(d["cache_write"]) if d["cache_write"] else "")
    return "%s: %d calls, %s tokens in%s, %s out%s" % (
        label, d["calls"], _n(d["input"]), cached, _n(d["output"]), more)


def text(r):
    today, hour, caps = r["today"], r["hour"], r["limits"]
    out = ["LLM usage (local time UTC%s)" % r["tz"],
           _line("this hour (from %s)" % hour["start"], hour),
           _line("today %s" % today["date"], today, _usd(today))]
    for key, d in sorted(today["models"].items()):
        out.append("  %s: %d calls%s" % (key, d["calls"], _usd(d)))
    out.append(_line("last 7 days", r["week"], _usd(r["week"])))
    for d in r["days"]:
        if d["date"] != today["date"]:
            out.append("  " + _line(d["date"], d, _usd(d)))
    used = (hour["calls"], today["calls"], today["input"] + today["output"])
    out.append("limits: " + ", ".join(
        "%s %s" % (k, "%d (%d used)" % (caps[k], u) if caps[k] else "off")
        for k, u in zip(("max_calls_hour", "max_calls_day", "max_tokens_day"), used)))
    return "\n".join(out)


def usage():
    """REPL usage(): the report, printed."""
    print(report()["text"])
