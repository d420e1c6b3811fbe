# Cron: jobs in /spiffs/cron.json that become agent turns in their chat.
#
# Kinds: "every" (interval_s), "at" (at_epoch, one shot) and "daily" (daily_at
# "HH:MM" in the configured UTC offset `tz`, this firmware's extension). A job
# fires by putting a bus.Msg on bus.inbound with the job's channel and chat id, so
# the agent answers it in that chat. Times are Unix seconds from board.clock.
#  - no drift: an "every" job's next run is its previous *scheduled* time plus
#    whole intervals, skipping the ones that were missed;
#  - a job that fell due while the board was off fires once after boot;
#  - a full inbound queue leaves the job due, and it is tried again shortly;
#  - a job with "deliver": true (this firmware's extension, for plain reminders)
#    skips the agent: its message goes as is onto bus.outbound as a REPLY to its
#    chat (a system job to the owner, channels.owner(), or the log); a full
#    outbound queue leaves it due, like a full inbound queue;
#  - a job for a channel this firmware does not have (channels.TABLE) is kept as
#    it is, reported at load and in cron_list, and never fired;
#  - the scheduler starts only once the clock is valid (SNTP), and sleeps until
#    the next due job (at most limits.CRON_TICK_S), woken early by cron_add.
import json
import _thread
import asyncio
from mimi import limits, log, fs, bus, board, channels
from mimi.board.clock import VALID_AFTER
from mimi.services import ntp
from mimi.config import tz_s
from mimi.net import random_id

PATH = limits.SPIFFS + "/cron.json"
KINDS = ("every", "at", "daily")
DAY = 86400


def new_id():
    return random_id(4)


def is_id(v):
    return isinstance(v, str) and len(v) == 8 and all(c in "0123456789abcdef" for c in v)


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


def _int(v):
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def has_channel(channel):
    """Does this firmware have the channel's code? (Else its jobs wait, unfired.)"""
    row = channels.find(channel)
    return row is not None and row.module is not None


class Scheduler:
    def __init__(self, path=PATH, clock=None, inbound=None, tz=tz_s, outbound=None):
        self.path = path
        self.clock = board.clock if clock is None else clock
        self.inbound = bus.inbound if inbound is None else inbound  # an empty Queue is falsy
        self.outbound = bus.outbound if outbound is None else outbound
        self.tz = tz
        self.jobs = []
        self.loaded = False
        self._lock = _thread.allocate_lock()
        self._wake = None

    def now(self):
        return self.clock.unix()

    # --- persistence -------------------------------------------------------
    def load(self):
        """Read cron.json; bad entries are repaired or dropped (logged), never fatal."""
        with self._lock:
            return self._load()

    def _load(self):
        problems = []
        raw = None
        size = fs.size(self.path)
        if size < 0:
            raw = {"jobs": []}
        elif size > limits.CRON_FILE_MAX:
            problems.append("file is %d bytes (max %d)" % (size, limits.CRON_FILE_MAX))
        else:
            try:
                raw = json.loads(fs.read_text(self.path))
            except (OSError, ValueError) as e:
                problems.append("not valid JSON (%s)" % e)
        if raw is not None and not (isinstance(raw, dict) and isinstance(raw.get("jobs"), list)):
            problems.append('no "jobs" list')
            raw = None
        jobs = []
        if raw is None:
            bad = self.path + ".bad"
            fs.remove(bad)
            try:
                fs.rename(self.path, bad)
                problems.append("kept the old file as " + bad)
            except OSError:
                pass
        else:
            now = self.now()
            for i, entry in enumerate(raw["jobs"]):
                if len(jobs) >= limits.CRON_MAX_JOBS:
                    problems.append("more than %d jobs; the rest dropped" % limits.CRON_MAX_JOBS)
                    break
                job, why = self._repair(entry, now, [j["id"] for j in jobs])
                if job is None:
                    problems.append("job #%d dropped: %s" % (i + 1, why))
                else:
                    if why:
                        problems.append("job %s repaired: %s" % (job["id"], why))
                    jobs.append(job)
        self.jobs = jobs
        self.loaded = True
        if problems:
            self._save()
        for p in problems:
            log.warning("cron", "%s: %s", self.path, p)
        for j in jobs:
            if not has_channel(j["channel"]):
                log.warning("cron", "job %s is for channel %r, which this firmware does not have: "
                            "kept, not run", j["id"], j["channel"])
        log.info("cron", "%d job(s) loaded", len(jobs))
        return problems

    def _repair(self, e, now, taken):
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
            job["id"] = new_id()
            while job["id"] in taken:
                job["id"] = new_id()
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
            job["interval_s"] = iv
        elif kind == "at":
            at = _int(e.get("at_epoch"))
            if at is None or at <= 0:
                return None, "at without at_epoch"
            job["at_epoch"] = at
            if job["enabled"] and job["next_run"] != at:
                job["next_run"] = at
        else:
            try:
                parse_hhmm(e.get("daily_at"))
            except ValueError:
                return None, "daily without a valid daily_at"
            job["daily_at"] = e.get("daily_at").strip()
        if job["enabled"] and (job["next_run"] is None or job["next_run"] <= 0):
            job["next_run"] = self._first_run(job, now)
            notes.append("next_run")
        elif not job["enabled"]:
            job["next_run"] = job["next_run"] or 0
        return job, ", ".join(notes)

    def _first_run(self, job, now):
        if job["kind"] == "every":
            return now + job["interval_s"]
        if job["kind"] == "at":
            return job["at_epoch"]
        return next_daily(job["daily_at"], self.tz(), now)

    def _save(self):
        # One job per line: readable, and still plain JSON.
        text = '{"jobs": [\n' + ",\n".join(json.dumps(j) for j in self.jobs) + "\n]}\n"
        try:
            fs.write_atomic(self.path, text)
        except OSError as e:
            log.error("cron", "saving %s failed: %s", self.path, e)

    def _ensure(self):
        if not self.loaded:  # first use, from the loop or the agent thread
            with self._lock:
                if not self.loaded:
                    self._load()

    # --- jobs ----------------------------------------------------------------
    def add(self, name, kind, message, channel=channels.SYSTEM, chat_id="cron", interval_s=None,
            at_epoch=None, daily_at=None, delete_after_run=None, deliver=False):
        """The new job (dict); ValueError with a message for the user when refused."""
        self._ensure()
        now = self.now()
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
        if channels.get(channel).allow and chat_id in ("", "cron"):
            raise ValueError("a %s job needs the chat_id of the chat to answer in" % channel)
        if not chat_id:
            chat_id = "cron"
        if not self.clock.valid() or now < VALID_AFTER:
            raise ValueError("the clock is not set yet (no time sync); try again in a minute")
        job = {"id": "", "name": (str(name or "") or "job")[:limits.CRON_NAME_MAX],
               "enabled": True, "kind": kind, "interval_s": 0, "at_epoch": 0,
               "message": message[:limits.CRON_MESSAGE_MAX], "channel": channel,
               "chat_id": chat_id[:limits.CRON_CHAT_ID_MAX], "last_run": 0, "next_run": 0,
               "delete_after_run": kind == "at" if delete_after_run is None else bool(delete_after_run)}
        if kind == "every":
            if _int(interval_s) is None or interval_s <= 0:
                raise ValueError("'every' needs interval_s > 0 (seconds)")
            job["interval_s"] = interval_s
        elif kind == "at":
            if _int(at_epoch) is None:
                raise ValueError("'at' needs at_epoch (Unix seconds)")
            if at_epoch <= now:
                raise ValueError("at_epoch %d is not in the future (now is %d)" % (at_epoch, now))
            job["at_epoch"] = at_epoch
        else:
            if daily_at is None:
                raise ValueError("'daily' needs time as \"HH:MM\" (24-hour, local time)")
            parse_hhmm(daily_at)
            job["daily_at"] = str(daily_at).strip()
        if deliver:
            job["deliver"] = True
        job["next_run"] = self._first_run(job, now)
        with self._lock:
            if len(self.jobs) >= limits.CRON_MAX_JOBS:
                raise ValueError("too many cron jobs (max %d); remove one with cron_remove first"
                                 % limits.CRON_MAX_JOBS)
            ids = [j["id"] for j in self.jobs]
            job["id"] = new_id()
            while job["id"] in ids:
                job["id"] = new_id()
            self.jobs.append(job)
            self._save()
        self.wake()
        log.info("cron", "added %s %r (%s), next run %d", job["id"], job["name"], kind, job["next_run"])
        return dict(job)

    def remove(self, job_id):
        self._ensure()
        with self._lock:
            for j in self.jobs:
                if j["id"] == job_id:
                    self.jobs.remove(j)
                    self._save()
                    log.info("cron", "removed %s", job_id)
                    return True
        return False

    def list(self):
        self._ensure()
        with self._lock:
            return [dict(j) for j in self.jobs]

    def get(self, job_id):
        for j in self.list():
            if j["id"] == job_id:
                return j
        return None

    # --- running -------------------------------------------------------------
    def rebase(self):
        """Once the clock is valid: jobs scheduled from an unset clock start now."""
        now = self.now()
        with self._lock:
            changed = False
            for j in self.jobs:
                if j["enabled"] and j["kind"] != "at" and 0 < j["next_run"] < VALID_AFTER:
                    j["next_run"] = self._first_run(j, now)
                    changed = True
            if changed:
                self._save()

    def retime_daily(self):
        """The UTC offset changed: daily jobs follow the new local time."""
        now = self.now()
        with self._lock:
            for j in self.jobs:
                if j["enabled"] and j["kind"] == "daily":
                    j["next_run"] = next_daily(j["daily_at"], self.tz(), now)
            self._save()

    def _deliver(self, j):
        """A "deliver" job's message, as is, to its chat: False = outbound full."""
        channel, chat_id = j["channel"], j["chat_id"]
        if channel == channels.SYSTEM:
            dest = channels.owner()
            if dest is None:
                log.info("cron", "reminder %s (no owner): %s", j["id"], j["message"][:128])
                return True
            channel, chat_id = dest
        return self.outbound.put(bus.Msg(channel, chat_id, j["message"], bus.REPLY))

    def tick(self, now=None):
        """Fire every due job once; -> list of ids fired. A full inbound (or, for a
        "deliver" job, outbound) queue leaves the rest due for the next try."""
        self._ensure()
        if now is None:
            now = self.now()
        fired = []
        with self._lock:
            due = [j for j in self.jobs if j["enabled"] and 0 < j["next_run"] <= now and has_channel(j["channel"])]
            due.sort(key=lambda j: (j["next_run"], self.jobs.index(j)))  # sort is not stable
            for j in due:
                if j.get("deliver"):
                    if not self._deliver(j):
                        log.warning("cron", "outbound queue full; job %s waits", j["id"])
                        break
                else:
                    msg = bus.Msg(j["channel"], j["chat_id"], j["message"], meta={"cron": j["id"]})
                    if not self.inbound.put(msg):
                        log.warning("cron", "agent busy; job %s waits", j["id"])
                        break
                fired.append(j["id"])
                j["last_run"] = now
                if j["kind"] == "every":
                    j["next_run"] = next_every(j["next_run"], j["interval_s"], now)
                elif j["kind"] == "daily":
                    j["next_run"] = next_daily(j["daily_at"], self.tz(), now)
                elif j["delete_after_run"]:
                    self.jobs.remove(j)
                else:
                    j["enabled"] = False
                    j["next_run"] = 0
                log.info("cron", "fired %s %r -> %s:%s", j["id"], j["name"], j["channel"], j["chat_id"])
            if fired:
                self._save()
        return fired

    def sleep_s(self, now=None):
        """Seconds until the next due job, within 1..CRON_TICK_S."""
        if now is None:
            now = self.now()
        with self._lock:
            nxt = [j["next_run"] for j in self.jobs if j["enabled"] and j["next_run"] > 0 and has_channel(j["channel"])]
        if not nxt:
            return limits.CRON_TICK_S
        delay = min(nxt) - now
        if delay <= 0:  # still due: the queue was full
            return limits.CRON_BUSY_RETRY_S
        return min(delay, limits.CRON_TICK_S)

    def wake(self):
        if self._wake is not None:
            self._wake.set()  # safe from the agent thread

    async def run(self):
        self._wake = asyncio.ThreadSafeFlag()
        await ntp.wait_valid()
        self._ensure()
        self.rebase()
        log.info("cron", "scheduler running, %d job(s)", len(self.jobs))
        while True:
            try:
                self.tick()
                delay = self.sleep_s()
            except Exception as e:  # keep the scheduler alive whatever one job does
                log.exception("cron", "tick failed", e)
                delay = limits.CRON_TICK_S
            try:
                await asyncio.wait_for_ms(self._wake.wait(), int(delay * 1000))
            except asyncio.TimeoutError:
                pass


service = Scheduler()


def _watch(keys):
    if "tz" in keys and service.loaded:
        service.retime_daily()


def task():
    from mimi.config import cfg

    cfg.watch(_watch)
    return service.run()
