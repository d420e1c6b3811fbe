# Cron: every/at/daily scheduling with a fake clock, missed runs, restart, limits,
# cron.json repair, the tools' strings and destinations.
import json
from support import raises, write, read
from mimi import bus, limits, log
from mimi.config.settings import cfg
from mimi.services import cron as cronsvc
from mimi.services.cron import Scheduler
from mimi.services.crontick import next_daily, next_every
from mimi.tools.registry import registry, Ctx
import mimi.tools.cron  # noqa: F401 - registers the tools

T0 = 1800000000  # 2027-01-15 08:00:00 UTC


class FakeClock:
    def __init__(self, t=T0):
        self.t = t

    def unix(self):
        return self.t

    def valid(self):
        return self.t >= 1704067200


def make(t=T0, qlen=16, tz=0):
    clock = FakeClock(t)
    q = bus.Queue(qlen)
    s = Scheduler(clock=clock, inbound=q, tz=lambda: tz)
    s.load()
    return s, clock, q


def drain(q):
    out = []
    while True:
        m = q.get_nowait()
        if m is None:
            return out
        out.append(m)


def setup():
    cfg.load()
    cfg.set("tg_allow", "42,123,77,1")  # jobs for other Telegram chats are kept, not run


def test_every_fires_without_drift_and_skips_missed():
    s, c, q = make()
    j = s.add("tick", "every", "check the plants", "websocket", "abc", interval_s=100)
    assert j["next_run"] == T0 + 100 and len(j["id"]) == 8
    c.t = T0 + 99
    assert s.tick() == []
    c.t = T0 + 107  # fired late: the next run stays on the grid
    assert s.tick() == [j["id"]]
    m = drain(q)[0]
    assert (m.channel, m.chat_id, m.content) == ("websocket", "abc", "check the plants")
    assert s.get(j["id"])["next_run"] == T0 + 200
    assert s.get(j["id"])["last_run"] == T0 + 107
    c.t = T0 + 555  # missed 200, 300, 400, 500: fires once, next at 600
    assert s.tick() == [j["id"]]
    assert len(drain(q)) == 1
    assert s.get(j["id"])["next_run"] == T0 + 600
    assert s.tick() == []


def test_at_fires_once_and_is_deleted_or_disabled():
    s, c, q = make()
    a = s.add("once", "at", "remind me", "websocket", "x", at_epoch=T0 + 30)
    b = s.add("keep", "at", "remind me too", "websocket", "x", at_epoch=T0 + 30, delete_after_run=False)
    c.t = T0 + 30
    assert sorted(s.tick()) == sorted([a["id"], b["id"]])
    assert s.get(a["id"]) is None
    kept = s.get(b["id"])
    assert kept["enabled"] is False and kept["next_run"] == 0
    c.t += 1000
    assert s.tick() == []
    e = raises(ValueError, s.add, "past", "at", "x", "websocket", "x", at_epoch=c.t)
    assert "not in the future" in str(e)


def test_daily_in_local_time():
    # T0 is 08:00 UTC = 16:00 at +08:00
    assert next_daily("16:30", 8 * 3600, T0) == T0 + 1800
    assert next_daily("16:00", 8 * 3600, T0) == T0 + 86400
    assert next_daily("07:00", -5 * 3600, T0) == T0 + 4 * 3600  # 03:00 there now
    s, c, q = make(tz=8 * 3600)
    j = s.add("brief", "daily", "daily briefing", "websocket", "w", daily_at="07:30")
    assert j["next_run"] == T0 + 15.5 * 3600  # tomorrow 07:30 at +08:00 = 23:30 UTC
    c.t = j["next_run"] + 5
    assert s.tick() == [j["id"]]
    assert s.get(j["id"])["next_run"] == j["next_run"] + 86400
    c.t += 3 * 86400  # off for three days: one run, then tomorrow's
    assert s.tick() == [j["id"]] and len(drain(q)) == 2
    assert s.get(j["id"])["next_run"] == j["next_run"] + 4 * 86400
    for bad in ("7", "24:00", "07:60", "7:5", "ab:cd"):
        raises(ValueError, s.add, "x", "daily", "m", "websocket", "w", daily_at=bad)


def test_missed_while_off_fires_once_after_restart():
    s, c, q = make()
    e = s.add("e", "every", "every msg", "websocket", "a", interval_s=60)
    a = s.add("a", "at", "at msg", "websocket", "a", at_epoch=T0 + 100)
    d = s.add("d", "daily", "daily msg", "websocket", "a", daily_at="09:00")
    # the board is off for a day and a half; a new scheduler loads cron.json
    s2, c2, q2 = make(T0 + 36 * 3600)
    assert [j["id"] for j in s2.list()] == [e["id"], a["id"], d["id"]]
    assert sorted(s2.tick()) == sorted([e["id"], a["id"], d["id"]])
    assert sorted(m.content for m in drain(q2)) == ["at msg", "daily msg", "every msg"]
    assert s2.tick() == []
    nxt = s2.get(e["id"])["next_run"]
    assert nxt > c2.t and (nxt - (T0 + 60)) % 60 == 0
    assert s2.get(a["id"]) is None
    # a third boot sees what the second saved
    s3, c3, q3 = make(T0 + 36 * 3600 + 1)
    assert s3.tick() == [] and len(s3.list()) == 2


def test_full_inbound_queue_retries_next_tick():
    s, c, q = make(qlen=1)
    j1 = s.add("one", "at", "first", "websocket", "a", at_epoch=T0 + 10)
    j2 = s.add("two", "at", "second", "websocket", "a", at_epoch=T0 + 11)
    q.put(bus.Msg("websocket", "a", "someone else"))
    c.t = T0 + 20
    assert s.tick() == []
    assert s.sleep_s() == limits.CRON_BUSY_RETRY_S
    drain(q)
    assert s.tick() == [j1["id"]]  # queue holds one: j2 still waits
    assert drain(q)[0].content == "first"
    assert s.tick() == [j2["id"]]
    assert drain(q)[0].content == "second"
    assert s.list() == []


def test_sleep_until_next_job_capped():
    s, c, q = make()
    assert s.sleep_s() == limits.CRON_TICK_S
    s.add("soon", "at", "m", "websocket", "a", at_epoch=T0 + 3)
    assert s.sleep_s() == 3
    s.add("later", "every", "m", "websocket", "a", interval_s=3600)
    assert s.sleep_s() == 3


def test_seventeenth_job_refused():
    s, c, q = make()
    for i in range(limits.CRON_MAX_JOBS):
        s.add("j%d" % i, "every", "m", "websocket", "a", interval_s=60 + i)
    e = raises(ValueError, s.add, "j16", "every", "m", "websocket", "a", interval_s=60)
    assert "too many cron jobs (max 16)" in str(e)
    assert len(s.list()) == 16 and len(set(j["id"] for j in s.list())) == 16


def test_cron_json_format_and_atomic():
    s, c, q = make()
    j = s.add("n", "every", "m", "telegram", "123", interval_s=60)
    raw = json.loads(read(cronsvc.PATH))
    assert list(raw) == ["jobs"]
    saved = raw["jobs"][0]
    spec = {"id", "name", "enabled", "kind", "interval_s", "at_epoch", "message", "channel",
            "chat_id", "last_run", "next_run", "delete_after_run"}  # SPEC §4, exactly
    assert set(saved) == spec, saved
    assert saved["id"] == j["id"] and saved["kind"] == "every" and saved["chat_id"] == "123"
    s.add("a", "at", "m", "telegram", "123", at_epoch=T0 + 60)
    s.add("d", "daily", "m", "telegram", "123", daily_at="07:30")
    jobs = json.loads(read(cronsvc.PATH))["jobs"]
    assert set(jobs[1]) == spec and jobs[1]["at_epoch"] == T0 + 60
    assert set(jobs[2]) == spec | {"daily_at"} and jobs[2]["daily_at"] == "07:30"  # the extension
    for job in jobs:
        assert isinstance(job["chat_id"], str) and isinstance(job["enabled"], bool)
        assert isinstance(job["next_run"], int) and isinstance(job["last_run"], int)
    import os

    assert "cron.json.tmp" not in os.listdir("/spiffs")


def test_garbage_file_is_set_aside():
    write(cronsvc.PATH, "{not json at all")
    log.clear()
    s, c, q = make()
    assert s.list() == []
    assert read(cronsvc.PATH + ".bad") == "{not json at all"
    assert json.loads(read(cronsvc.PATH)) == {"jobs": []}
    assert any("not valid JSON" in line for line in log.recent())
    write(cronsvc.PATH, '{"jobs": 5}')
    s, c, q = make()
    assert s.list() == [] and json.loads(read(cronsvc.PATH)) == {"jobs": []}
    write(cronsvc.PATH, "x" * (limits.CRON_FILE_MAX + 1))
    s, c, q = make()
    assert s.list() == []


def test_bad_entries_dropped_good_kept():
    good = {"id": "0123abcd", "name": "good", "enabled": True, "kind": "every", "interval_s": 60,
            "at_epoch": 0, "message": "hello", "channel": "websocket", "chat_id": "w",
            "last_run": 0, "next_run": T0 + 30, "delete_after_run": False}
    jobs = [
        good,
        "just a string",
        {"kind": "weekly", "message": "m"},
        {"kind": "every", "interval_s": 0, "message": "m"},
        {"kind": "at", "message": "m"},
        {"kind": "every", "interval_s": 30, "message": ""},
        {"kind": "daily", "daily_at": "25:00", "message": "m"},
        dict(good, name="dup id", message="second"),  # same id: gets a new one
        {"kind": "every", "interval_s": 120, "message": "minimal"},  # repaired
        {"kind": "daily", "daily_at": "06:15", "message": "d", "channel": "carrier-pigeon"},
    ]
    write(cronsvc.PATH, json.dumps({"jobs": jobs}))
    log.clear()
    s, c, q = make()
    got = s.list()
    assert [j["message"] for j in got] == ["hello", "second", "minimal", "d"]
    assert got[0]["id"] == "0123abcd" and got[0]["next_run"] == T0 + 30
    assert got[1]["id"] != "0123abcd" and len(got[1]["id"]) == 8
    m = got[2]
    assert m["next_run"] == T0 + 120 and m["enabled"] and m["channel"] == "system" and m["chat_id"] == "cron"
    # a channel this firmware lacks is never rerouted: the job is kept, reported, not run
    assert got[3]["channel"] == "carrier-pigeon" and got[3]["next_run"] == next_daily("06:15", 0, T0)
    assert sum(1 for line in log.recent() if "dropped" in line) == 6
    assert any("kept, not run: this firmware has no channel 'carrier-pigeon'" in line for line in log.recent())
    # the repaired file is written back and loads cleanly
    log.clear()
    s2, c2, q2 = make()
    assert [j["id"] for j in s2.list()] == [j["id"] for j in got]
    assert not any("dropped" in line or "repaired" in line for line in log.recent())
    assert json.loads(read(cronsvc.PATH))["jobs"][3]["channel"] == "carrier-pigeon"
    c2.t = next_daily("06:15", 0, T0) + 1
    assert s2.tick() == [j["id"] for j in got[:3]] and len(drain(q2)) == 3  # the others fire
    for j in got[:3]:
        s2.remove(j["id"])
    assert s2.sleep_s() == limits.CRON_TICK_S  # the unfired job keeps nobody busy
    assert s2.tick() == [] and drain(q2) == []
    assert "(not run: this firmware has no channel 'carrier-pigeon')" in registry.call("cron_list", {})


def test_more_than_max_jobs_in_file_truncated():
    jobs = [{"kind": "every", "interval_s": 60, "message": "m%d" % i} for i in range(20)]
    write(cronsvc.PATH, json.dumps({"jobs": jobs}))
    s, c, q = make()
    assert len(s.list()) == limits.CRON_MAX_JOBS


def test_unset_clock_refuses_and_rebases():
    s, c, q = make(t=1000)
    e = raises(ValueError, s.add, "x", "every", "m", "websocket", "a", interval_s=60)
    assert "clock is not set" in str(e)
    # a job saved with next_run from an unset clock starts over once the clock is right
    write(cronsvc.PATH, json.dumps({"jobs": [{"id": "aaaaaaaa", "name": "n", "kind": "every",
                                              "interval_s": 60, "message": "m", "channel": "websocket",
                                              "chat_id": "a", "next_run": 1060}]}))
    s, c, q = make()
    s.rebase()
    assert s.get("aaaaaaaa")["next_run"] == T0 + 60
    assert s.tick() == []


def test_next_every_helper():
    assert next_every(100, 10, 50) == 100
    assert next_every(100, 10, 100) == 110
    assert next_every(100, 10, 135) == 140


# --- the tools ---------------------------------------------------------------

def use_service(t=T0):
    s, c, q = make(t)
    cronsvc.service.clock = c
    cronsvc.service.inbound = q
    cronsvc.service.loaded = False
    return cronsvc.service, c, q


def test_tool_strings():
    s, c, q = use_service()
    ws = Ctx("websocket", "abc")
    out = registry.call("cron_add", {"name": "water", "schedule_type": "every", "interval_s": 3600,
                                     "message": "remind me to water"}, ws)
    jid = s.list()[0]["id"]
    assert out == "OK: Added recurring job 'water' (id=%s), runs every 3600 seconds. Next run at epoch %d." % (
        jid, T0 + 3600)
    out = registry.call("cron_add", {"name": "call", "schedule_type": "at", "at_epoch": T0 + 60,
                                     "message": "call mum"}, ws)
    aid = s.list()[1]["id"]
    assert out == "OK: Added one-shot job 'call' (id=%s), fires at epoch %d. Will be deleted after firing." % (
        aid, T0 + 60)
    cfg.set("tz", "+08:00")
    out = registry.call("cron_add", {"name": "brief", "schedule_type": "daily", "time": "07:00",
                                     "message": "daily briefing"}, ws)
    assert out.startswith("OK: Added daily job 'brief' (id=") and "07:00 local time" in out
    assert "UTC+08:00" in out
    listing = registry.call("cron_list", {}, ws)
    lines = listing.split("\n")
    assert lines[0] == "Scheduled jobs (3):"
    assert lines[1] == '[%s] "water" — every 3600s, enabled, next=%d, last=never, ch=websocket:abc' % (
        jid, T0 + 3600)
    assert lines[2].startswith('[%s] "call" — at %d, enabled' % (aid, T0 + 60))
    assert "daily 07:00" in lines[3]
    assert registry.call("cron_remove", {"job_id": jid}) == "OK: Removed cron job %s" % jid
    assert registry.call("cron_remove", {"job_id": jid}) == "Error: job '%s' not found" % jid
    registry.call("cron_remove", {"job_id": aid})
    registry.call("cron_remove", {"job_id": s.list()[0]["id"]})
    assert registry.call("cron_list", {}) == "No cron jobs scheduled."


def test_tool_errors():
    s, c, q = use_service()
    ws = Ctx("websocket", "abc")
    add = lambda **a: registry.call("cron_add", a, ws)  # noqa: E731
    assert add(name="x", schedule_type="every", message="m").startswith("Error: 'every' needs interval_s")
    assert add(name="x", schedule_type="every", interval_s=-5, message="m").startswith("Error:")
    assert add(name="x", schedule_type="at", message="m").startswith("Error: 'at' needs at_epoch")
    assert add(name="x", schedule_type="weekly", message="m").startswith("Error: schedule_type must be")
    assert add(name="x", schedule_type="every", interval_s=5, message="  ").startswith("Error: 'message'")
    assert add(name="x", schedule_type="daily", message="m").startswith("Error: 'daily' needs time")
    assert add(schedule_type="every", interval_s=5, message="m").startswith("Error: 'name' required")
    assert s.list() == []
    for i in range(16):
        assert add(name="j%d" % i, schedule_type="every", interval_s=60, message="m").startswith("OK")
    assert add(name="j16", schedule_type="every", interval_s=60, message="m") == \
        "Error: too many cron jobs (max 16); remove one with cron_remove first"


def test_tool_destination_from_turn():
    s, c, q = use_service()
    base = {"name": "n", "schedule_type": "every", "interval_s": 60, "message": "m"}
    registry.call("cron_add", base, Ctx("telegram", "42"))
    registry.call("cron_add", dict(base, channel="telegram", chat_id="cron"), Ctx("telegram", "42"))
    registry.call("cron_add", dict(base, chat_id="ws_1"), Ctx("websocket", "ws_1"))
    assert [(j["channel"], j["chat_id"]) for j in s.list()] == [
        ("telegram", "42"), ("telegram", "42"), ("websocket", "ws_1")]
    # a chat can never aim a job at another chat
    out = registry.call("cron_add", dict(base, channel="telegram", chat_id="42"), Ctx("websocket", "w"))
    assert out.startswith("Error: a job made in this chat can only answer in this chat")
    out = registry.call("cron_add", dict(base, chat_id="999"), Ctx("telegram", "42"))
    assert out.startswith("Error:")
    # REPL (no ctx): arguments decide; defaults to system
    registry.call("cron_add", base)
    assert (s.list()[-1]["channel"], s.list()[-1]["chat_id"]) == ("system", "cron")
    out = registry.call("cron_add", dict(base, channel="telegram"))
    assert out == "Error: a telegram job needs the chat_id of the chat to answer in"
    registry.call("cron_add", dict(base, channel="telegram", chat_id="77"))
    assert (s.list()[-1]["channel"], s.list()[-1]["chat_id"]) == ("telegram", "77")
    # a fired job becomes a turn in its chat
    c.t = T0 + 60
    s.tick()
    msgs = drain(q)
    assert [(m.channel, m.chat_id) for m in msgs][:3] == [("telegram", "42"), ("telegram", "42"),
                                                           ("websocket", "ws_1")]
    assert msgs[0].meta == {"cron": s.list()[0]["id"]}


def test_schemas_match_mimiclaw():
    add = registry.schema("cron_add")
    assert add["required"] == ["name", "schedule_type", "message"]
    for k, t in (("name", "string"), ("schedule_type", "string"), ("interval_s", "integer"),
                 ("at_epoch", "integer"), ("message", "string"), ("channel", "string"),
                 ("chat_id", "string")):
        assert add["properties"][k]["type"] == t
    assert registry.schema("cron_list") == {"type": "object", "properties": {}}
    rm = registry.schema("cron_remove")
    assert rm["required"] == ["job_id"]
    assert rm["properties"]["job_id"] == {"type": "string", "description": "The 8-character job ID to remove"}


async def test_scheduler_task_fires_and_wakes_on_add():
    import asyncio
    from mimi import board

    s = Scheduler(clock=board.clock, inbound=bus.Queue(4))
    task = asyncio.create_task(s.run())
    await asyncio.sleep_ms(50)
    now = board.clock.unix()
    j = s.add("soon", "at", "ping", "websocket", "w", at_epoch=now + 1)
    # the scheduler was asleep for up to CRON_TICK_S; the add woke it
    for _ in range(400):
        m = s.inbound.get_nowait()
        if m:
            break
        await asyncio.sleep_ms(10)
        board.clock.skew += 1 if _ % 20 == 19 else 0  # move time forward, faster than real
    assert m is not None and m.content == "ping" and m.meta == {"cron": j["id"]}
    task.cancel()
    board.clock.skew = 0


async def test_scheduler_waits_without_its_job_code_and_sees_a_new_offset_at_once():
    """Between two due times the scheduler holds only the next one: crontick.py (firing,
    the schedules' arithmetic) is loaded when a job is due or the jobs changed, and
    dropped after. A change of the jobs (here a new UTC offset moving a daily job from
    2 h ahead to now) wakes it: the job fires at its new time, not at the next look."""
    import asyncio
    import sys
    from mimi import board

    import mimi

    mimi.drop("services.crontick")  # (this file imported it)
    loaded = lambda: "mimi.services.crontick" in sys.modules  # noqa: E731
    tz = [0]
    s = Scheduler(clock=board.clock, inbound=bus.Queue(4), tz=lambda: tz[0])
    task = asyncio.create_task(s.run())
    await asyncio.sleep_ms(50)
    now = board.clock.unix()
    at = (now + 7200) % 86400 // 60  # minutes after midnight UTC, 2 h from now
    j = s.add("d", "daily", "ping", "websocket", "w", daily_at="%02d:%02d" % (at // 60, at % 60))
    assert j["next_run"] > now + 7000
    await asyncio.sleep_ms(50)
    assert not loaded() and s.inbound.get_nowait() is None
    tz[0] = (at * 60 - (now + 2)) % 86400  # the offset that makes that time 2 s from now
    s.retime_daily()  # what the settings' watcher (_watch) does for a new tz
    assert s.get(j["id"])["next_run"] == now + 2
    for _ in range(400):
        m = s.inbound.get_nowait()
        if m:
            break
        assert not loaded()
        await asyncio.sleep_ms(10)
        board.clock.skew += 1 if _ % 20 == 19 else 0  # move time forward, faster than real
    assert m is not None and m.content == "ping" and not loaded()
    task.cancel()
    board.clock.skew = 0


def test_repl_cron_list():
    from support import Capture
    from mimi import repl

    s, c, q = use_service()
    with Capture() as cap:
        repl.cron_list()
    assert "No cron jobs scheduled.\n" in cap.text
    s.add("n", "every", "m", "websocket", "a", interval_s=60)
    with Capture() as cap:
        repl.cron_list()
    assert "Scheduled jobs (1):\n[" in cap.text


def test_daily_jobs_follow_a_tz_change():
    tz = [0]
    c = FakeClock()
    s = Scheduler(clock=c, inbound=bus.Queue(4), tz=lambda: tz[0])
    s.load()
    j = s.add("d", "daily", "m", "websocket", "a", daily_at="09:00")
    assert j["next_run"] == T0 + 3600  # 09:00 UTC
    tz[0] = 3600  # now UTC+01:00: 09:00 local is 08:00 UTC, which is now -> tomorrow
    s.retime_daily()
    assert s.get(j["id"])["next_run"] == T0 + 86400
    # the setting's watcher does the same for the global service
    svc, c2, q2 = use_service()
    k = svc.add("d", "daily", "m", "websocket", "a", daily_at="10:00")
    cfg.set("tz", "+02:00")
    cronsvc._watch(["tz"])
    assert svc.get(k["id"])["next_run"] == T0 + 86400


# --- deliver: plain reminders sent as is, no agent turn ------------------------

def test_deliver_job_goes_to_outbound_not_inbound():
    s, c, q = make()
    out = bus.Queue(1)
    s.outbound = out
    j = s.add("pills", "at", "Take the pills!", "telegram", "42", at_epoch=T0 + 60, deliver=True)
    n = s.add("brief", "at", "write the briefing", "telegram", "42", at_epoch=T0 + 60)
    assert j["deliver"] is True and "deliver" not in n
    out.put(bus.Msg("telegram", "42", "someone else"))  # outbound full: the reminder waits
    c.t = T0 + 60
    assert s.tick() == []
    assert s.get(j["id"]) is not None and s.sleep_s() == limits.CRON_BUSY_RETRY_S
    drain(out)
    assert s.tick() == [j["id"], n["id"]]
    m = drain(out)[0]
    assert (m.channel, m.chat_id, m.content, m.kind) == ("telegram", "42", "Take the pills!", bus.REPLY)
    assert [x.content for x in drain(q)] == ["write the briefing"]  # only the normal job is a turn
    assert s.list() == []


def test_deliver_every_job_no_llm_turn():
    s, c, q = make()
    out = bus.Queue(4)
    s.outbound = out
    j = s.add("stretch", "every", "Stretch.", "websocket", "w", interval_s=100, deliver=True)
    c.t = T0 + 100
    assert s.tick() == [j["id"]]
    assert drain(q) == []
    assert [(m.channel, m.chat_id, m.content) for m in drain(out)] == [("websocket", "w", "Stretch.")]
    assert s.get(j["id"])["next_run"] == T0 + 200


def test_deliver_system_job_goes_to_owner_or_log():
    s, c, q = make()
    out = bus.Queue(4)
    s.outbound = out
    s.add("a", "at", "Pills!", at_epoch=T0 + 10, deliver=True)  # system:cron, no owner
    c.t = T0 + 10
    assert len(s.tick()) == 1
    assert drain(out) == [] and drain(q) == []
    assert "Pills!" in "\n".join(log.recent(5))
    cfg.update({"tg_token": "123456789:AAbbccddeeffgghhiijjkkllmmnnoopp", "tg_allow": "555,666"})
    s.add("b", "at", "Water!", at_epoch=T0 + 20, deliver=True)
    c.t = T0 + 20
    assert len(s.tick()) == 1
    assert [(m.channel, m.chat_id, m.content) for m in drain(out)] == [("telegram", "555", "Water!")]
    assert drain(q) == []


def test_deliver_persisted_and_reloaded():
    s, c, q = make()
    j = s.add("pills", "daily", "Take the pills!", "telegram", "42", daily_at="09:00", deliver=True)
    s.add("n", "every", "m", "telegram", "42", interval_s=60, deliver=False)
    jobs = json.loads(read(cronsvc.PATH))["jobs"]
    assert jobs[0]["deliver"] is True and "deliver" not in jobs[1]
    s2, c2, q2 = make()
    assert not s2.load()  # nothing to repair
    assert s2.get(j["id"])["deliver"] is True and "deliver" not in s2.list()[1]
    # an old file without the field loads unchanged; a non-true value is not a deliver job
    write(cronsvc.PATH, json.dumps({"jobs": [
        {"id": "0000000a", "name": "old", "enabled": True, "kind": "every", "interval_s": 60,
         "at_epoch": 0, "message": "m", "channel": "telegram", "chat_id": "1", "last_run": 0,
         "next_run": T0 + 60, "delete_after_run": False},
        {"id": "0000000b", "name": "odd", "enabled": True, "kind": "every", "interval_s": 60,
         "at_epoch": 0, "message": "m", "channel": "telegram", "chat_id": "1", "last_run": 0,
         "next_run": T0 + 60, "delete_after_run": False, "deliver": "yes"}]}))
    s3, c3, q3 = make()
    assert [("deliver" in j) for j in s3.list()] == [False, False]


def test_deliver_tool():
    s, c, q = use_service()
    ws = Ctx("websocket", "abc")
    out = registry.call("cron_add", {"name": "pills", "schedule_type": "at", "at_epoch": T0 + 60,
                                     "message": "Take the pills!", "deliver": True}, ws)
    jid = s.list()[0]["id"]
    assert out == ("OK: Added one-shot job 'pills' (id=%s), fires at epoch %d. Will be deleted after "
                   "firing. Its message will be sent as is (deliver)." % (jid, T0 + 60))
    assert s.list()[0]["deliver"] is True
    listing = registry.call("cron_list", {}, ws)
    assert listing.split("\n")[1] == (
        '[%s] "pills" — at %d, enabled, deliver, next=%d, last=never, ch=websocket:abc' % (jid, T0 + 60, T0 + 60))
    out = registry.call("cron_add", {"name": "x", "schedule_type": "at", "at_epoch": T0 + 60,
                                     "message": "m", "deliver": "yes"}, ws)
    assert out.startswith("Error:") and "deliver" in out, out
    assert len(s.list()) == 1
    e = raises(ValueError, s.add, "x", "at", "m", "websocket", "a", at_epoch=T0 + 60, deliver=1)
    assert "'deliver' must be true or false" in str(e)
    add = registry.schema("cron_add")
    assert add["properties"]["deliver"]["type"] == "boolean"
    assert add["required"] == ["name", "schedule_type", "message"]
    desc = [str(d, "utf-8") for n, d, s in registry.specs() if n == "cron_add"][0]  # (views of the table)
    assert "deliver=true" in desc and "plain reminders" in desc


# --- issue 16: limits on what a job may ask, and who it may reach -----------------

def test_jobs_for_chats_not_allowed_are_kept_not_run():
    # cron.json written behind cron_add's back (a file tool once could): chat 99 is
    # not in tg_allow, so its job must not send it anything
    job = {"kind": "every", "interval_s": 60, "message": "SPAM from the board", "channel": "telegram",
           "next_run": T0 + 60}
    write(cronsvc.PATH, json.dumps({"jobs": [dict(job, id="0000aaaa", chat_id="99"),
                                             dict(job, id="0000bbbb", chat_id="42", message="hello")]}))
    log.clear()
    s, c, q = use_service()
    assert len(s.list()) == 2
    assert any("job 0000aaaa (telegram:99) kept, not run: chat 99 is not in tg_allow" in x for x in log.recent())
    c.t = T0 + 60
    assert s.tick() == ["0000bbbb"]
    assert [(m.chat_id, m.content) for m in drain(q)] == [("42", "hello")]
    assert s.sleep_s() == 60  # the unrun job keeps nobody busy
    assert "(not run: chat 99 is not in tg_allow)" in registry.call("cron_list", {})
    # allowed later: it runs again
    cfg.set("tg_allow", "42,99")
    c.t = T0 + 120
    assert sorted(s.tick()) == ["0000aaaa", "0000bbbb"]
    # and from the REPL a job for a chat not allowed is refused, not kept unrun
    e = raises(ValueError, s.add, "n", "every", "m", "telegram", "555", interval_s=60)
    assert "chat 555 is not in tg_allow" in str(e)


def test_interval_and_at_epoch_bounds():
    s, c, q = make()
    e = raises(ValueError, s.add, "fast", "every", "m", "websocket", "a", interval_s=1)
    assert "between %d and" % limits.CRON_MIN_INTERVAL_S in str(e)
    e = raises(ValueError, s.add, "far", "at", "m", "websocket", "a", at_epoch=2 ** 63)
    assert "too far ahead" in str(e)
    assert s.list() == []
    assert s.add("ok", "every", "m", "websocket", "a", interval_s=limits.CRON_MIN_INTERVAL_S)
    base = {"message": "m", "channel": "websocket", "chat_id": "a"}
    write(cronsvc.PATH, json.dumps({"jobs": [dict(base, kind="every", interval_s=1),
                                             dict(base, kind="at", at_epoch=2 ** 63),
                                             dict(base, kind="every", interval_s=600, next_run=2 ** 63)]}))
    s, c, q = make()
    jobs = s.list()
    assert [j["interval_s"] for j in jobs] == [limits.CRON_MIN_INTERVAL_S, 600]  # raised; the at job dropped
    assert jobs[1]["next_run"] == T0 + 600  # a next_run past the bound starts over
