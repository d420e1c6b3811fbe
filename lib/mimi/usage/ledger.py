# The usage ledger, its resident part: LLM calls and tokens of this local hour and
# day (per provider/model for the day), and the spend caps (max_calls_hour,
# max_calls_day, max_tokens_day). The agent records each call and asks before each
# one; the loop and the REPL read. The unix port has no GIL: all of it under `lock`.
# The file (limits.USAGE_PATH, the last 31 days) is usage/file.py's, loaded for a
# save (at most once a minute, at a day's end, at shutdown) and when a day starts;
# the report (usage(), /usage, the WebSocket request) and a refusal's words and owner
# notice are usage/report.py's.
import time
import _thread
import mimi
from mimi import limits, log, board
from mimi.config import settings as config
from micropython import const

# A row of counters: calls, input tokens (cached ones included), cache reads, cache
# writes, output tokens. KEYS: the usage dict's names of the last four.
_N = const(5)
KEYS = ("input", "cache_read", "cache_write", "output")

lock = _thread.allocate_lock()
day = -1  # the local day ((unix + tz) // 86400) the counters are for; -1: not loaded yet
hour = -1  # the local hour ((unix + tz) // 3600)
today = [0] * _N
this_hour = [0] * _N
models = {}  # "provider/model" -> a row, today's
dirty = False  # counted since the last save
_saved = None  # ticks_ms of the last save; None: the next one may go at once
told = None  # (cap, period) the owner was last told about (report.py)
_key = (None, None, None)  # (provider name, model, "name/model"): no new string per call


def _now():
    t = board.clock.unix() + config.tz_s()
    return t // 86400, t // 3600


def _roll(d, h):
    """Under lock: make the counters those of day d and hour h. A new day saves the old
    one first and takes the new one's counts from the file (a restart, a tz change)."""
    global day, hour
    if d != day:
        if dirty and day >= 0:
            _save()
        for row in (today, this_hour):
            row[:] = [0] * _N
        models.clear()
        day, hour = d, h
        _file("usage.file", "load", d, h, this_hour, today, models)
    elif h != hour:
        this_hour[:] = [0] * _N
        hour = h


def _file(names, fn, *args):
    """mimi.run() that logs what fails (a broken ledger file must not stop the agent)."""
    try:
        return mimi.run(names, fn, *args)
    except Exception as e:
        log.error("usage", "%s: %s %s", fn, type(e).__name__, e)


def _save():
    global dirty, _saved
    if _file("usage.file", "save", day, hour, this_hour, today, models):
        dirty = False
    _saved = time.ticks_ms()


def add(provider, usage):
    """Count one LLM call of `provider` (its .name, .model) with the reply's usage dict."""
    global dirty, _key
    d, h = _now()
    with lock:
        _roll(d, h)
        name, model = getattr(provider, "name", ""), getattr(provider, "model", "")
        if name != _key[0] or model != _key[1]:
            _key = (name, model, "%s/%s" % (name, model))
        row = models.get(_key[2])
        if row is None:  # bounded: a model switched a lot adds up under "other"
            k = _key[2] if len(models) < limits.USAGE_MODELS_MAX - 1 else "other"
            row = models.get(k) or models.setdefault(k, [0] * _N)
        for r in (today, this_hour, row):
            r[0] += 1
            for i in range(4):
                r[i + 1] += usage.get(KEYS[i], 0) or 0
        dirty = True


def check(who=None):
    """None when an LLM call may go, else why not ("the daily limit of 1000 LLM calls
    is reached; it resets at 00:00 (+08:00), or raise max_calls_day"). The first
    refusal of a cap period tells the owner too, unless the owner is `who`
    ((channel, chat_id) of the turn)."""
    d, h = _now()
    get = config.cfg.get
    with lock:
        _roll(d, h)
        cap = get("max_calls_hour")
        if cap and this_hour[0] >= cap:
            why = "max_calls_hour"
        else:
            cap = get("max_calls_day")
            if cap and today[0] >= cap:
                why = "max_calls_day"
            else:
                cap = get("max_tokens_day")
                if not cap or today[1] + today[4] < cap:
                    return None
                why = "max_tokens_day"
    return _file("usage.report usage.file", "refusal", why, cap, h, who) or why + " reached"


def tick(force=False):
    """Save what was counted when the last save is a minute old (the agent thread calls
    this every second); force: now (shutdown, restart)."""
    if not dirty or day < 0:
        return
    if not force and _saved is not None and \
            time.ticks_diff(time.ticks_ms(), _saved) < limits.USAGE_SAVE_MS:
        return
    with lock:
        if dirty:
            _save()


def snapshot():
    """(day, hour, this hour's row, today's row, {model: row}) as copies, for a report."""
    d, h = _now()
    with lock:
        _roll(d, h)
        return day, hour, list(this_hour), list(today), {k: list(v) for k, v in models.items()}
