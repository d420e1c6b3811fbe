# The cron scheduler's occasional work (services/cron.py loads this, with crontick.py,
# for it and drops it after): reading cron.json, with every bad entry repaired or
# dropped and reported, and checking a new job before it is added and saved.
import json
from mimi import limits, log, fs, channels
from mimi.board.clock import VALID_AFTER
from mimi.net import random_id
from mimi.services.cron import has_channel, blocked
from mimi.services.crontick import parse_hhmm, next_daily, first_run, save, saved

KINDS = ("every", "at", "daily")


def is_id(v):
    return isinstance(v, str) and len(v) == 8 and all(c in "0123456789abcdef" for c in v)


def _new_id(taken):
    i = random_id(4)
    while i in taken:
        i = random_id(4)
    return i


def _int(v):
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def load(s):
    """Read s.path into s.jobs (s: the Scheduler, its lock held) -> problems found."""
    problems = []
    raw = None
    size = fs.size(s.path)
    if size < 0:
        raw = {"jobs": []}
    elif size > limits.CRON_FILE_MAX:
        problems.append("file is %d bytes (max %d)" % (size, limits.CRON_FILE_MAX))
    else:
        try:
            raw = json.loads(fs.read_text(s.path))
        except (OSError, ValueError) as e:
            problems.append("not valid JSON (%s)" % e)
    if raw is not None and not (isinstance(raw, dict) and isinstance(raw.get("jobs"), list)):
        problems.append('no "jobs" list')
        raw = None
    jobs = []
    if raw is None:
        bad = s.path + ".bad"
        fs.remove(bad)
        try:
            fs.rename(s.path, bad)
            problems.append("kept the old file as " + bad)
        except OSError:
            pass
    else:
        now = s.now()
        for i, entry in enumerate(raw["jobs"]):
            if len(jobs) >= limits.CRON_MAX_JOBS:
                problems.append("more than %d jobs; the rest dropped" % limits.CRON_MAX_JOBS)
                break
            job, why = _repair(s, entry, now, [j["id"] for j in jobs])
            if job is None:
                problems.append("job #%d dropped: %s" % (i + 1, why))
            else:
                if why:
                    problems.append("job %s repaired: %s" % (job["id"], why))
                jobs.append(job)
    s.jobs = jobs
    s.loaded = True
    if problems:
        saved(s)
    for p in problems:
        log.warning("cron", "%s: %s", s.path, p)
    for j in jobs:
        why = blocked(j)
        if why:
            log.warning("cron", "job %s (%s:%s) kept, not run: %s", j["id"], j["channel"], j["chat_id"], why)
    log.info("cron", "%d job(s) loaded", len(jobs))
    return problems


def _repair(s, e, now, taken):
    """(clean job, note) or (None, reason)."""
    if not isinstance(e, dict):
        return None, "not an object"
    kind = e.get("kind")
    if kind not in KINDS:
        return None, "unknown kind %r" % (kind,)
    msg = e.get("message")
    if not isinstance(msg, str) or not msg.strip():
        return None, "no message"
    notes = []
    job = {"id": e.get("id"), "name": e.get("name"), "enabled": e.get("enabled", True),
           "kind": kind, "interval_s": 0, "at_epoch": 0, "message": msg[:limits.CRON_MESSAGE_MAX],
           "channel": e.get("channel"), "chat_id": e.get("chat_id"),
           "last_run": _int(e.get("last_run")) or 0, "next_run": _int(e.get("next_run")),
           "delete_after_run": e.get("delete_after_run", kind == "at")}
    if not is_id(job["id"]) or job["id"] in taken:
        job["id"] = _new_id(taken)
        notes.append("new id")
    if not isinstance(job["name"], str) or not job["name"]:
        job["name"] = "job-" + job["id"]
        notes.append("name")
    job["name"] = job["name"][:limits.CRON_NAME_MAX]
    if not isinstance(job["enabled"], bool):
        job["enabled"] = True
        notes.append("enabled")
    if not isinstance(job["delete_after_run"], bool):
        job["delete_after_run"] = kind == "at"
    if e.get("deliver") is True:
        job["deliver"] = True
    if job["channel"] in (None, ""):  # optional in MimiClaw's format: a system job
        job["channel"], job["chat_id"] = channels.SYSTEM, "cron"
        notes.append("channel")
    if not isinstance(job["chat_id"], str) or not job["chat_id"]:
        job["chat_id"] = str(job["chat_id"]) if _int(job["chat_id"]) is not None else "cron"
    job["chat_id"] = job["chat_id"][:limits.CRON_CHAT_ID_MAX]
    if kind == "every":
        iv = _int(e.get("interval_s"))
        if not iv or iv <= 0:
            return None, "every without a positive interval_s"
        if not limits.CRON_MIN_INTERVAL_S <= iv <= limits.CRON_MAX_INTERVAL_S:
            iv = min(max(iv, limits.CRON_MIN_INTERVAL_S), limits.CRON_MAX_INTERVAL_S)
            notes.append("interval_s %d" % iv)
        job["interval_s"] = iv
    elif kind == "at":
        at = _int(e.get("at_epoch"))
        if at is None or not 0 < at <= limits.CRON_AT_MAX:
            return None, "at without a valid at_epoch"
        job["at_epoch"] = at
        if job["enabled"] and job["next_run"] != at:
            job["next_run"] = at
    else:
        try:
            parse_hhmm(e.get("daily_at"))
        except ValueError:
            return None, "daily without a valid daily_at"
        job["daily_at"] = e.get("daily_at").strip()
    if job["next_run"] is not None and not 0 <= job["next_run"] <= limits.CRON_AT_MAX:
        job["next_run"] = None
    if job["enabled"] and (job["next_run"] is None or job["next_run"] <= 0):
        job["next_run"] = first_run(s, job, now)
        notes.append("next_run")
    elif not job["enabled"]:
        job["next_run"] = job["next_run"] or 0
    return job, ", ".join(notes)


def new_job(s, name, kind, message, channel=channels.SYSTEM, chat_id="cron", interval_s=None,
            at_epoch=None, daily_at=None, delete_after_run=None, deliver=False):
    """Check, add and save a job on scheduler s -> the job; ValueError for the user."""
    now = s.now()
    if kind not in KINDS:
        raise ValueError("schedule_type must be 'every', 'at' or 'daily'")
    if not isinstance(message, str) or not message.strip():
        raise ValueError("'message' must not be empty")
    if not has_channel(channel):
        raise ValueError("channel must be one of: " + ", ".join(r.name for r in channels.available()))
    if deliver is None:
        deliver = False
    if not isinstance(deliver, bool):
        raise ValueError("'deliver' must be true or false")
    chat_id = str(chat_id or "")
    row = channels.get(channel)
    if row.allow and chat_id in ("", "cron"):
        raise ValueError("a %s job needs the chat_id of the chat to answer in" % channel)
    if not chat_id:
        chat_id = "cron"
    if not s.clock.valid() or now < VALID_AFTER:
        raise ValueError("the clock is not set yet (no time sync); try again in a minute")
    job = {"id": "", "name": (str(name or "") or "job")[:limits.CRON_NAME_MAX],
           "enabled": True, "kind": kind, "interval_s": 0, "at_epoch": 0,
           "message": message[:limits.CRON_MESSAGE_MAX], "channel": channel,
           "chat_id": chat_id[:limits.CRON_CHAT_ID_MAX], "last_run": 0, "next_run": 0,
           "delete_after_run": kind == "at" if delete_after_run is None else bool(delete_after_run)}
    why = blocked(job)
    if why:
        raise ValueError("%s (allow the chat first)" % why)
    if kind == "every":
        if _int(interval_s) is None or interval_s <= 0:
            raise ValueError("'every' needs interval_s > 0 (seconds)")
        if not limits.CRON_MIN_INTERVAL_S <= interval_s <= limits.CRON_MAX_INTERVAL_S:
            raise ValueError("interval_s must be between %d and %d seconds" % (
                limits.CRON_MIN_INTERVAL_S, limits.CRON_MAX_INTERVAL_S))
        job["interval_s"] = interval_s
    elif kind == "at":
        if _int(at_epoch) is None:
            raise ValueError("'at' needs at_epoch (Unix seconds)")
        if at_epoch <= now:
            raise ValueError("at_epoch %d is not in the future (now is %d)" % (at_epoch, now))
        if at_epoch > limits.CRON_AT_MAX:
            raise ValueError("at_epoch %d is too far ahead (at most %d, the year 2100)" % (at_epoch, limits.CRON_AT_MAX))
        job["at_epoch"] = at_epoch
    else:
        if daily_at is None:
            raise ValueError("'daily' needs time as \"HH:MM\" (24-hour, local time)")
        parse_hhmm(daily_at)
        job["daily_at"] = str(daily_at).strip()
    if deliver:
        job["deliver"] = True
    job["next_run"] = first_run(s, job, now)
    with s._lock:
        if len(s.jobs) >= limits.CRON_MAX_JOBS:
            raise ValueError("too many cron jobs (max %d); remove one with cron_remove first"
                             % limits.CRON_MAX_JOBS)
        job["id"] = _new_id([j["id"] for j in s.jobs])
        s.jobs.append(job)
        try:
            save(s)
        except OSError as e:
            s.jobs.remove(job)
            raise ValueError("not saved (%s); the job was not added" % fs.why(e))
    log.info("cron", "added %s %r (%s), next run %d", job["id"], job["name"], kind, job["next_run"])
    return dict(job)


def remove(s, job_id):
    """True when removed; ValueError when it could not be saved (the job stays)."""
    with s._lock:
        for i, j in enumerate(s.jobs):
            if j["id"] == job_id:
                del s.jobs[i]
                try:
                    save(s)
                except OSError as e:
                    s.jobs.insert(i, j)
                    raise ValueError("not saved (%s); the job stays" % fs.why(e))
                log.info("cron", "removed %s", job_id)
                return True
    return False


def rebase(s):
    """Once the clock is valid: jobs scheduled from an unset clock start now."""
    now = s.now()
    with s._lock:
        changed = False
        for j in s.jobs:
            if j["enabled"] and j["kind"] != "at" and 0 < j["next_run"] < VALID_AFTER:
                j["next_run"] = first_run(s, j, now)
                changed = True
        if changed:
            saved(s)


def retime_daily(s):
    """The UTC offset changed: daily jobs follow the new local time."""
    now = s.now()
    with s._lock:
        for j in s.jobs:
            if j["enabled"] and j["kind"] == "daily":
                j["next_run"] = next_daily(j["daily_at"], s.tz(), now)
        saved(s)
