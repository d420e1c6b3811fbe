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
#    the next due job, holding only its time (looking at the clock at least every
#    limits.CRON_TICK_S), woken early by a change of the jobs or the settings.
# Firing the due jobs and the schedules' arithmetic are in services/crontick.py,
# loaded when a job is due; loading cron.json (with its repairs) and checking a new
# job, in services/cronjobs.py: each loaded for that and dropped after.
import _thread
import asyncio
import mimi
from mimi import limits, log, bus, board, channels
from mimi.config.settings import tz_s

PATH = limits.SPIFFS + "/cron.json"
_JOBS = "services.cronjobs services.crontick"  # (cronjobs.py uses crontick.py's arithmetic)


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
        self._woken = False  # wake() came: look at the jobs again

    def now(self):
        return self.clock.unix()

    # --- persistence -------------------------------------------------------
    def load(self):
        """Read cron.json; bad entries are repaired or dropped (logged), never fatal.
        -> the list of problems found."""
        with self._lock:
            problems = mimi.run(_JOBS, "load", self)
        self.wake()
        return problems

    def _ensure(self):
        if not self.loaded:  # first use, from the loop or the agent thread
            with self._lock:
                if not self.loaded:
                    mimi.run(_JOBS, "load", self)

    # --- jobs ----------------------------------------------------------------
    def _jobs(self, fn, *args, **kw):
        """cronjobs.py's fn on the jobs; the scheduler looks at them again."""
        self._ensure()
        try:
            return mimi.run(_JOBS, fn, self, *args, **kw)
        finally:
            self.wake()

    def add(self, *args, **kw):
        """(name, kind, message, channel=channels.SYSTEM, chat_id="cron", interval_s=None,
        at_epoch=None, daily_at=None, delete_after_run=None, deliver=False): the new job
        (dict, saved); ValueError with a message for the user when refused or when it
        could not be saved (cronjobs.new_job())."""
        return self._jobs("new_job", *args, **kw)

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

    # --- running (services/crontick.py) ----------------------------------------
    def tick(self, now=None):
        """Fire every due job once; -> list of ids fired."""
        self._ensure()
        return mimi.run("services.crontick", "tick", self, now)

    def sleep_s(self, now=None):
        """Seconds until the next due job, within 1..CRON_TICK_S."""
        return mimi.run("services.crontick", "sleep_s", self, now)

    def wake(self):
        """The jobs or the settings changed (any thread): the scheduler looks again."""
        self._woken = True
        if self._wake is not None:
            self._wake.set()  # safe from the agent thread

    async def run(self):
        from mimi.services import ntp

        self._wake = asyncio.ThreadSafeFlag()
        await ntp.wait_valid()
        self._ensure()
        self.rebase()
        log.info("cron", "scheduler running, %d job(s)", len(self.jobs))
        due = 0  # the Unix time of the next due job: all this frame keeps between two
        while True:
            now = self.now()
            if self._woken or now >= due:
                self._woken = False
                try:
                    due = mimi.run("services.crontick", "step", self, now)
                except Exception as e:  # keep the scheduler alive whatever one job does
                    log.exception("cron", "tick failed", e)
                    due = now + limits.CRON_TICK_S
            ring = asyncio.create_task(bus.ring(self._wake, 1000 * max(1, min(due - now, limits.CRON_TICK_S))))
            try:
                await self._wake.wait()
            finally:
                ring.cancel()


service = Scheduler()


def _watch(keys):
    if "tz" in keys and service.loaded:
        service.retime_daily()
    service.wake()  # (an allow-list changed: a job may fire, or not, now)


def task():
    from mimi.config.settings import cfg

    cfg.watch(_watch)
    return service.run()
