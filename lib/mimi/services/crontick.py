# The cron scheduler's job-running code (services/cron.py loads this when a job is
# due, and for its checks, and drops it after): firing the due jobs, when to look
# next, the schedules' arithmetic and cron.json's writing. Between two due times the
# scheduler holds only the next one.
import json
from mimi import limits, log, fs, bus, channels
from mimi.services.cron import blocked

DAY = 86400


def parse_hhmm(text):
    """'07:30' -> minutes after midnight; ValueError when malformed."""
    s = str(text).strip()
    hh, sep, mm = s.partition(":")
    if not sep or not hh.isdigit() or not mm.isdigit() or len(mm) != 2 or len(hh) > 2:
        raise ValueError("time must look like HH:MM (24-hour), e.g. 07:30")
    h, m = int(hh), int(mm)
    if h > 23 or m > 59:
        raise ValueError("time must be between 00:00 and 23:59")
    return h * 60 + m


def next_daily(hhmm, tz_s, now):
    """First Unix time after `now` when the local clock (UTC+tz_s) reads hhmm."""
    local = now + tz_s
    t = local - local % DAY + parse_hhmm(hhmm) * 60 - tz_s
    while t <= now:
        t += DAY
    return t


def next_every(scheduled, interval, now):
    """The first scheduled + k*interval after `now` (k >= 1): no drift, no catch-up."""
    if scheduled > now:
        return scheduled
    return scheduled + ((now - scheduled) // interval + 1) * interval


def first_run(s, job, now):
    if job["kind"] == "every":
        return now + job["interval_s"]
    if job["kind"] == "at":
        return job["at_epoch"]
    return next_daily(job["daily_at"], s.tz(), now)


def save(s):
    """OSError when the file could not be written (the jobs in RAM stay)."""
    # One job per line: readable, and still plain JSON.
    fs.write_atomic(s.path, '{"jobs": [\n' + ",\n".join(json.dumps(j) for j in s.jobs) + "\n]}\n")


def saved(s):
    try:
        save(s)
    except OSError as e:
        log.error("cron", "saving %s failed: %s", s.path, fs.why(e))


def _deliver(s, j):
    """A "deliver" job's message, as is, to its chat: False = outbound full."""
    channel, chat_id = j["channel"], j["chat_id"]
    if channel == channels.SYSTEM:
        dest = channels.owner()
        if dest is None:
            log.info("cron", "reminder %s (no owner): %s", j["id"], j["message"][:128])
            return True
        channel, chat_id = dest
    return s.outbound.put(bus.Msg(channel, chat_id, j["message"], bus.REPLY))


def _due(s):
    """The enabled jobs that may fire, with their next run (0: never)."""
    return [j for j in s.jobs if j["enabled"] and j["next_run"] > 0 and blocked(j) is None]


def tick(s, now):
    """Fire every due job of scheduler s once; -> list of ids fired. A full inbound
    (or, for a "deliver" job, outbound) queue leaves the rest due for the next try."""
    if now is None:
        now = s.now()
    fired = []
    with s._lock:
        due = [j for j in _due(s) if j["next_run"] <= now]
        due.sort(key=lambda j: (j["next_run"], s.jobs.index(j)))  # sort is not stable
        for j in due:
            if j.get("deliver"):
                if not _deliver(s, j):
                    log.warning("cron", "outbound queue full; job %s waits", j["id"])
                    break
            else:
                msg = bus.Msg(j["channel"], j["chat_id"], j["message"], meta={"cron": j["id"]})
                if not s.inbound.put(msg):
                    log.warning("cron", "agent busy; job %s waits", j["id"])
                    break
            fired.append(j["id"])
            j["last_run"] = now
            if j["kind"] == "every":
                j["next_run"] = next_every(j["next_run"], j["interval_s"], now)
            elif j["kind"] == "daily":
                j["next_run"] = next_daily(j["daily_at"], s.tz(), now)
            elif j["delete_after_run"]:
                s.jobs.remove(j)
            else:
                j["enabled"] = False
                j["next_run"] = 0
            log.info("cron", "fired %s %r -> %s:%s", j["id"], j["name"], j["channel"], j["chat_id"])
        if fired:
            saved(s)
    return fired


def next_s(s, now):
    """Unix time of the next due job (still due, the queue was full: in CRON_BUSY_RETRY_S;
    none: far ahead, past CRON_AT_MAX)."""
    with s._lock:
        nxt = [j["next_run"] for j in _due(s)]
    if not nxt:
        return limits.CRON_AT_MAX + 1
    n = min(nxt)
    return now + limits.CRON_BUSY_RETRY_S if n <= now else n


def sleep_s(s, now):
    """Seconds until the next due job, within 1..CRON_TICK_S."""
    if now is None:
        now = s.now()
    return min(next_s(s, now) - now, limits.CRON_TICK_S)


def step(s, now):
    """The scheduler's wake with a job due (or the jobs changed): the due ones fired
    -> the Unix time to look again."""
    tick(s, now)
    return next_s(s, now)
