# Heartbeat: open-task rules, no LLM call when nothing is open, delivery to the owner.
from support import write, Capture
from mimi import bus, log, channels
from mimi.config.settings import cfg
from mimi.services import heartbeat as hb, hbcheck

TOKEN = "123456789:AAbbccddeeffgghhiijjkkllmmnnoopp"
FIXTURES = ("fake_anthropic",)


def setup():
    cfg.load()


def test_open_task_rules():
    text = "\n".join([
        "# Heartbeat",
        "",
        "   ",
        "## Daily",
        "- [x] done already",
        "* [X] also done",
        "  - [ ] water the plants",
        "- [ ]",
        "-",
        "check the mailbox",
        "<!-- a note for the user, not a task -->",
        "<!-- a comment",
        "   spanning lines - [ ] not a task",
        "-->",
        "<!-- c --> text after a comment",
        "* unchecked star item",
    ])
    assert hbcheck.open_tasks(text) == ["- [ ] water the plants", "check the mailbox",
                                   "text after a comment", "* unchecked star item"]
    assert hbcheck.open_tasks("") == []
    assert hbcheck.open_tasks("# Title\n\n- [x] a\n<!-- only\ncomments -->\n") == []


def test_no_file_or_nothing_open_means_no_llm_call():
    calls = []

    def submit(msg):
        calls.append(msg)
        return True

    out = hb.check(submit)
    assert "no open tasks" in out and "no LLM call" in out
    write(hb.PATH, "# Tasks\n\n- [x] finished\n<!-- add tasks below -->\n")
    assert "no LLM call" in hb.check(submit)
    assert calls == []


def test_open_task_starts_one_system_turn():
    calls = []
    write(hb.PATH, "# Tasks\n- [ ] remind me to stretch\n- [ ] water plants\n")
    out = hb.check(lambda m: calls.append(m) or True)
    assert len(calls) == 1
    m = calls[0]
    assert (m.channel, m.chat_id) == ("system", "heartbeat")
    assert "/spiffs/HEARTBEAT.md" in m.content and "HEARTBEAT_OK" in m.content
    assert m.session == "sys_heartbeat"
    assert out.startswith("2 open task(s); heartbeat turn queued")
    assert "the log" in out  # no owner configured
    assert "busy" in hb.check(lambda m: False)


def test_default_submit_uses_inbound_queue():
    write(hb.PATH, "- [ ] a task\n")
    while bus.inbound.get_nowait():
        pass
    hb.check()
    m = bus.inbound.get_nowait()
    assert m.channel == "system" and m.chat_id == "heartbeat"


async def test_reply_delivered_to_owner_unless_ok():
    cfg.update({"tg_token": TOKEN, "tg_allow": "555,777"})
    assert channels.owner() == ("telegram", "555")
    out = bus.Queue(8)
    await hb.send(bus.Msg("system", "heartbeat", "Time to stretch!"), out)
    m = out.get_nowait()
    assert (m.channel, m.chat_id, m.content, m.kind) == ("telegram", "555", "Time to stretch!", bus.REPLY)
    for ok in ("HEARTBEAT_OK", " HEARTBEAT_OK\n", "**HEARTBEAT_OK**", "HEARTBEAT_OK."):
        await hb.send(bus.Msg("system", "heartbeat", ok), out)
    assert out.get_nowait() is None
    # status messages are not delivered; system cron results are, marked with their chat id
    await hb.send(bus.Msg("system", "heartbeat", "working", bus.STATUS), out)
    await hb.send(bus.Msg("system", "cron", "Good morning briefing"), out)
    m = out.get_nowait()
    assert (m.chat_id, m.content) == ("555", "[cron] Good morning briefing")
    assert out.get_nowait() is None


async def test_the_system_channel_holds_no_reply_code():
    """A system turn's reply is delivered by hbcheck.py's reply(), loaded for it and
    dropped after; a status loads nothing."""
    import sys
    import mimi

    mimi.drop("services.hbcheck")  # (this file imported it)
    cfg.update({"tg_token": TOKEN, "tg_allow": "555"})
    seen = []

    class Out(bus.Queue):
        def put(self, m):
            seen.append("mimi.services.hbcheck" in sys.modules)
            return super().put(m)

    out = Out(8)
    await hb.send(bus.Msg("system", "heartbeat", "working", bus.STATUS), out)
    assert "mimi.services.hbcheck" not in sys.modules
    await hb.send(bus.Msg("system", "cron", "Good morning"), out)
    assert seen == [True] and out.get_nowait().content == "[cron] Good morning"
    assert "mimi.services.hbcheck" not in sys.modules


async def test_no_owner_means_logged():
    out = bus.Queue(8)
    log.clear()
    await hb.send(bus.Msg("system", "heartbeat", "Something to say"), out)
    assert out.get_nowait() is None
    assert any("Something to say" in line for line in log.recent())
    cfg.set("tg_allow", "555")  # no token: Telegram cannot deliver
    assert channels.owner() is None


async def test_dispatcher_routes_system_replies_through_heartbeat():
    import asyncio
    from mimi.channels import dispatch

    cfg.update({"tg_token": TOKEN, "tg_allow": "555"})
    got = []

    async def tg_send(msg):
        got.append(msg)

    dispatch.register("telegram", tg_send)
    dispatch.register("system", hb.send)
    task = asyncio.create_task(dispatch.run())
    bus.outbound.put(bus.Msg("system", "heartbeat", "HEARTBEAT_OK"))
    bus.outbound.put(bus.Msg("system", "heartbeat", "Your plants need water"))
    for _ in range(200):
        if got:
            break
        await asyncio.sleep_ms(5)
    task.cancel()
    assert [(m.channel, m.chat_id, m.content) for m in got] == [("telegram", "555", "Your plants need water")]


async def test_run_waits_for_a_valid_clock_then_checks_each_period():
    import asyncio
    from mimi import board
    from mimi.services import ntp

    cfg.set("heartbeat_min", 1)
    write(hb.PATH, "- [ ] a task\n")
    while bus.inbound.get_nowait():
        pass
    slept = []

    async def sleep(s):
        slept.append(s)
        await asyncio.sleep_ms(1)

    board.set_unix(1000)  # the RTC was never set
    task = asyncio.create_task(hb.run(sleep))
    try:
        for _ in range(20):
            await asyncio.sleep_ms(5)
        assert slept == [] and bus.inbound.get_nowait() is None  # no period counted yet
        ntp.apply(1893456000)
        m = None
        for _ in range(500):
            m = bus.inbound.get_nowait()
            if m:
                break
            await asyncio.sleep_ms(2)
        assert m is not None and (m.channel, m.chat_id) == ("system", "heartbeat")
        assert slept[0] == 60
    finally:
        task.cancel()


def test_heartbeat_trigger_prints():
    with Capture() as c:
        hb.trigger()
    assert "no open tasks" in c.text


async def test_agent_turn_reaches_owner_and_ok_is_silent():
    # the whole chain with the real agent turn and a fake Anthropic API
    import llmfake
    from support import fixture
    from mimi.agent import worker

    fx = fixture("fake_anthropic")
    cfg.update({"provider": "anthropic", "api_key": fx["api_key"], "api_base": fx["http_base_url"],
                "model": "test-model", "tg_token": TOKEN, "tg_allow": "555"})
    llmfake.script(fx, {"text": "Reminder: time to stretch."}, {"text": "HEARTBEAT_OK"})
    out = bus.Queue(8)

    async def one_check():
        while bus.inbound.get_nowait():
            pass
        while bus.outbound.get_nowait():
            pass
        hb.check()
        msg = bus.inbound.get_nowait()
        if msg is None:
            return False
        worker.handle(msg)
        reply = bus.outbound.get_nowait()
        assert reply.channel == "system" and reply.chat_id == "heartbeat"
        await hb.send(reply, out)
        return True

    assert not await one_check()  # no HEARTBEAT.md: no turn
    write(hb.PATH, "# Tasks\n- [x] old\n")
    assert not await one_check()
    assert llmfake.snapshot(fx, bodies=False)["requests"] == []  # no LLM call at all
    write(hb.PATH, "# Tasks\n- [ ] remind me to stretch\n")
    assert await one_check()
    m = out.get_nowait()
    assert (m.channel, m.chat_id, m.content) == ("telegram", "555", "Reminder: time to stretch.")
    assert await one_check()
    assert out.get_nowait() is None  # HEARTBEAT_OK is not delivered
    reqs = llmfake.snapshot(fx)["requests"]
    assert len(reqs) == 2
    assert "HEARTBEAT_OK" in json_text(reqs[0]["body"]["messages"][-1])


def json_text(m):
    import json

    return json.dumps(m)
