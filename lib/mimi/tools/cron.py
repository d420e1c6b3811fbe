# cron_add, cron_list, cron_remove (MimiClaw's schemas and result strings), plus
# this firmware's daily form: schedule_type "daily" with time "HH:MM" (local time
# in the `tz` setting), and "deliver": true, which sends the message itself, as
# is, to the chat when the job fires (no LLM turn: for plain reminders).
#
# Where the answer goes: a job made during a turn in a person's chat (a channel
# with a label in channels.TABLE) always answers in that chat (channel/chat_id are
# filled from the turn; naming another chat is refused, so one chat can never
# schedule messages into another). From the REPL or a system turn the arguments
# decide; the default is the system channel, whose answers are delivered to the
# owner (see services/heartbeat.send).
from mimi.services.cron import service, blocked
from mimi import board, channels
from mimi.config.settings import tz_s


def _dest(args, ctx):
    """(channel, chat_id, None) or (None, None, error)."""
    channel = (args.get("channel") or "").strip()
    chat_id = args.get("chat_id")
    chat_id = "" if chat_id is None else str(chat_id).strip()
    row = channels.find(getattr(ctx, "channel", None))
    if row is not None and row.label:
        here, here_id = row.name, str(ctx.chat_id)
        if channel and channel != here:
            return None, None, "Error: a job made in this chat can only answer in this chat (%s)" % here
        if chat_id and chat_id not in ("cron", here_id):
            return None, None, "Error: a job made in this chat can only answer in this chat (chat_id %s)" % here_id
        return here, here_id, None
    return channel or channels.SYSTEM, chat_id or "cron", None


def _local(epoch):
    return board.clock.local_str(tz_s(), epoch)


def cron_add(args, ctx):
    kind = (args.get("schedule_type") or "").strip().lower()
    channel, chat_id, err = _dest(args, ctx)
    if err:
        return err
    try:
        job = service.add(args.get("name"), kind, args.get("message"), channel, chat_id,
                          interval_s=args.get("interval_s"), at_epoch=args.get("at_epoch"),
                          daily_at=args.get("time"), delete_after_run=args.get("delete_after_run"),
                          deliver=args.get("deliver", False))
    except ValueError as e:
        return "Error: %s" % e
    return _added(job, kind) + (" Its message will be sent as is (deliver)." if job.get("deliver") else "")


def _added(job, kind):
    if kind == "every":
        return "OK: Added recurring job '%s' (id=%s), runs every %d seconds. Next run at epoch %d." % (
            job["name"], job["id"], job["interval_s"], job["next_run"])
    if kind == "at":
        return "OK: Added one-shot job '%s' (id=%s), fires at epoch %d. Will be %s after firing." % (
            job["name"], job["id"], job["at_epoch"], "deleted" if job["delete_after_run"] else "disabled")
    return "OK: Added daily job '%s' (id=%s), runs every day at %s local time. Next run at epoch %d (%s)." % (
        job["name"], job["id"], job["daily_at"], job["next_run"], _local(job["next_run"]))


def describe(j):
    if j["kind"] == "every":
        when = "every %ds" % j["interval_s"]
    elif j["kind"] == "at":
        when = "at %d" % j["at_epoch"]
    else:
        when = "daily %s" % j["daily_at"]
    return '[%s] "%s" — %s, %s, next=%s, last=%s, ch=%s:%s%s' % (
        j["id"], j["name"], when, ("enabled" if j["enabled"] else "disabled") + (", deliver" if j.get("deliver") else ""),
        j["next_run"] or "none", j["last_run"] or "never", j["channel"], j["chat_id"],
        "" if blocked(j) is None else " (not run: %s)" % blocked(j))


def cron_list(args, ctx):
    jobs = service.list()
    if not jobs:
        return "No cron jobs scheduled."
    return "Scheduled jobs (%d):\n%s" % (len(jobs), "\n".join(describe(j) for j in jobs))


def cron_remove(args, ctx):
    job_id = str(args.get("job_id") or "").strip()
    if service.remove(job_id):
        return "OK: Removed cron job %s" % job_id
    return "Error: job '%s' not found" % job_id

