# The agent thread (lib/mimi/agent/worker.py) with a stub LLM provider.
import time
import support
from mimi import bus
from mimi.config import settings as config
from mimi.agent import worker
from mimi.llm import provider
from mimi.memory import sessions

TIMEOUT = 60


class Stub:
    """Provider.chat stand-in: answers from a list; an Exception item is raised."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.calls = []

    def chat(self, system, messages, tools):
        self.calls.append((system, [dict(m) for m in messages]))
        a = self.answers.pop(0) if self.answers else "Echo: %s" % messages[-1]["content"]
        if isinstance(a, Exception):
            raise a
        return provider.Reply(a)


def use(stub):
    provider.from_config = lambda cfg: stub
    return stub


def setup():
    config.cfg.load()


def test_turn_saved_on_success_and_history_used():
    s = use(Stub("first answer", "second answer"))
    m = bus.Msg("websocket", "w1", "hello")
    assert worker.run_message(m) == "first answer"
    assert sessions.load("ws_w1") == [{"role": "user", "content": "hello"},
                                      {"role": "assistant", "content": "first answer"}]
    assert worker.run_message(bus.Msg("websocket", "w1", "again")) == "second answer"
    system, msgs = s.calls[1]
    assert [x["content"] for x in msgs] == ["hello", "first answer", "again"]
    assert isinstance(system, list) and len(system) == 2  # [fixed, per-turn] for prompt caching
    assert "w1" in system[1] and "w1" not in system[0]  # the per-turn part names the chat
    assert not worker.busy


def test_the_streamed_answers_code_loads_for_the_calls():
    """llm/stream.py (3.9 KB of a .mpy's heap) loads once the prompt is made and the
    history read, before the LLM calls: never beside the prompt's making."""
    import sys
    import mimi

    class Streaming(Stub):
        stream = None

    use(Streaming("streamed"))
    was = config.cfg.get("stream")
    config.cfg.set("stream", True)
    mimi.unload("mimi.llm.stream")
    seen = []
    made = worker._system_prompt
    worker._system_prompt = lambda *a: seen.append("mimi.llm.stream" in sys.modules) or made(*a)
    try:
        assert worker.run_message(bus.Msg("telegram", "9", "hi")) == "streamed"
    finally:
        worker._system_prompt = made
        config.cfg.set("stream", was)
    assert seen == [False] and "mimi.llm.stream" in sys.modules


def test_group_messages_carry_the_speakers_name():
    s = use(Stub("hi Ann", "hi Bob"))
    group = {"group": True, "message_id": 3}
    worker.run_message(bus.Msg("telegram", "-100", "hello", meta=dict(group, sender="Ann\nSmith")))
    worker.run_message(bus.Msg("telegram", "-100", "me too", meta=dict(group, sender="Bob" * 20)))
    system, msgs = s.calls[1]
    bob = ("Bob" * 20)[:32]
    assert [m["content"] for m in msgs] == ["Ann Smith: hello", "hi Ann", bob + ": me too"]
    assert "chat_type: group" in system[1] and "Ann:" in system[1]  # the prompt says how to read them
    assert sessions.load("tg_-100")[0] == {"role": "user", "content": "Ann Smith: hello"}
    # a private chat (or a group message without a name): as written, no group line
    worker.run_message(bus.Msg("telegram", "42", "solo", meta={"group": False, "sender": "Ann"}))
    worker.run_message(bus.Msg("telegram", "-7", "nameless", meta={"group": True}))
    assert s.calls[2][1][-1]["content"] == "solo" and "chat_type" not in s.calls[2][0][1]
    assert s.calls[3][1][-1]["content"] == "nameless" and "chat_type: group" in s.calls[3][0][1]


def test_llm_failure_not_saved():
    use(Stub(provider.LLMError("HTTP 500 from the API")))
    out = worker.run_message(bus.Msg("websocket", "w2", "hello"))
    assert "HTTP 500" in out
    assert sessions.load("ws_w2") == []


def test_exception_becomes_sorry_reply():
    def broken(cfg):
        raise ValueError("no API key: set one with set_api_key('...')")

    provider.from_config = broken
    out = worker.run_message(bus.Msg("telegram", "5", "hi"))
    assert out.startswith("Sorry, something went wrong: no API key")
    use(Stub(RuntimeError("boom")))
    out = worker.run_message(bus.Msg("telegram", "5", "hi"))
    assert out == "Sorry, something went wrong: boom"
    assert sessions.load("tg_5") == [] and not worker.busy


def _next_out(timeout_ms=10000):
    m = bus.outbound.get_blocking(timeout_ms, idle_ms=5)
    assert m is not None, "nothing on the outbound queue"
    return m


def test_thread_status_then_reply_and_survives_errors():
    use(Stub("one", RuntimeError("bad turn"), "three"))
    t0 = worker.progress
    assert worker.start() and not worker.start()  # once only
    try:
        for text in ("a", "b", "c"):
            assert bus.inbound.put(bus.Msg("websocket", "w3", text, meta={"k": text}))
        seen = [_next_out() for _ in range(6)]
        kinds = [(m.kind, m.content) for m in seen]
        assert kinds == [(bus.STATUS, "working"), (bus.REPLY, "one"),
                         (bus.STATUS, "working"), (bus.REPLY, "Sorry, something went wrong: bad turn"),
                         (bus.STATUS, "working"), (bus.REPLY, "three")]
        assert all(m.channel == "websocket" and m.chat_id == "w3" for m in seen)
        assert seen[1].meta == {"k": "a"}
        assert time.ticks_diff(worker.progress, t0) >= 0
        # system messages get no "working" status
        assert bus.inbound.put(bus.Msg("system", "cron", "check"))
        m = _next_out()
        assert (m.channel, m.kind) == ("system", bus.REPLY)
    finally:
        worker.stop()
    deadline = time.ticks_add(time.ticks_ms(), 5000)
    while worker.running() and time.ticks_diff(deadline, time.ticks_ms()) > 0:
        time.sleep_ms(20)
    assert not worker.running()


def test_each_tool_is_a_status_naming_it_where_a_person_waits():
    class Tools(Stub):
        def chat(self, system, messages, tools):
            self.calls.append(1)
            if len(self.calls) == 1:
                return provider.Reply("", [provider.Call("c1", "web_search", {"query": "w" * 99}),
                                           provider.Call("c2", "get_current_time", {})])
            return provider.Reply("done")

    use(Tools())
    while bus.outbound.get_nowait():
        pass
    msg = bus.Msg("telegram", "-5", "go", meta={"group": True, "message_id": 7})
    assert worker.run_message(msg) == "done"
    steps = [bus.outbound.get_nowait() for _ in range(2)]
    assert [(m.kind, m.content, m.meta) for m in steps] == [
        (bus.STATUS, "working", {"group": True, "message_id": 7, "step": "web_search", "detail": "w" * 60}),
        (bus.STATUS, "working", {"group": True, "message_id": 7, "step": "get_current_time", "detail": ""})]
    assert msg.meta == {"group": True, "message_id": 7}  # the message's own meta is left alone
    use(Tools())
    worker.run_message(bus.Msg("system", "cron", "go"))  # nobody waits: no statuses
    assert bus.outbound.get_nowait() is None


def test_full_outbound_waits_instead_of_dropping():
    use(Stub("kept"))
    for i in range(bus.outbound.size):
        assert bus.outbound.put(bus.Msg("websocket", "x", "filler %d" % i))
    assert worker.start()
    try:
        assert bus.inbound.put(bus.Msg("websocket", "w4", "hello"))
        time.sleep_ms(1500)  # the status may give up (AGENT_STATUS_WAIT_MS); the reply waits
        for i in range(bus.outbound.size):
            assert bus.outbound.get_nowait().content == "filler %d" % i
        m = _next_out()
        if m.kind == bus.STATUS:  # a slow machine: the status got in after all
            m = _next_out()
        assert (m.kind, m.content, m.chat_id) == (bus.REPLY, "kept", "w4")
    finally:
        worker.stop()


def test_turn_waits_for_the_clock_after_boot():
    # The board boots with its clock in 2000; TLS can't check certificates until NTP
    # sets it. A turn that arrives then waits for the clock instead of failing.
    import _thread
    from mimi import board

    s = use(Stub("after ntp"))
    board.clock.skew = -board.clock.unix() + 100  # "2000-ish": not valid
    assert not board.clock.valid()
    seen = []

    def ntp():
        time.sleep_ms(300)
        seen.append(s.calls[:])  # no LLM call while the clock was wrong
        board.clock.skew = 0

    _thread.start_new_thread(ntp, ())
    assert worker.run_message(bus.Msg("websocket", "w9", "hi")) == "after ntp"
    assert seen == [[]] and len(s.calls) == 1


def test_heartbeat_turns_carry_no_history_and_save_none():
    from mimi.services import heartbeat

    s = use(Stub("HEARTBEAT_OK", "HEARTBEAT_OK"))
    sent = []
    support.write("/spiffs/HEARTBEAT.md", "- [ ] water the plants\n")
    for _ in range(2):
        assert "queued" in heartbeat.check(lambda m: sent.append(m) or True)
    for m in sent:
        assert worker.run_message(m) == "HEARTBEAT_OK"
    # each check is one user message, not the growing list of earlier checks
    assert [len(msgs) for _, msgs in s.calls] == [1, 1]
    assert sessions.load(sent[0].session) == []


class Streamer(Stub):
    """A provider that streams: it hands the text so far to .stream while it answers."""
    stream = None

    def chat(self, system, messages, tools):
        self.seen = self.stream
        if self.stream:
            self.stream("Hel")
            self.stream("Hello")
        return super().chat(system, messages, tools)


def drain():
    out = []
    while True:
        m = bus.outbound.get_nowait()
        if m is None:
            return out
        out.append((m.kind, m.chat_id, m.content))


def test_partials_for_a_person_only_and_never_kept():
    s = use(Streamer("Hello there"))
    drain()
    assert worker.run_message(bus.Msg("websocket", "w9", "hi")) == "Hello there"
    assert drain() == [(bus.PARTIAL, "w9", "Hel"), (bus.PARTIAL, "w9", "Hello")]
    assert s.stream is None  # the provider is kept for the next turn: not its target
    # no person waits on the system channel (heartbeat, system cron): nothing streams
    from mimi import channels

    s.answers.append("ok")
    worker.run_message(bus.Msg(channels.SYSTEM, "cron", "job", meta={"stateless": True}))
    assert s.seen is None and drain() == []
    # the setting turns it off
    config.cfg.set("stream", False)
    try:
        s.answers.append("plain")
        assert worker.run_message(bus.Msg("websocket", "w9", "again")) == "plain"
        assert s.seen is None and drain() == []
    finally:
        config.cfg.set("stream", True)
    # a turn that fails leaves the provider without a target too
    s.answers.append(RuntimeError("boom"))
    worker.run_message(bus.Msg("websocket", "w9", "x"))
    assert s.seen is not None and s.stream is None
    drain()


def test_a_turns_garbage_does_not_make_the_heap_short():
    """Garbage counts as used until a collection: a turn that leaves much of it in a heap
    with room must not end as "short" (that dropped the LLM's connection at random, a TLS
    handshake more every few turns of the whole firmware's long run, bench/longrun.py)."""
    import gc
    import mimi
    from mimi import limits

    class Litter(Stub):
        def chat(self, system, messages, tools):
            gc.disable()  # no collection until the turn's end asks
            try:
                while gc.mem_free() > limits.HEAP_SHORT // 2:
                    bytearray(1024)  # garbage at once
            finally:
                gc.enable()
            self.left = gc.mem_free()
            return Stub.chat(self, system, messages, tools)

    s = use(Litter("tidy answer"))
    gc.collect()
    assert gc.mem_free() > 2 * limits.HEAP_SHORT  # the heap has room ...
    assert worker.run_message(bus.Msg("websocket", "w10", "hi")) == "tidy answer"
    assert s.left < limits.HEAP_SHORT  # ... but the turn's garbage made it look short
    assert not mimi.short()  # the end of the turn saw the room: it keeps the provider


def test_a_short_heap_lets_the_provider_go_but_keeps_its_connection():
    """The end of a turn on a short heap forgets the provider (its code and buffer) and
    keeps its idle connection for the next turn (bench/longrun.py: a TLS handshake a
    turn on 32-bit, a third of the turns on 64-bit at 512 KB, before): held by the worker
    while the provider's module is unloaded, the client's module kept loaded; a turn that
    found no room closes it (llmcases.connection_kept_past_the_provider: the provider's part)."""
    import sys

    class Client:
        closed = False

        def close(self):
            self.closed = True

    client = Client()
    seen = []
    __import__("mimi.llm.provider")  # (a turn loads it and the client's module)
    __import__("mimi.net.httpsync")
    m = sys.modules["mimi.llm.provider"]
    m.drop = lambda keep: seen.append(keep) or (("sig", client) if keep else None)
    worker._forget(True)
    assert seen == [True] and worker._kept == ("sig", client) and not client.closed
    assert "mimi.llm.provider" not in sys.modules and "mimi.net.httpsync" in sys.modules
    worker._forget(False)  # no room: the connection held goes too
    assert client.closed and worker._kept is None and "mimi.net.httpsync" not in sys.modules


def test_a_short_heap_lets_the_tool_table_go_and_the_next_turn_has_it_again():
    # mimi/tools (the tool table, 4.8 KB of .mpy) goes with the registry at a turn's end
    # on a short heap; a module of the package kept (web_search's state) stays itself
    import sys
    from mimi.tools import searchstate
    from mimi.tools.registry import registry

    names = registry.names()
    searchstate.prefer = "brave"
    worker._forget(True)
    assert "mimi.tools" not in sys.modules and "mimi.tools.registry" not in sys.modules
    from mimi.tools.registry import registry as again
    from mimi.tools import searchstate as state

    assert again.names() == names and state is searchstate and state.prefer == "brave"
    assert again.call("get_current_time", {}).startswith("20")
