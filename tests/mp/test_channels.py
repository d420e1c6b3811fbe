# The channel table (lib/mimi/channels/__init__.py). A throwaway channel, "pigeon",
# is one row added to the table, with this module as its code (run() and send()
# below) and its allow-list setting: with no other edit the bus, dispatcher, agent
# thread, prompt, cron (service and tool), heartbeat, REPL and the task list route
# it. Each test runs in its own MicroPython process, so the added row is private.
import asyncio
from support import raises
from mimi import bus, channels, log
from mimi.config import settings as config
from mimi.config.settings import cfg

TIMEOUT = 60
T0 = 1800000000

sent = []  # what the pigeon channel's sender was given: (chat_id, kind, content)
runs = []  # each start of the pigeon channel's loop task


async def send(msg):
    sent.append((msg.chat_id, msg.kind, msg.content))


def run():
    runs.append(1)
    return _idle()


async def _idle():
    while True:
        await asyncio.sleep(3600)


def pigeon(needs=None):
    config.SCHEMA["pigeon_allow"] = ("", config.SCHEMA["tg_allow"][1], False)
    row = channels.Channel("pigeon", "pg", "test_channels", "carrier pigeons", needs, "pigeon_allow")
    channels.TABLE.append(row)
    return row


def setup():
    cfg.load()


class Stub:
    """Provider stand-in: the agent's answer, and the system prompt it was given."""

    def __init__(self, answer):
        self.answer = answer
        self.system = None

    def chat(self, system, messages, tools):
        from mimi.llm.provider import Reply

        self.system = "".join(system)
        return Reply(self.answer)


async def until(cond, what):
    for _ in range(400):
        if cond():
            return
        await asyncio.sleep_ms(5)
    raise AssertionError("timed out waiting for " + what)


def test_sessions_and_repl_keys():
    raises(ValueError, bus.session_key, "pigeon", "7")  # not in the table yet
    pigeon()
    assert bus.Msg("pigeon", 7, "coo").session == "pg_7"
    from mimi.console import commands as replcmds

    assert replcmds.session_key_of("pg_7") == "pg_7"
    assert replcmds.session_key_of("123") == "tg_123"  # a bare id is still the first row's
    e = raises(ValueError, bus.Msg, "owl", "1", "hoot")
    assert "unknown channel 'owl'" in str(e) and "pigeon" in str(e)


async def test_turn_status_reply_and_prompt_through_the_dispatcher():
    from mimi.agent import worker
    from mimi.channels import dispatch
    from mimi.llm import provider
    from mimi.memory import sessions

    row = pigeon()
    task = dispatch.start(row)  # what app's task list does for a configured channel
    assert runs == [1]
    stub = Stub("Coo, hello!")
    provider.from_config = lambda c: stub
    d = asyncio.create_task(dispatch.run())
    worker.handle(bus.Msg("pigeon", "7", "hi"))
    await until(lambda: len(sent) == 2, "status and reply")
    d.cancel()
    task.close()
    assert sent == [("7", bus.STATUS, "working"), ("7", bus.REPLY, "Coo, hello!")]
    assert sessions.load("pg_7")[-1] == {"role": "assistant", "content": "Coo, hello!"}
    assert "People talk to you through Telegram, Feishu, a WebSocket chat and carrier pigeons." in stub.system
    assert "source_channel: pigeon" in stub.system


def test_cron_jobs_stay_in_their_chat_and_survive_a_reload():
    pigeon()
    cfg.set("pigeon_allow", "7")  # a job runs only for a chat its channel allows
    from mimi.services import cron as cronsvc
    from mimi.tools.registry import registry, Ctx
    from test_cron import FakeClock, drain

    q, out = bus.Queue(8), bus.Queue(8)
    s = cronsvc.service
    s.clock, s.inbound, s.outbound = FakeClock(T0), q, out
    here = Ctx("pigeon", "7")
    base = {"name": "n", "schedule_type": "every", "interval_s": 60, "message": "check the loft"}
    assert registry.call("cron_add", base, here).startswith("OK")
    assert registry.call("cron_add", dict(base, chat_id="8"), here).startswith(
        "Error: a job made in this chat can only answer in this chat")
    assert registry.call("cron_add", dict(base, channel="pigeon")) == \
        "Error: a pigeon job needs the chat_id of the chat to answer in"  # REPL: its allow-list
    assert registry.call("cron_add", dict(base, name="r", deliver=True, message="Feed them"), here).startswith("OK")
    again = cronsvc.Scheduler(clock=FakeClock(T0 + 60), inbound=q, outbound=out)
    again.load()  # cron.json read back: the channel is kept as it is
    assert [(j["channel"], j["chat_id"]) for j in again.list()] == [("pigeon", "7"), ("pigeon", "7")]
    assert len(again.tick()) == 2
    m = drain(q)[0]
    assert (m.channel, m.chat_id, m.content, m.session) == ("pigeon", "7", "check the loft", "pg_7")
    assert [(m.channel, m.chat_id, m.content) for m in drain(out)] == [("pigeon", "7", "Feed them")]


async def test_heartbeat_and_system_jobs_reach_the_owner():
    from mimi.services import heartbeat as hb
    from mimi.services import cron as cronsvc
    from test_cron import FakeClock, drain

    pigeon()
    assert channels.owner() is None
    cfg.set("pigeon_allow", "77,78")
    assert channels.owner() == ("pigeon", "77")
    out = bus.Queue(8)
    await hb.send(bus.Msg(channels.SYSTEM, hb.CHAT_ID, "The loft door is open"), out)
    await hb.send(bus.Msg(channels.SYSTEM, hb.CHAT_ID, "HEARTBEAT_OK"), out)
    await hb.send(bus.Msg(channels.SYSTEM, "cron", "Morning briefing"), out)
    assert [(m.channel, m.chat_id, m.content) for m in drain(out)] == [
        ("pigeon", "77", "The loft door is open"), ("pigeon", "77", "[cron] Morning briefing")]
    from support import write

    write(hb.PATH, "- [ ] count the pigeons\n")
    assert "answer goes to pigeon:77" in hb.check(lambda m: True)
    s = cronsvc.Scheduler(clock=FakeClock(T0), inbound=bus.Queue(4), outbound=out)
    s.load()
    s.add("pills", "at", "Pills!", at_epoch=T0 + 10, deliver=True)  # a system job
    assert len(s.tick(T0 + 10)) == 1
    assert [(m.channel, m.chat_id, m.content) for m in drain(out)] == [("pigeon", "77", "Pills!")]


async def test_task_list_starts_a_channel_once_its_setting_is_set():
    from mimi.channels import dispatch

    bus.prepare_loop()  # a ThreadSafeFlag waits below (unix port poll bug)
    channels.TABLE[:] = []  # only the throwaway channel: no gateway, no heartbeat here
    pigeon(needs="pigeon_allow")
    ts = dispatch.tasks()
    assert runs == [] and len(ts) == 1  # not configured: only the task that waits for it
    waiter = asyncio.create_task(ts[0])
    await asyncio.sleep_ms(10)
    cfg.set("tz", "+01:00")  # another setting: still waiting
    await asyncio.sleep_ms(10)
    assert runs == [] and "pigeon" not in dispatch._lanes
    cfg.set("pigeon_allow", "5")
    await until(lambda: runs == [1], "the channel to start")
    assert "pigeon" in dispatch._lanes
    await until(lambda: waiter.done(), "the waiting task to end")
    assert "E " not in "\n".join(log.recent())


def test_strangers_are_told_once_per_window_and_rotation_buys_nothing():
    told = {}
    assert channels.tell_again(told, "a", 3600, 2) and not channels.tell_again(told, "a", 3600, 2)
    assert channels.tell_again(told, "b", 3600, 2)
    # full, and both still inside their window: nobody new is told (issue 16 item 7:
    # 60 strangers taking turns were each told every time)
    assert not channels.tell_again(told, "c", 3600, 2) and sorted(told) == ["a", "b"]
    n = sum(channels.tell_again(told, str(i % 60), 3600, 2) for i in range(600))
    assert n == 0 and sorted(told) == ["a", "b"]
    import time

    told["b"] = time.ticks_add(told["b"], -3601 * 1000)  # its window has passed
    assert channels.tell_again(told, "b", 3600, 2) and len(told) == 2
    told["a"] = time.ticks_add(told["a"], -3601 * 1000)
    assert channels.tell_again(told, "c", 3600, 2) and sorted(told) == ["b", "c"]  # "a" made room
