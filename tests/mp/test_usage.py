# The usage ledger (mimi/usage.py, usagefile.py, usagereport.py): counts per local hour
# and day, rollover at local midnight, the file surviving a cut save, the spend caps
# refusing before any LLM request, the report.
import json
import mimi
import support
from support import raises
from mimi import board, bus, fs, limits
from mimi.usage import file as usagefile
from mimi.config.settings import cfg
from mimi.llm import provider
from mimi.agent import react, worker
from mimi.tools.registry import Registry, Ctx

# 2026-12-03 23:59:30 at UTC+08:00
LOCAL = 1796342400 - 30
TZ8 = 8 * 3600


def setup():
    cfg.load()
    cfg.update({"tz": "+08:00", "tg_token": "123456789:AAbbccddeeffgghhiijjkkllmmnnoopp",
                "tg_allow": "42"})
    board.set_unix(LOCAL - TZ8)
    while bus.outbound.get_nowait():
        pass


def fresh():
    """The ledger as after a restart: its module loaded again."""
    mimi.drop("usage.ledger")
    from mimi.usage import ledger as usage

    return usage


class P:
    name = "anthropic"
    model = "claude-sonnet-4-5"


def U(i, o, r=0, w=0):
    return {"input": i, "output": o, "cache_read": r, "cache_write": w}


def test_counts_survive_a_restart():
    u = fresh()
    u.add(P, U(1000, 50, 800, 100))
    u.add(P, U(500, 20, 400))
    day, hour, h, d, m = u.snapshot()
    assert usagefile.date(day) == "2026-12-03" and d == [2, 1500, 1200, 100, 70] and h == d
    assert m == {"anthropic/claude-sonnet-4-5": d}
    assert not fs.exists(limits.USAGE_PATH)
    u.tick(True)
    u = fresh()  # a restart: today's and this hour's counts come back from the file
    assert u.snapshot()[2:] == (h, d, m), (u.snapshot(), h, d, m)
    u.add(P, U(10, 1))
    assert u.snapshot()[3][0] == 3


def test_rollover_at_local_midnight():
    u = fresh()
    u.add(P, U(100, 10))
    u.add(P, U(100, 10))
    board.set_unix(LOCAL - TZ8 + 60)  # 00:00:30 local, 16:00:30 UTC
    u.add(P, U(7, 1))
    day, hour, h, d, m = u.snapshot()
    assert usagefile.date(day) == "2026-12-04" and d == [1, 7, 0, 0, 1] and h == d
    days = [usagefile.parse(x) for x in usagefile.lines() if x.startswith(usagefile.DAY)]
    assert [(p[1], p[2][0]) for p in days] == [("2026-12-03", 2)]  # saved when the day ended
    # The same instant under UTC is the middle of a day: only the hour changed there.
    cfg.set("tz", "+00:00")
    board.set_unix(LOCAL - TZ8 + 3600)
    assert usagefile.date(u.snapshot()[0]) == "2026-12-03"
    assert u.snapshot()[3][0] == 2  # 2026-12-03 as the file had it


def test_bounded_to_31_days_and_hour_rolls():
    u = fresh()
    for k in range(40):
        board.set_unix(LOCAL - TZ8 + 60 + k * 86400)
        u.add(P, U(k, 1))
    u.tick(True)
    days = [usagefile.parse(x)[1] for x in usagefile.lines() if x.startswith(usagefile.DAY)]
    assert len(days) == limits.USAGE_DAYS and days[-1] == "2027-01-12" and days[0] == "2026-12-13"
    board.set_unix(LOCAL - TZ8 + 60 + 39 * 86400 + 3600)
    assert u.snapshot()[2] == [0] * 5 and u.snapshot()[3][0] == 1


def test_a_cut_save_leaves_the_old_or_the_new_file():
    u = fresh()
    u.add(P, U(100, 10))
    u.tick(True)
    old = support.read(limits.USAGE_PATH)
    u.add(P, U(100, 10))

    class Cut(BaseException):  # the power goes: nothing after this runs
        pass

    real = fs.open if "open" in fs.__dict__ else open

    class Torn:
        def __init__(self, f):
            self.f = f

        def write(self, b):
            self.f.write(bytes(b)[:len(b) // 2])
            raise Cut()

        def __enter__(self):
            return self

        def __exit__(self, *a):
            self.f.close()

    fs.open = lambda path, mode="r": Torn(real(path, mode)) if "w" in mode else real(path, mode)
    try:
        raises(Cut, u.tick, True)
    finally:
        del fs.open
    assert support.read(limits.USAGE_PATH) == old and not fs.exists(limits.USAGE_PATH + ".tmp")
    # A torn temporary file from a real cut is never read.
    with open(limits.USAGE_PATH + ".tmp", "w") as f:
        f.write('{"hour":1,"n":[9')
    assert fresh().snapshot()[3][0] == 1
    u = fresh()
    u.add(P, U(100, 10))
    u.tick(True)  # the next save replaces both
    assert fresh().snapshot()[3][0] == 2 and not fs.exists(limits.USAGE_PATH + ".tmp")


def test_a_broken_file_loses_nothing_else():
    support.write(limits.USAGE_PATH, '{"hour":5,"n":[1,2]}\nnot json\n'
                  '{"day":"2026-12-01","n":[3,30,0,0,3],"m":{}}\n'
                  '{"day":"2026-12-03","n":[4,40,0,0,4],"m":{"x/y":[4,40,0,0,4],"bad":[1]}}\n')
    u = fresh()
    assert u.snapshot()[3:] == ([4, 40, 0, 0, 4], {"x/y": [4, 40, 0, 0, 4]})
    u.add(P, U(1, 1))
    u.tick(True)
    days = [usagefile.parse(x) for x in usagefile.lines() if x.startswith(usagefile.DAY)]
    assert [(p[1], p[2][0]) for p in days] == [("2026-12-01", 3), ("2026-12-03", 5)]


class Stub:
    """An LLM that asks for the echo tool `tools` times, then answers."""
    name = "openai"
    model = "gpt-5-mini"

    def __init__(self, tools=0, usage=None):
        self.tools = tools
        self.calls = 0
        self.usage = usage or U(100, 10)

    def chat(self, system, messages, tools):
        self.calls += 1
        if self.tools:
            self.tools -= 1
            return provider.Reply("", [provider.Call("", "echo", {"text": "x"})], dict(self.usage))
        return provider.Reply("done", [], dict(self.usage))


def echo():
    r = Registry()
    r.add("echo", "Echo", {"type": "object", "properties": {"text": {"type": "string"}}},
          lambda a, ctx: "echo:" + a["text"])
    return r


def test_daily_cap_refuses_before_any_llm_request_and_tells_the_owner_once():
    fresh()
    cfg.set("max_calls_day", 2)
    s = Stub()
    provider.from_config = lambda c: s
    assert worker.run_message(bus.Msg("websocket", "w1", "a")) == "done"
    assert worker.run_message(bus.Msg("websocket", "w1", "b")) == "done"
    out = worker.run_message(bus.Msg("websocket", "w1", "c"))
    assert out == ("Sorry, the daily limit of 2 LLM calls is reached; it resets at 00:00 "
                   "(+08:00), or raise max_calls_day.")
    assert s.calls == 2
    note = bus.outbound.get_nowait()
    assert (note.channel, note.chat_id) == ("telegram", "42") and "max_calls_day" in note.content
    worker.run_message(bus.Msg("websocket", "w2", "d"))
    # heartbeat and cron turns stop too, with nothing sent to their chat
    assert worker.run_message(bus.Msg("system", "heartbeat", "check", meta={"heartbeat": 1})) == ""
    assert worker.run_message(bus.Msg("telegram", "42", "job", meta={"cron": "j1"})) == ""
    assert s.calls == 2 and bus.outbound.get_nowait() is None  # the owner was told once
    cfg.set("max_calls_day", 0)  # 0: no cap
    assert worker.run_message(bus.Msg("websocket", "w1", "e")) == "done"


def test_hourly_cap_stops_a_turn_midway_and_the_owner_asking_is_not_told_twice():
    fresh()
    cfg.set("max_calls_hour", 3)
    s = Stub(tools=5)
    t = react.run_turn(s, "S", [], "go", echo(), Ctx("telegram", "42"))
    assert s.calls == 3 and t.error == "usage cap" and t.llm_calls == 3 and t.tool_calls == 3
    assert t.text == ("Stopped before finishing this: the hourly limit of 3 LLM calls is "
                      "reached; it resets at 00:00 (+08:00), or raise max_calls_hour.")
    assert bus.outbound.get_nowait() is None  # the owner is the one who was answered
    board.set_unix(LOCAL - TZ8 + 3600)  # 00:59:30: the next hour
    assert react.run_turn(Stub(), "S", [], "go", echo(), Ctx("telegram", "42")).text == "done"


def test_token_cap():
    fresh()
    cfg.set("max_tokens_day", 250)
    s = Stub(usage=U(100, 30))
    provider.from_config = lambda c: s
    assert worker.run_message(bus.Msg("websocket", "w", "a")) == "done"
    assert worker.run_message(bus.Msg("websocket", "w", "b")) == "done"
    assert worker.run_message(bus.Msg("websocket", "w", "c")) == (
        "Sorry, the daily limit of 250 tokens is reached; it resets at 00:00 (+08:00), "
        "or raise max_tokens_day.")
    assert s.calls == 2


def test_report_cache_share_and_cost():
    support.write(limits.USAGE_PATH, '{"day":"2026-11-20","n":[9,9,0,0,9],"m":{}}\n'
                  '{"day":"2026-12-01","n":[2,2000000,1000000,0,100000],'
                  '"m":{"anthropic/claude-sonnet-4-5":[2,2000000,1000000,0,100000]}}\n')
    u = fresh()
    u.add(P, U(1000000, 100000, 600000, 200000))
    u.add(Stub, U(1000000, 0, 500000))
    r = mimi.run("usage.report", "report")
    t = r["today"]
    assert (t["calls"], t["input"], t["cache_read"], t["cache_write"]) == (2, 2000000, 1100000, 200000)
    # sonnet: 0.2M plain x $3 + 0.6M read x $0.30 + 0.2M written x $3.75 + 0.1M out x $15
    assert abs(t["models"]["anthropic/claude-sonnet-4-5"]["cost"] - 3.03) < 1e-6
    # gpt-5-mini: 0.5M x $0.25 + 0.5M cached x $0.025
    assert abs(t["models"]["openai/gpt-5-mini"]["cost"] - 0.1375) < 1e-6
    assert [d["date"] for d in r["days"]] == ["2026-12-03", "2026-12-01"]  # not 11-20: 13 days ago
    assert r["week"]["calls"] == 4 and r["cache_hit"] == round(2.1 / 4, 3)
    assert "55% cached" in r["text"] and "~$3.17" in r["text"] and "~$7.97" in r["text"] and "max_calls_day 1000 (2 used)" in r["text"]
    json.dumps(r)  # the WebSocket answer
    cfg.update({"price_in": 1, "price_out": 2})  # replaces the table: reads at a tenth
    t = mimi.run("usage.report", "report")["today"]["models"]["openai/gpt-5-mini"]
    assert abs(t["cost"] - (0.5 + 0.05)) < 1e-6
    u.add(type("Q", (), {"name": "openai", "model": "llama3"}), U(10, 10))
    cfg.update({"price_in": 0})
    r = mimi.run("usage.report", "report")
    assert not r["today"]["cost_known"] and "cost unknown (set price_in/price_out)" in r["text"]


def test_price_setting_rules():
    assert cfg.update({"price_in": "0.25"}) == {"price_in": 0.25}
    assert cfg.update({"price_out": 3}) == {"price_out": 3}
    for bad in ("cheap", -1, True, 1e9):
        assert "price_in" in str(raises(ValueError, cfg.set, "price_in", bad))


def test_repl_usage():
    from mimi import repl
    from support import Capture

    fresh().add(P, U(1200, 30, 900))
    with Capture() as c:
        assert repl.usage() is None
    assert "today 2026-12-03: 1 calls, 1200 tokens in (75% cached), 30 out, <$0.01" in c.text
    assert "max_calls_hour 100 (1 used)" in c.text and "max_tokens_day off" in c.text
    assert "mimi.usage.report" not in __import__("sys").modules  # loaded for the call only


def test_a_capped_heartbeat_queues_no_turn():
    from mimi.services import hbcheck

    fresh().add(P, U(1, 1))
    cfg.set("max_calls_hour", 1)
    support.write(hbcheck.PATH, "- [ ] water the plants\n")
    out = hbcheck.check(lambda m: 1 / 0)
    assert "1 open task(s) but the hourly limit of 1 LLM calls is reached" in out and "no LLM call" in out


def test_the_file_is_closed_when_reading_it_stops_midway():
    # the file is read line by line while the ledger loads, saves and reports; a
    # failure midway (no room in the heap for a line's numbers) closes it then, never
    # leaves it to the GC (which closes it outside fs.lock)
    from mimi.usage import report

    support.write(limits.USAGE_PATH, '{"hour":5,"n":[1,10,0,0,5]}\n'
                  '{"day":"2026-12-01","n":[2,20,0,0,10],"m":{}}\n'
                  '{"day":"2026-12-02","n":[1,10,0,0,5],"m":{}}\n')
    parse = usagefile.parse

    def no_room(line):
        raise MemoryError("memory allocation failed, allocating 96 bytes")

    usagefile.parse = no_room
    try:
        with support.Opened() as opened:
            raises(MemoryError, report.report)
            raises(MemoryError, usagefile.load, LOCAL, 0, [0] * 5, [0] * 5, {})
    finally:
        usagefile.parse = parse
    assert len(opened.files) >= 2 and not opened.left(), opened.left()
