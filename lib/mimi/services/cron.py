# Cron: jobs in /spiffs/cron.json that become agent turns in their chat.
#
# Kinds: "every" (interval_s, at least CRON_MIN_INTERVAL_S), "at" (at_epoch, one
# shot) and "daily" (daily_at "HH:MM" in the configured UTC offset `tz`, this
# firmware's extension). A job fires by putting a bus.Msg on bus.inbound with the
# job's channel and chat id, so the agent answers it in that chat. Times are Unix
# seconds from board.clock.
#  - no drift: an "every" job's next run is its previous *scheduled* time plus
#    whole intervals, skipping the ones that were missed;
#  - a job that fell due while the board was off fires once after boot;
#  - a full inbound queue leaves the job due, and it is tried again shortly;
#  - a job with "deliver": true (this firmware's extension, for plain reminders)
#    skips the agent: its message goes as is onto bus.outbound as a REPLY to its
#    chat (a system job to the owner, channels.owner(), or the log); a full
#    outbound queue leaves it due, like a full inbound queue;
#  - a job for a channel this firmware does not have (channels.TABLE), or for a chat
#    its channel's allow-list does not name, is kept as it is, reported at load and
#    in cron_list, and not fired (a chat allowed later gets its jobs again);
#  - the scheduler starts only once the clock is valid (SNTP), and sleeps until
#    the next due job (at most limits.CRON_TICK_S), woken early by cron_add.
# Loading cron.json (with its repairs) and checking a new job are in
# services/cronjobs.py, loaded for that and dropped after.
import json
import _thread
import asyncio
import mimi
from mimi import limits, log, fs, bus, board, channels
from mimi.config.settings import tz_s

PATH = limits.SPIFFS + "/cron.json"
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


def has_channel(channel):
    """Does this firmware have the channel's code? (Else its jobs wait, unfired.)"""
    row = channels.find(channel)
    return row is not None and row.module is not None


def blocked(j):
    """Why job j is not fired (None: it is): a channel this firmware lacks, or a chat
    its channel's allow-list does not name."""
    if not has_channel(j["channel"]):
        return "this firmware has no channel %r" % j["channel"]
    allow = channels.find(j["channel"]).allow
    if allow:
        from mimi.config.settings import cfg

        if j["chat_id"] not in cfg.get(allow).split(","):
            return "chat %s is not in %s" % (j["chat_id"], allow)
    return None


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
        """Read cron.json; bad entries are repaired or dropped (logged), never fatal.
        -> the list of problems found."""
        with self._lock:
            return mimi.run("services.cronjobs", "load", self)

    def _save(self):
        """OSError when the file could not be written (the jobs in RAM stay)."""
        # One job per line: readable, and still plain JSON.
        fs.write_atomic(self.path, '{"jobs": [\n' + ",\n".join(json.dumps(j) for j in self.jobs) + "\n]}\n")

    def _saved(self):
        try:
            self._save()
        except OSError as e:
            log.error("cron", "saving %s failed: %s", self.path, fs.why(e))

    def _ensure(self):
        if not self.loaded:  # first use, from the loop or the agent thread
            with self._lock:
                if not self.loaded:
                    mimi.run("services.cronjobs", "load", self)

    # --- jobs ----------------------------------------------------------------
    def _jobs(self, fn, *args):
        self._ensure()
        return mimi.run("services.cronjobs", fn, self, *args)

    def add(self, name, kind, message, channel=channels.SYSTEM, chat_id="cron", interval_s=None,
            at_epoch=None, daily_at=None, delete_after_run=None, deliver=False):
        """The new job (dict, saved); ValueError with a message for the user when
        refused or when it could not be saved."""
        job = self._jobs("new_job", name, kind, message, channel, chat_id, interval_s, at_epoch,
                         daily_at, delete_after_run, deliver)
        self.wake()
        return job

    def remove(self, job_id):
        """True when removed; ValueError when it could not be saved (the job stays)."""
        return self._jobs("remove", job_id)

    def rebase(self):
        """Once the clock is valid: jobs scheduled from an unset clock start now."""
        self._jobs("rebase")

    def retime_daily(self):
        """The UTC offset changed: daily jobs follow the new local time."""
        self._jobs("retime_daily")

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
    def first_run(self, job, now):
        if job["kind"] == "every":
            return now + job["interval_s"]
        if job["kind"] == "at":
            return job["at_epoch"]
        return next_daily(job["daily_at"], self.tz(), now)

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

    def _due(self, now):
        """The enabled jobs that may fire, with their next run (0: never)."""
        return [j for j in self.jobs if j["enabled"] and j["next_run"] > 0 and blocked(j) is None]

    def tick(self, now=None):
        """Fire every due job once; -> list of ids fired. A full inbound (or, for a
        "deliver" job, outbound) queue leaves the rest due for the next try."""
        self._ensure()
        if now is None:
            now = self.now()
        fired = []
        with self._lock:
            due = [j for j in self._due(now) if j["next_run"] <= now]
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
                self._saved()
        return fired

    def sleep_s(self, now=None):
        """Seconds until the next due job, within 1..CRON_TICK_S."""
        if now is None:
            now = self.now()
        with self._lock:
            nxt = [j["next_run"] for j in self._due(now)]
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
        from mimi.services import ntp

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
            ring = asyncio.create_task(bus.ring(self._wake, int(delay * 1000)))
            try:
                await self._wake.wait()
            finally:
                ring.cancel()


service = Scheduler()


def _watch(keys):
    if "tz" in keys and service.loaded:
        service.retime_daily()


def task():
    from mimi.config.settings import cfg

    cfg.watch(_watch)
    return service.run()
