# Rules (SPEC §14, services/rules/): made with the tools against the simulated parts,
# run by the engine's passes at ticks the test chooses (never waited for): a threshold
# that switches a relay with hysteresis, a button's press through its pin interrupt to a
# notice, a flapping input held by the cooldown, a device that stops answering, notices
# that wait for the network, refusals that write nothing, a damaged file moved aside,
# and the rules still there after a restart.
import json
import sys
import time
from support import raises, rules_load, rules_pass  # noqa: F401
from mimi import bus, fs, limits, log
from mimi.config.settings import cfg
from mimi.devices.sim import parts
from mimi.services import wifi

HOME = ("websocket", "home")


def setup():
    cfg.load()
    parts.clear()
    wifi.supervisor._online = True
    while bus.outbound.get_nowait() is not None:
        pass
    while bus.inbound.get_nowait() is not None:
        pass


def call(tool, ctx=HOME, **args):
    from mimi.tools.registry import registry, Ctx

    return registry.call(tool, args, Ctx(*ctx) if ctx else None)


def engine():
    return rules_load()


def sent():
    """The replies on bus.outbound since the last look: [(channel, chat, text)]."""
    out = []
    while True:
        m = bus.outbound.get_nowait()
        if m is None:
            return out
        out.append((m.channel, m.chat_id, m.content))


class Ticks:
    """Loop time the test moves: each pass of the engine at .now."""

    def __init__(self):
        self.now = time.ticks_ms()

    async def step(self, e, seconds=0):
        self.now = time.ticks_add(self.now, int(seconds * 1000))
        return await rules_pass(self.now)


def warm_room():
    parts.attach("sht3x", sda=8, scl=9, addr=0x44, temp=25, hum=40)
    parts.attach("relay", pin=21)
    assert call("device_add", name="room", type="sht3x").startswith("OK")
    assert call("device_add", name="fan", type="relay", pin=21).startswith("OK")


async def test_threshold_switches_a_relay_and_it_returns_below_the_hysteresis():
    warm_room()
    out = call("rule_add", name="cool down", device="room", when="above", value=28, hysteresis=1,
               every_s=1, then="set", target="fan", to="on", otherwise="off")
    assert out.startswith("OK: rule 1: when room above 28 (hysteresis 1), checked every 1 s: set fan "
                          "to on, otherwise off; now room = 25 \u00b0C"), out
    e = engine()
    clock = Ticks()
    await clock.step(e)
    assert parts.get("relay@21")["on"] is False
    for temp, on in ((28.5, True), (27.5, True), (27.0, True), (26.9, False), (27.9, False), (28.1, True)):
        parts.set("sht3x@0x44", temp=temp)
        await clock.step(e, 1)
        assert parts.get("relay@21")["on"] is on, (temp, on)
    assert sent() == []  # a set rule says nothing
    assert "holds now" in call("rule_list")


async def test_rises_and_falls_count_from_the_lowest_and_highest_since_they_fired():
    warm_room()
    assert call("rule_add", name="up", device="room", when="rises", hysteresis=2, every_s=1, then="notify",
                text="up {value}").startswith("OK: rule 1: when room rises")
    assert call("rule_add", name="down", device="room", when="falls", hysteresis=2, every_s=1, then="notify",
                text="down {value}", cooldown_s=10).startswith("OK: rule 2: when room falls")
    e = engine()
    clock = Ticks()
    await clock.step(e)  # 25: where both start
    got = []
    for temp in (24, 23.5, 24.5, 25.8, 26.3, 25, 24, 23, 21.5, 22):
        parts.set("sht3x@0x44", temp=temp)
        await clock.step(e, 11)
        got += [m[2] for m in sent()]
    # rises: more than 2 above the lowest since it fired (23.5 -> 25.8); falls: more than 2
    # below the highest since (26.3 -> 24, then 24 -> 21.5; 23 was not)
    assert got == ["up 25.8 \u00b0C", "down 24 \u00b0C", "down 21.5 \u00b0C"], got


async def test_a_button_press_reaches_the_chat_through_its_interrupt():
    parts.attach("button", pin=4)
    assert call("device_add", name="door", type="button", pin=4).startswith("OK")
    out = call("rule_add", name="bell", device="door", when="pressed", then="notify", text="{name} was {value}")
    assert out.startswith("OK: rule 1: when door pressed: notify \"{name} was {value}\" (at most every 60 s)"), out
    e = engine()
    clock = Ticks()
    wait = await clock.step(e)
    assert wait > 60000  # nothing polled: a press wakes it
    parts.set("button@4", pressed=1)
    time.sleep_ms(5)  # (the pin's soft IRQ runs)
    parts.set("button@4", pressed=0)
    assert e.presses == ["door"]
    await clock.step(e)
    assert sent() == [("websocket", "home", "door was pressed")]
    assert e.presses is None  # (at rest: no list kept)


async def test_a_notice_to_a_websocket_chat_with_no_page_open_is_said_in_the_log():
    # SPEC §7 and §14 keep no notices for a chat page that is closed: what reaches it is
    # what an open page gets; a rule's notice is in no session (only the agent's turns are)
    from mimi.channels.websocket import gateway

    parts.attach("button", pin=4)
    assert call("device_add", name="door", type="button", pin=4).startswith("OK")
    assert call("rule_add", name="bell", device="door", when="pressed", then="notify",
                text="someone at the {name}").startswith("OK")
    e = engine()
    clock = Ticks()
    await clock.step(e)
    parts.set("button@4", pressed=1)
    time.sleep_ms(5)
    parts.set("button@4", pressed=0)
    await clock.step(e)
    m = bus.outbound.get_nowait()
    assert (m.channel, m.chat_id, m.content, m.kind) == ("websocket", "home", "someone at the door", bus.REPLY)
    assert gateway.clients == []
    log.clear()
    await gateway.send(m)
    assert any("W ws: no client on chat home; a rule's notice is not kept: someone at the door" in line
               for line in log.recent()), log.recent()
    assert not fs.exists("/spiffs/sessions/ws_home.jsonl")
    log.clear()
    await gateway.send(bus.Msg("websocket", "home", "an answer"))  # an agent's: stored by the agent first
    assert any("no client on chat home; the reply stays in its session" in line for line in log.recent())


async def test_a_flapping_input_is_held_by_the_cooldown():
    parts.attach("button", pin=4, bounce=3)
    call("device_add", name="door", type="button", pin=4)
    call("rule_add", name="bell", device="door", when="pressed", then="notify", text="ding", cooldown_s=30)
    e = engine()
    clock = Ticks()
    got = []
    for k in range(12):  # a press every 5 s for a minute, each bouncing 3 times
        parts.set("button@4", pressed=1)
        time.sleep_ms(60)
        parts.set("button@4", pressed=0)
        time.sleep_ms(60)
        assert e.presses == ["door"], e.presses  # debounced: its bounces are one press
        await clock.step(e, 5)
        got += sent()
    assert got == [HOME + ("ding",)] * 2, got  # at 5 s and 35 s (30 s apart)
    assert any("held by its cooldown" in line for line in log.recent(40))


async def test_rules_survive_a_restart():
    warm_room()
    call("rule_add", name="hot", device="room", when="above", value=30, then="notify", text="hot: {value}")
    call("rule_add", name="fan", device="room.humidity", when="below", value=30, every_s=60, then="set",
         target="fan", to="off")
    before = fs.read_text(limits.RULES_PATH)
    import mimi

    for m in [m for m in sys.modules if m.startswith("mimi.services.rules")]:
        mimi.unload(m)
    import mimi.services.rules as e

    assert e.rules is None
    rules_load()
    n = 15  # (one flat list, check.py's _N slots a rule)
    assert len(e.rules) == 2 * n and e.rules[0::n] == [1, 2] and e.rules[n + 2] == "humidity"
    assert e.rules[8] is None and e.rules[n + 8:n + 11] == ["fan", "off", None]  # (target, to, otherwise: set rules')
    assert all(x[:] is x for x in e.rules if isinstance(x, str))  # qstrs, kept once
    listing = call("rule_list")
    assert listing.startswith("1 hot: when room above 30, checked every 10 s: notify \"hot: {value}\" "
                              "(at most every 60 s); to websocket home\n2 fan: when room.humidity below 30"), listing
    assert fs.read_text(limits.RULES_PATH) == before
    saved = json.loads(before)["rules"]
    assert saved[0]["channel"] == "websocket" and saved[0]["chat_id"] == "home" and saved[0]["cooldown_s"] == 60


def test_bad_rules_are_refused_and_nothing_is_written():
    warm_room()
    parts.attach("bh1750", sda=8, scl=9, addr=0x23)
    call("device_add", name="light", type="bh1750")
    cases = (
        (dict(name="x", device="nope", when="above", value=1, then="notify", text="t"), "no device named 'nope'"),
        (dict(name="x", device="room", when="above", value=1, then="set", target="light", to="on"),
         "light is a sensor (bh1750): 'set' drives an actuator"),
        (dict(name="x", device="room", when="above", value="warm", then="notify", text="t"),
         "'value' must be a number, not \"warm\""),
        (dict(name="x", device="room", when="above", value=30, then="set", target="fan", to="purple"),
         "'to': fan takes on or off"),
        (dict(name="x", device="room", when="above", value=1, then="notify", text="t", cooldown_s=2),
         "'cooldown_s' must be a whole number of seconds, 10 to 86400"),
        (dict(name="x", device="room", when="hotter", value=1, then="notify", text="t"), "'when' must be one of"),
        (dict(name="x", device="room", when="changes", then="notify"), "'text' is required"),
        (dict(name="x", device="room", when="above", then="notify", text="t"), "'above' needs 'value'"),
        (dict(name="x", device="room", when="pressed", then="notify", text="t"), "'pressed' watches a button"),
        (dict(name="x", device="room", when="changes", then="set", target="fan", to="on", otherwise="off"),
         "'otherwise' goes with above/below"),
        (dict(name="x", device="room.pressure", when="above", value=1, then="notify", text="t"),
         "room has no reading 'pressure'"),
        (dict(name="x", device="room", when="above", value=1, then="notify", text="t", colour="red"),
         "unknown 'colour'"),
        (dict(name="x", device="room", when="above", value=1, every_s=0, then="notify", text="t"),
         "'every_s' must be a whole number of seconds, 1 to 86400"),
    )
    for args, why in cases:
        out = call("rule_add", **args)
        assert out.startswith("Error: ") and why in out and out.endswith("no rule was added"), (args, out)
    assert not fs.exists(limits.RULES_PATH)
    for k in range(limits.RULES_MAX):
        assert call("rule_add", name="r%d" % k, device="room", when="changes", then="notify",
                    text="t").startswith("OK: rule %d:" % (k + 1))
    before = fs.read_text(limits.RULES_PATH)
    out = call("rule_add", name="one more", device="room", when="changes", then="notify", text="t")
    assert out == "Error: at most 16 rules; remove one first (rule_list); no rule was added", out
    assert fs.read_text(limits.RULES_PATH) == before
    assert call("device_remove", name="room").startswith("Error: rule 1, 2, 3")
    assert call("rule_remove", id=99) == "Error: no rule 99 (rule_list shows their ids)"
    assert call("rule_remove", id=3) == "OK: removed rule 3 (r2)"
    assert "\n3 " not in call("rule_list")


def test_a_damaged_rule_file_is_moved_aside():
    fs.write_atomic(limits.RULES_PATH, '{"rules": [{"id": 1, "when": "soon"}')
    e = engine()
    assert e.rules == [] and not fs.exists(limits.RULES_PATH)
    assert fs.read_text(limits.RULES_BAD).startswith('{"rules"')
    assert any("/rules.json is damaged" in line and "moved aside to /rules.bad.json" in line for line in log.recent(20))
    assert "moved aside to /rules.bad.json" in call("rule_list")


async def test_a_device_that_stops_answering_is_retried_with_backoff_and_told_once():
    warm_room()
    call("rule_add", name="hot", device="room", when="above", value=30, every_s=2, then="notify", text="hot")
    e = engine()
    clock = Ticks()
    await clock.step(e)
    parts.set("sht3x@0x44", fault="nack")
    waits = []
    for _ in range(6):
        waits.append(await clock.step(e, waits[-1] / 1000 if waits else 2))
    assert waits == [4000, 8000, 16000, 32000, 64000, 128000], waits
    got = sent()
    assert len(got) == 1 and got[0][2].startswith("Rule 1 (hot): room (sht3x at 0x44 on SDA 8 / SCL 9) "
                                                   "did not answer"), got
    assert got[0][2].endswith("Its rules wait and try again."), got
    parts.set("sht3x@0x44", fault=None, temp=31)
    await clock.step(e, 128)
    assert [m[2] for m in sent()] == ["Rule 1 (hot): room reads again; its rules run.", "hot"]


async def test_set_rules_run_offline_and_notices_wait_then_are_summed_up():
    warm_room()
    call("rule_add", name="fan", device="room", when="above", value=28, every_s=1, then="set", target="fan",
         to="on", otherwise="off")
    call("rule_add", name="tell", device="room", when="changes", hysteresis=0.5, every_s=1, cooldown_s=10,
         then="notify", text="now {value}")
    e = engine()
    clock = Ticks()
    await clock.step(e)
    wifi.supervisor._online = False
    for k in range(6):
        parts.set("sht3x@0x44", temp=26 + 2 * (k % 2) + k * 0.2)
        await clock.step(e, 10)
    assert parts.get("relay@21")["on"] is True  # 28.2 at the fourth step: switched with WiFi down
    assert sent() == [] and len(e.notes[0]) == 6  # (act.py's held notices)
    wifi.supervisor._online = True
    await clock.step(e, 1)
    got = sent()
    assert len(got) == 1 and got[0][:2] == HOME, got
    assert got[0][2].startswith("While I could not send, 6 notices came:\n- now 26 \u00b0C\n- now 28.2 \u00b0C\n"), got


async def test_the_hourly_ceiling_sums_up_the_rest():
    warm_room()
    call("rule_add", name="tell", device="room", when="changes", every_s=1, cooldown_s=10, then="notify",
         text="{value}")
    e = engine()
    clock = Ticks()
    await clock.step(e)
    got = []
    for k in range(limits.RULE_NOTICES_HOUR + 5):
        parts.set("sht3x@0x44", temp=20 + k)
        await clock.step(e, 60)
        got += sent()
    assert len(got) == limits.RULE_NOTICES_HOUR, got
    await clock.step(e, 3600)
    got = sent()
    assert got[0][2].startswith("(5 more not shown"), got


class Model:
    """An LLM that answers at once (tests/mp/test_usage.py's way: provider.from_config)."""
    name = "openai"
    model = "gpt-5-mini"
    calls = 0

    def chat(self, system, messages, tools):
        from mimi.llm import provider

        self.calls += 1
        self.asked = messages[-1]["content"]
        return provider.Reply("Open a window.", [], {"input": 100, "output": 10, "cache_read": 0, "cache_write": 0})


async def test_an_ask_rule_is_a_turn_in_its_chat_and_the_spend_caps_count_it():
    import mimi
    from mimi.agent import worker
    from mimi.llm import provider

    warm_room()
    out = call("rule_add", ("telegram", "42"), name="hot", device="room", when="above", value=28, every_s=1,
               cooldown_s=10, then="ask", prompt="{name} is {value}: what should I do?")
    assert out.startswith("OK: rule 1: when room above 28, checked every 1 s: ask the agent "
                          "\"{name} is {value}: what should I do?\" (at most every 10 s)"), out
    mimi.drop("usage.ledger")
    cfg.set("max_calls_day", 1)
    model = Model()
    provider.from_config = lambda c: model
    e = engine()
    clock = Ticks()
    asked = []
    for temp in (29, 27, 29.5):  # above, cleared, above again after the cooldown
        parts.set("sht3x@0x44", temp=temp)
        await clock.step(e, 11)
        m = bus.inbound.get_nowait()
        if m is not None:
            asked.append(m)
    assert len(asked) == 2 and model.calls == 0, asked  # the rule asks; the agent thread answers
    m = asked[0]
    assert (m.channel, m.chat_id, m.meta) == ("telegram", "42", {"rule": 1}), m
    assert m.content == "[rule 1 'hot': room 29 \u00b0C] room is 29 \u00b0C: what should I do?", m.content
    assert worker.run_message(m) == "Open a window." and model.calls == 1
    # the day's cap (max_calls_day 1) counted that turn: the next ask makes no LLM call and
    # nothing goes to the chat (a rule's turn, like cron's, is dropped quietly)
    assert worker.run_message(asked[1]) == "" and model.calls == 1
    assert any("turn refused: the daily limit of 1 LLM calls" in line for line in log.recent(20))
    cfg.set("max_calls_day", 0)


async def test_a_rule_made_on_the_repl_tells_the_owner_and_goes_with_rule_remove():
    from mimi.console import commands

    cfg.update({"tg_token": "123456789:AAbbccddeeffgghhiijjkkllmmnnoopp", "tg_allow": "42,7"})
    warm_room()
    commands.rule_add("hot", "room", "above", "notify", value=28, every_s=1, text="{name} at {value}")
    assert "to the owner" in call("rule_list")
    e = engine()
    clock = Ticks()
    await clock.step(e)
    parts.set("sht3x@0x44", temp=29)
    await clock.step(e, 1)
    assert sent() == [("telegram", "42", "room at 29 \u00b0C")]  # the first id of the first allow-list
    commands.rule_remove(1)
    assert call("rule_list").startswith("No rules.")
    rules_load()
    assert e.rules == []


async def test_on_a_short_heap_what_a_pass_says_waits_until_the_device_layer_is_gone():
    # act.py (and the rule file's words it reads) is loaded after the pass's reads and
    # drives, when the device layer's code and the drivers have gone: not all at once
    import mimi
    from mimi.services.rules import act

    warm_room()
    call("rule_add", name="hot", device="room", when="above", value=28, every_s=1, then="notify", text="hot")
    call("rule_add", name="fan", device="room", when="above", value=28, every_s=1, then="set", target="fan",
         to="on")
    seen = []
    real = act.fire, act.tell

    def fire(*args):
        seen.append(("fire", "mimi.devices.table" in sys.modules))
        real[0](*args)

    def tell(*args):
        seen.append(("tell", "mimi.devices.table" in sys.modules))
        real[1](*args)

    act.fire, act.tell = fire, tell
    mimi._short = True  # (the heap as a board without PSRAM has it: the device layer dropped after use)
    try:
        e = engine()
        clock = Ticks()
        await clock.step(e)
        parts.set("sht3x@0x44", fault="nack")
        await clock.step(e, 1)
        parts.set("sht3x@0x44", fault=None, temp=29)
        await clock.step(e, 2)
    finally:
        mimi._short = False
        act.fire, act.tell = real
    assert parts.get("relay@21")["on"] is True
    assert seen == [("tell", False), ("tell", False), ("fire", False)], seen
    assert [m[2] for m in sent()] == ["Rule 1 (hot): room (sht3x at 0x44 on SDA 8 / SCL 9) did not answer: no "
                                      "acknowledge. Check the wiring (SDA to SDA, SCL to SCL), the address, the "
                                      "pull-ups (4.7 kOhm to 3V3) and the power (3.3 V). Its rules wait and try "
                                      "again.", "Rule 1 (hot): room reads again; its rules run.", "hot"]


async def test_no_room_to_read_or_drive_loses_a_pass_not_the_device():
    # a MemoryError while a pass reads or drives (a turn at its peak on a short heap) is
    # not the device's failure: no backoff, nothing told; the next pass reads and switches
    warm_room()
    call("rule_add", name="hot", device="room", when="above", value=28, every_s=1, then="notify", text="hot")
    call("rule_add", name="fan", device="room", when="above", value=28, every_s=1, then="set", target="fan",
         to="on", otherwise="off")
    e = engine()
    clock = Ticks()
    await clock.step(e)
    from mimi.devices.drivers import digital, sht3x  # (a heap with room keeps them)

    def full(*args):
        raise MemoryError("memory allocation failed, allocating 636 bytes")

    real = sht3x.SHT3x.read, digital.Out.set
    parts.set("sht3x@0x44", temp=29)
    sht3x.SHT3x.read = full
    try:
        assert await clock.step(e, 1) == 1000
    finally:
        sht3x.SHT3x.read = real[0]
    assert sent() == [] and e.bad == {}, e.bad
    assert any("no room in the heap for a pass" in line for line in log.recent(10))
    digital.Out.set = full
    try:
        await clock.step(e, 1)
    finally:
        digital.Out.set = real[1]
    assert parts.get("relay@21")["on"] is False and e.bad == {}, e.bad
    assert await clock.step(e, 1) == 1000
    assert parts.get("relay@21")["on"] is True
    assert [m[2] for m in sent()] == ["hot"]


async def _wake(flag, n):
    """The rules' loop (services/rules/__init__.py run()) woken n times, each time left to
    run until it waits again."""
    import asyncio

    for _ in range(n):
        flag.set()
        for _ in range(20):  # (a pass awaits the SHT3x's conversion)
            await asyncio.sleep_ms(5)


async def test_a_pass_waits_while_a_turn_runs_on_a_short_heap():
    # a turn takes the heap at its start (its prompt, its history) and at its LLM calls:
    # on a short heap a pass begun with room was in its way, so it waits for the turn too
    # (at most RULE_HOLD_MS: the next test)
    import asyncio
    import mimi
    import mimi.services.rules as e
    from mimi.agent import worker

    warm_room()
    call("rule_add", name="fan", device="room", when="above", value=28, every_s=1, then="set", target="fan",
         to="on")
    parts.set("sht3x@0x44", temp=29)
    relay = parts.find("relay@21")
    flag = asyncio.ThreadSafeFlag()
    mimi._short = True
    worker.busy = True
    task = asyncio.create_task(e.run(flag))
    try:
        await _wake(flag, limits.RULE_HOLD_MS // 500 - 2)
        assert relay.state()["on"] is False  # no pass while the turn runs
        worker.busy = False
        for _ in range(3):  # (the first pass loads the rules, the next reads)
            await _wake(flag, 1)
        assert relay.state()["on"] is True  # the turn is over: the passes ran
    finally:
        task.cancel()
        worker.busy = mimi._short = False


async def test_a_pass_waits_while_a_turn_holds_the_heap_at_most_rule_hold_ms():
    # a pass loads ~14-16 KB on a short heap: with less than RULE_PASS_ROOM free (a turn at
    # its peak) it waits half a second at a time (a wake counts as one wait), then runs
    # once there is room, or after RULE_HOLD_MS of waits whatever the heap
    import asyncio
    import mimi.services.rules as e
    from mimi.agent import worker  # noqa: F401  (loaded, as the firmware's agent thread has it)
    from support import leave_free

    warm_room()
    call("rule_add", name="fan", device="room", when="above", value=28, every_s=1, then="set", target="fan",
         to="on", otherwise="off")
    parts.set("sht3x@0x44", temp=29)
    flag = asyncio.ThreadSafeFlag()

    async def wake(n):
        await _wake(flag, n)

    relay = parts.find("relay@21")  # (its state read without loading the simulator's console side)
    ballast = leave_free(limits.RULE_PASS_ROOM // 2)
    log.clear()
    task = asyncio.create_task(e.run(flag))
    try:
        await wake(limits.RULE_HOLD_MS // 500 - 2)
        assert relay.state()["on"] is False  # no pass yet
        assert not any("no room" in line or "no pass" in line for line in log.recent()), log.recent()
        ballast = None
        for _ in range(3):  # (the first pass loads the rules, the next reads)
            await wake(1)
        assert relay.state()["on"] is True, log.recent()  # room again: the passes ran
        parts.set("sht3x@0x44", temp=20)
        ballast = leave_free(limits.RULE_PASS_ROOM - 4096)
        await wake(limits.RULE_HOLD_MS // 500 - 2)
        assert relay.state()["on"] is True  # held
        await wake(3)  # past RULE_HOLD_MS: the pass runs (and switches, or finds no room and says so)
        ran = relay.state()["on"] is False or any("no room" in line or "no pass" in line
                                                          for line in log.recent())
        ballast = None
        assert ran, log.recent()
    finally:
        task.cancel()
        ballast = None  # noqa: F841


async def test_a_device_that_stops_answering_is_told_with_one_read_of_the_rule_file():
    # its rules' chats are told at once: the file (and its words) read once for them all
    from mimi.services.rules import upkeep

    warm_room()
    call("rule_add", name="hot", device="room", when="above", value=30, every_s=1, then="notify", text="hot")
    call("rule_add", name="damp", device="room.humidity", when="above", value=80, every_s=1, then="notify",
         text="damp")
    e = engine()
    clock = Ticks()
    await clock.step(e)
    parts.set("sht3x@0x44", fault="nack")
    reads = []
    real = upkeep.read

    def read():
        reads.append(1)
        return real()

    upkeep.read = read
    try:
        await clock.step(e, 1)
    finally:
        upkeep.read = real
    got = sent()
    assert len(got) == 1 and got[0][2].startswith("Rule 1 (hot): room (sht3x"), got
    assert len(reads) == 1, reads
