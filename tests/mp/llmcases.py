# Scenarios run against both fake LLM servers (test_llm_providers.py, one item per provider):
# the real providers and HTTP client talk TLS to the fakes of tests/fakes/llm.py.
import llmfake
import support
from mimi import limits, board
from mimi.tools.registry import Registry, Ctx
from mimi.llm.provider import LLMError
from mimi.agent.react import run_turn

CLOCK_SCHEMA = {"type": "object", "properties": {}, "required": []}

SYSTEM = "You are Mimi.\n## Current Turn Context\nsource_channel: websocket"


def fixture(kind):
    return support.fixture("fake_" + kind)


def provider(kind, fx=None, key=None, base=None, **kw):
    fx = fx or fixture(kind)
    if kind == "anthropic":
        from mimi.llm.anthropic import Anthropic as cls
    else:
        from mimi.llm.openai import OpenAI as cls
    waits = []
    p = cls(key or fx["api_key"], model="test-model", api_base=base or fx["base_url"],
            ca=board.host_path(fx["ca"]), sleep=waits.append, **kw)
    p.waits = waits
    return p


def registry():
    r = Registry()
    r.add("get_current_time", "Time", CLOCK_SCHEMA, lambda a, ctx: "2026-01-01 09:00:00 UTC+00:00")
    r.add("echo", "Echo text", {"type": "object", "properties": {
        "text": {"type": "string", "description": "what to echo"},
        "n": {"type": "integer"}}, "required": ["text"]},
        lambda a, ctx: "echo:%s@%s" % (a["text"], ctx.chat_id if ctx else None))
    return r


def call(name, **args):
    return {"name": name, "input": args}


def turn(p, text="hi", history=(), system=SYSTEM, reg=None):
    return run_turn(p, system, list(history), text, reg or registry(), Ctx("websocket", "7"))


def snap(kind, bodies=True, last=None):
    return llmfake.snapshot(fixture(kind), bodies, last)


def bodies(kind):
    return [r["body"] for r in snap(kind)["requests"]]


def tool_outputs(kind, body):
    """The tool results a request carried, in order, as (id, content)."""
    out = []
    for m in body["messages"]:
        if kind == "openai":
            if m["role"] == "tool":
                out.append((m["tool_call_id"], m["content"]))
        elif isinstance(m["content"], list):
            for b in m["content"]:
                if b.get("type") == "tool_result":
                    out.append((b["tool_use_id"], b["content"]))
    return out


def clean(kind, handshakes=1):
    s = snap(kind, bodies=False)
    assert s["violations"] == [], s["violations"]
    if handshakes is not None:
        assert s["handshakes"] == handshakes, s["handshakes"]


# --- scenarios ------------------------------------------------------------------
def plain_answer(kind):
    fx = fixture(kind)
    llmfake.script(fx, {"text": "Hello there!"})
    p = provider(kind)
    t = turn(p, "hello")
    assert t.text == "Hello there!" and t.error is None and t.llm_calls == 1
    assert t.usage["input"] > 0 and t.usage["output"] > 0
    clean(kind)
    body = bodies(kind)[0]
    assert body["model"] == "test-model"
    req = snap(kind)["requests"][0]
    if kind == "anthropic":
        assert req["path"] == "/v1/messages"
        assert req["headers"]["x-api-key"] == fx["api_key"]
        assert req["headers"]["anthropic-version"] == "2023-06-01"
        assert body["messages"] == [{"role": "user", "content": "hello"}]
        assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
        assert body["max_tokens"] == limits.MAX_TOKENS_DEFAULT
    else:
        assert req["path"] == "/v1/chat/completions"
        assert req["headers"]["authorization"] == "Bearer " + fx["api_key"]
        assert body["messages"][0] == {"role": "system", "content": SYSTEM}
        assert body["max_tokens"] == limits.MAX_TOKENS_DEFAULT  # not api.openai.com
    p.close()


def three_tools_sequential(kind):
    fx = fixture(kind)
    llmfake.script(fx, {"text": "Let me check.", "tool_calls": [call("get_current_time")]},
                   {"tool_calls": [call("echo", text="a")]},
                   {"tool_calls": [call("echo", text="b", n=2)]},
                   {"text": "Done: a, b."})
    p = provider(kind)
    t = turn(p, "do three things")
    assert t.text == "Done: a, b." and t.error is None
    assert (t.llm_calls, t.tool_calls) == (4, 3)
    assert p.client.handshakes == 1
    clean(kind, handshakes=1)
    last = bodies(kind)[-1]
    outs = [o[1] for o in tool_outputs(kind, last)]
    assert outs == ["2026-01-01 09:00:00 UTC+00:00", "echo:a@7", "echo:b@7"]
    if kind == "anthropic":
        assert t.usage["cache_read"] > 0  # the fake serves the repeated prefix from cache
    p.close()


def three_tools_one_response(kind):
    fx = fixture(kind)
    llmfake.script(fx, {"tool_calls": [call("echo", text="1"), call("echo", text="2"),
                                       call("get_current_time")]},
                   {"text": "All three done."})
    p = provider(kind)
    t = turn(p)
    assert t.text == "All three done." and (t.llm_calls, t.tool_calls) == (2, 3)
    assert p.client.handshakes == 1
    clean(kind, handshakes=1)
    assert len(tool_outputs(kind, bodies(kind)[1])) == 3
    p.close()


def retry_429(kind):
    fx = fixture(kind)
    llmfake.script(fx, {"status": 429, "retry_after": 2, "message": "slow down"},
                   {"text": "after the wait"})
    p = provider(kind)
    t = turn(p)
    assert t.text == "after the wait" and p.waits == [2]
    assert [r["status"] for r in snap(kind)["requests"]] == [429, 200]
    clean(kind, handshakes=None)
    p.close()


def retry_500(kind):
    fx = fixture(kind)
    llmfake.script(fx, {"status": 500}, {"status": 503}, {"text": "recovered"})
    p = provider(kind)
    t = turn(p)
    assert t.text == "recovered" and p.waits == [limits.LLM_BACKOFF_BASE_S,
                                                 2 * limits.LLM_BACKOFF_BASE_S]
    clean(kind, handshakes=None)
    p.close()


def transport_failures_retried(kind):
    fx = fixture(kind)
    llmfake.script(fx, {"truncate": True, "text": "lost"}, {"delay_s": 3, "text": "too late"},
                   {"chunked": True, "text": "chunked answer"})
    p = provider(kind, timeout_s=1)
    t = turn(p)
    assert t.text == "chunked answer", t
    assert len(p.waits) == 2
    clean(kind, handshakes=None)
    p.close()


def unauthorized(kind):
    p = provider(kind, key="wrong-key")
    t = turn(p)
    assert t.error and p.waits == []
    if kind == "anthropic":
        assert t.error == "LLM error 401: invalid x-api-key", t.error
    else:
        assert t.error.startswith("LLM error 401: Incorrect API key provided"), t.error
    assert t.error in t.text
    clean(kind, handshakes=None)
    p.close()


def malformed_json(kind):
    llmfake.script(fixture(kind), {"raw": "{\"id\": \"msg_1\", \"content\": [tru"})
    p = provider(kind)
    t = turn(p)
    assert t.error and "malformed" in t.error and t.text
    p.close()


def think_stripped(kind):
    llmfake.script(fixture(kind), {"text": "<think>The user wants x.\nSo...</think>\n\nAnswer: 42"},
                   {"text": "<think>unterminated reasoning"}, {"text": "ok"})
    p = provider(kind)
    assert turn(p).text == "Answer: 42"
    t = turn(p)
    assert t.error == "empty reply"
    p.close()


def empty_content_with_tool_calls(kind):
    llmfake.script(fixture(kind), {"text": None, "tool_calls": [call("echo", text="z")]},
                   {"text": "", "tool_calls": [call("echo", text="y")]}, {"text": "fine"})
    p = provider(kind)
    t = turn(p)
    assert t.text == "fine" and t.tool_calls == 2
    clean(kind)
    p.close()


def unknown_tool_and_bad_args(kind):
    calls = [call("launch_rockets"), call("echo", n="three"), call("echo", text="ok")]
    if kind == "openai":
        calls.append({"name": "echo", "arguments": "{\"text\": "})
    llmfake.script(fixture(kind), {"tool_calls": calls}, {"text": "I could not do all of it."})
    p = provider(kind)
    t = turn(p)
    assert t.text == "I could not do all of it."
    clean(kind)
    outs = [o[1] for o in tool_outputs(kind, bodies(kind)[1])]
    assert outs[0] == "Error: unknown tool 'launch_rockets'"
    assert outs[1] == "Error: 'text' required (string)"
    assert outs[2] == "echo:ok@7"
    if kind == "openai":
        assert outs[3] == "Error: arguments are not valid JSON"
    p.close()


def too_many_calls_in_one_response(kind):
    calls = [call("echo", text=str(i)) for i in range(limits.MAX_TOOL_CALLS + 2)]
    llmfake.script(fixture(kind), {"tool_calls": calls}, {"text": "ok"})
    p = provider(kind)
    t = turn(p)
    assert t.text == "ok" and t.tool_calls == limits.MAX_TOOL_CALLS
    clean(kind)
    outs = tool_outputs(kind, bodies(kind)[1])
    assert len(outs) == len(calls)
    assert outs[-1][1].startswith("Error: too many tool calls")
    p.close()


def iteration_cap(kind):
    llmfake.script(fixture(kind), *[{"tool_calls": [call("echo", text=str(i))]}
                                    for i in range(limits.MAX_TOOL_ITER + 1)])
    p = provider(kind)
    t = turn(p)
    assert t.error == "iteration limit" and "ran out of steps" in t.text
    assert t.llm_calls == limits.MAX_TOOL_ITER and t.tool_calls == limits.MAX_TOOL_ITER
    s = snap(kind)
    assert len(s["requests"]) == limits.MAX_TOOL_ITER and s["violations"] == []
    p.close()


def plain_http_base(kind):
    fx = fixture(kind)
    llmfake.script(fx, {"text": "over plain http"})
    p = provider(kind, base=fx["http_base_url"] + "/v1")
    assert turn(p).text == "over plain http"
    clean(kind, handshakes=0)
    p.close()


def validator_catches_mismatched_id(kind):
    p = provider(kind)
    use = {"type": "tool_use", "id": "toolu_real", "name": "echo", "input": {"text": "x"}}
    msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "content": [use]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_fake",
                                          "content": "x"}]}]
    e = support.raises(LLMError, p.chat, "sys", msgs, registry())
    assert e.status == 400 and "toolu_fake" in str(e)
    v = snap(kind)["violations"]
    assert v and any("toolu_fake" in x for x in v), v
    p.close()


def tool_results_spilled_on_a_short_heap(kind):
    """On a short heap the turn's tool calls and results are written to limits.TURN_SPILL
    once and every later call of the turn reads them from there: the model gets the same
    requests as with room."""
    import mimi
    from mimi import fs

    text = "\u00e9\"\\ \u4e2d " * 500 + "x" * 1500  # escapes, characters across pieces
    sent = []
    for tight in (False, True):
        llmfake.script(fixture(kind), {"tool_calls": [call("echo", text=text)]},
                       {"tool_calls": [call("get_current_time")]}, {"text": "done"})
        fs.remove(limits.TURN_SPILL)
        mimi._short = tight
        try:
            p = provider(kind)
            t = turn(p, "go")
            p.close()
        finally:
            mimi._short = False
        assert t.text == "done" and t.tool_calls == 2 and t.error is None, t
        assert fs.exists(limits.TURN_SPILL) == tight
        last = snap(kind, last=1)["requests"][0]["body"]
        sent.append(([m["role"] for m in last["messages"]], [c for _, c in tool_outputs(kind, last)]))
    clean(kind, handshakes=None)
    assert sent[0] == sent[1], [(r, [len(c) for c in cs]) for r, cs in sent]
    assert sent[1][1] == ["echo:%s@7" % text, "2026-01-01 09:00:00 UTC+00:00"], sent[1][0]
    fs.remove(limits.TURN_SPILL)


def tool_table_spilled_on_a_short_heap(kind):
    """On a short heap the request's tool parts are written to limits.TOOLS_SPILL once a
    turn and the built-in table's module (mimi.tools: a .mpy's 4.9 KB) goes while the LLM
    calls run, loaded again for a tool's call and let go after it: the model gets the
    same tools as with room."""
    import sys
    import mimi
    from mimi import fs
    from mimi.tools.registry import registry as builtin

    sent = []
    for tight in (False, True):
        llmfake.script(fixture(kind), {"tool_calls": [call("get_current_time")]}, {"text": "done"})
        fs.remove(limits.TOOLS_SPILL)
        mimi._short = tight
        try:
            p = provider(kind)
            t = turn(p, "go", reg=builtin)
            p.close()
        finally:
            mimi._short = False
        assert t.text == "done" and t.tool_calls == 1 and t.error is None, t
        assert fs.exists(limits.TOOLS_SPILL) == tight
        assert ("mimi.tools" in sys.modules) != tight
        sent.append([b["tools"] for b in bodies(kind)[-2:]])
    clean(kind, handshakes=None)
    assert sent[0] == sent[1] and len(sent[0][0]) > 10, sent
    fs.remove(limits.TOOLS_SPILL)


def cache_survives_memory_change(kind):
    """The worker's system prompt is [fixed instructions, memory... + turn context]:
    when memory changes between turns, the tools + fixed part are still cache reads."""
    fixed = "You are Mimi. Fixed rules. " * 40
    p = provider(kind)
    t1 = turn(p, "one", system=[fixed, "Memory: A\n## Current Turn Context\nturn 1"])
    t2 = turn(p, "two", system=[fixed, "Memory: A\n## Current Turn Context\nturn 2"])
    t3 = turn(p, "three", system=[fixed, "Memory: B changed\n## Current Turn Context\nturn 3"])
    clean(kind)
    assert t1.usage["cache_read"] == 0
    # Same memory: everything before the turn context is read from the cache.
    assert t2.usage["cache_read"] > 0
    # New memory: only the memory block is new; tools + fixed still come from the cache.
    assert 0 < t3.usage["cache_read"] < t2.usage["cache_read"]
    assert t3.usage["cache_read"] > len(fixed) // 4 // 2
    p.close()


def connection_kept_past_the_provider(kind):
    """A turn that ends short of heap (agent/worker.py _forget: provider.drop(True)) lets
    the provider go, not its idle connection: the next turn's provider, made again from
    the same settings, sends on it (one TLS handshake for both turns); drop() closes it,
    and changed settings do not take it."""
    from mimi.net import tls
    from mimi.llm import provider as llm

    fx = fixture(kind)
    cfg = dict(provider=kind, api_key=fx["api_key"], api_base=fx["base_url"], model="test-model")
    llm.drop()
    llmfake.script(fx, {"text": "one"}, {"text": "two"}, {"text": "three"})
    p = llm.from_config(cfg)
    p.client.ca = board.host_path(fx["ca"])  # (the test CA; a board's is the ca_file setting)
    assert turn(p).text == "one"
    opened = tls.stats()["open"]
    llm.drop(True)
    assert p.client._sock is not None and p.client._buf is None  # the 2 KB buffer went
    q = llm.from_config(cfg)
    assert q is not p and q.client is p.client
    assert turn(q).text == "two" and q.client.handshakes == 1
    clean(kind, handshakes=1)
    llm.drop(True)
    cfg["model"] = "test-other"  # other settings: a provider of its own, the old one closed
    r = llm.from_config(cfg)
    assert r.client is not p.client and p.client._sock is None and tls.stats()["open"] == opened - 1
    r.client.ca = p.client.ca
    assert turn(r).text == "three" and r.client.handshakes == 1
    llm.drop()
    assert r.client._sock is None and tls.stats()["open"] == opened - 1
