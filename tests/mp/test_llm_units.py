# LLM layer without a network: tool registry, wire-format conversion, retries and
# the ReAct loop, against a scripted in-process transport.
import json
import support
from support import raises
from mimi import limits, log
from mimi.tools.registry import Registry, Ctx
from mimi.agent.act import cap
from mimi.llm.provider import (LLMError, Reply, Call, strip_think, split_base, from_config,
                               DEFAULT_MODEL)
from mimi.llm.anthropic import Anthropic
from mimi.llm.openai import OpenAI
from mimi.agent.react import run_turn


class Resp:
    def __init__(self, status, body, headers=None):
        self.status = status
        self.body = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.headers = headers or {}

    @property
    def text(self):
        return self.body.decode()

    def json(self):
        return json.loads(self.body)


def joined(body):
    """A request body (a tuple of parts, net/http.py) as the bytes it sends."""
    return support.joined(body)


class FakeTransport:
    """Client stand-in: replies from a list (Resp or exception), requests recorded."""

    def __init__(self, *replies):
        self.replies = list(replies)
        self.sent = []

    def request(self, method, path, headers=None, body=None, deadline_s=None):
        self.sent.append((method, path, headers, json.loads(joined(body))))
        r = self.replies.pop(0)
        if isinstance(r, Exception):
            raise r
        return r


def anthropic_ok(text="hi", calls=(), usage=None):
    content = [{"type": "text", "text": text}] if text else []
    for i, (name, args) in enumerate(calls):
        content.append({"type": "tool_use", "id": "toolu_%d_%s" % (i, name), "name": name,
                        "input": args})
    return Resp(200, {"id": "msg_1", "type": "message", "role": "assistant", "content": content,
                      "stop_reason": "tool_use" if calls else "end_turn",
                      "usage": usage or {"input_tokens": 10, "output_tokens": 5,
                                         "cache_read_input_tokens": 0}})


def _no_room(args, ctx):
    raise MemoryError("memory allocation failed, allocating 636 bytes")


def make_registry():
    r = Registry()
    r.add("echo", "Echo", {"type": "object", "properties": {
        "text": {"type": "string"}, "n": {"type": "integer"}}, "required": ["text"]},
        lambda a, ctx: "echo:" + a["text"])
    r.add("boom", "Fails", {"type": "object", "properties": {}, "required": []},
          lambda a, ctx: 1 // 0)
    r.add("big", "Big", {"type": "object", "properties": {}, "required": []},
          lambda a, ctx: "é" * 10000)
    r.add("where", "Ctx", {"type": "object", "properties": {}, "required": []},
          lambda a, ctx: "%s:%s" % (ctx.channel, ctx.chat_id))
    return r


def test_registry_errors_and_formats():
    r = make_registry()
    assert r.call("nope", {}) == "Error: unknown tool 'nope'"
    assert r.call("echo", '{"text": "a"}') == "echo:a"
    assert r.call("echo", {"text": "b", "n": 3.0}) == "echo:b"
    assert r.call("echo", "{not json").startswith("Error: ")
    assert r.call("echo", "[1]") == "Error: arguments must be a JSON object"
    assert r.call("echo", {}) == "Error: 'text' required (string)"
    assert r.call("echo", {"text": 5}) == "Error: 'text' must be a string"
    assert r.call("echo", {"text": "x", "n": "3"}) == "Error: 'n' must be an integer"
    assert r.call("echo", {"text": "x", "n": True}) == "Error: 'n' must be an integer"
    assert r.call("boom", None).startswith("Error: boom failed: ")
    # no room in the heap is said as such, not as the tool's bug (no traceback logged)
    full = Registry()
    full.add("full", "No room", {"type": "object", "properties": {}, "required": []}, _no_room)
    out = full.call("full", {})
    assert out.startswith("Error: full found no room in the board's memory ("), out
    assert "W tools: full: no room in the heap" in log.recent(1)[0] and "Traceback" not in "\n".join(log.recent(3))
    assert r.call("where", {}, Ctx("telegram", "42")) == "telegram:42"
    out = r.call("big", {})
    data = out.encode()
    assert len(data) <= limits.TOOL_OUTPUT_MAX and "truncated" in out
    out.encode().decode()  # still valid UTF-8
    assert cap("short") == "short"
    assert r.specs()[0] == ("echo", "Echo", json.dumps(r.schema("echo")))
    assert r.names() == ["echo", "boom", "big", "where"]
    raises(ValueError, r.add, "bad name", "x", {"type": "object"}, None)
    raises(ValueError, r.add, "ok", "x", {"type": "string"}, None)


def test_clock_tool():
    from mimi import board
    from mimi.config.settings import cfg
    from mimi.tools.clock import now_text
    from mimi.tools.registry import registry as reg

    assert "get_current_time" in reg.names()
    assert reg.schema("get_current_time") == {"type": "object", "properties": {}}
    assert now_text("+08:00", 1767229323) == \
        "2026-01-01 09:02:03 UTC+08:00 (Thursday), unix 1767229323"
    cfg.set("tz", "-05:30")
    out = reg.call("get_current_time", {})
    assert "UTC-05:30" in out and ("unix %d" % board.clock.unix())[:10] in out


def test_the_table_goes_while_a_tool_runs_on_a_short_heap():
    """On a short heap the built-in table's module (a .mpy's 4.9 KB) is let go once the
    tool's row is read and its module loaded: not held while the tool runs (a file read
    wants 1 KB blocks there), nor after; with room it stays."""
    import sys
    import mimi
    from mimi.tools import clock
    from mimi.tools.registry import registry as reg

    seen = []
    was = clock.get_current_time
    clock.get_current_time = lambda args, ctx: seen.append("mimi.tools" in sys.modules) or "t"
    try:
        for tight in (False, True):
            mimi.load("mimi.tools")
            mimi._short = tight
            try:
                assert reg.call("get_current_time", {}) == "t"
            finally:
                mimi._short = False
            assert ("mimi.tools" in sys.modules) != tight
    finally:
        clock.get_current_time = was
    assert seen == [True, False], seen


def test_strip_think_and_base():
    assert strip_think("<think>hmm</think>\nHello") == "Hello"
    assert strip_think("a<think>x</think>b<think>y</think>c") == "abc"
    assert strip_think("<think>never closed") == ""
    assert strip_think("reasoning</think>Answer") == "Answer"
    assert strip_think(None) == ""
    # a text in pieces: its ends trimmed, blank end pieces dropped, nothing joined
    assert strip_think(("  ", " a ", "b\n", "\n \t")) == ("a ", "b")
    assert strip_think((" \n", "one ", "\t")) == "one" and strip_think((" ", "\n")) == ""
    for base, want in (
            ("http://localhost:11434", ("http://localhost:11434", "/v1", "")),
            ("http://localhost:11434/v1", ("http://localhost:11434", "/v1", "")),
            ("http://localhost:1234/v1/", ("http://localhost:1234", "/v1", "")),
            ("http://localhost:8080", ("http://localhost:8080", "/v1", "")),
            ("https://openrouter.ai/api/v1/", ("https://openrouter.ai", "/api/v1", "")),
            ("https://api.deepseek.com", ("https://api.deepseek.com", "/v1", "")),
            ("https://generativelanguage.googleapis.com/v1beta/openai",
             ("https://generativelanguage.googleapis.com", "/v1beta/openai", "")),
            ("https://n.openai.azure.com/openai/deployments/d?api-version=2024-10-21",
             ("https://n.openai.azure.com", "/openai/deployments/d", "?api-version=2024-10-21"))):
        assert split_base(base) == want, (base, split_base(base))


def test_anthropic_request_shape_and_cache():
    t = FakeTransport(anthropic_ok("Hello", usage={"input_tokens": 3, "output_tokens": 2,
                                                   "cache_read_input_tokens": 100,
                                                   "cache_creation_input_tokens": 0}),
                      anthropic_ok())
    p = Anthropic("k1", client=t)
    reg = make_registry()
    system = "Fixed rules\n## Current Turn Context\nchannel: x"
    r = p.chat(system, [{"role": "user", "content": "hi"}], reg)
    assert r.text == "Hello" and r.tool_calls == [] and r.stop == "end_turn"
    assert r.usage == {"input": 103, "output": 2, "cache_read": 100, "cache_write": 0}
    method, path, headers, body = t.sent[0]
    assert (method, path) == ("POST", "/v1/messages")
    assert headers["x-api-key"] == "k1" and headers["anthropic-version"] == "2023-06-01"
    assert body["model"] == DEFAULT_MODEL["anthropic"] and body["max_tokens"] == 4096
    assert body["system"] == [
        {"type": "text", "text": "Fixed rules", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "\n## Current Turn Context\nchannel: x"}]
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["tools"][0] == {"name": "echo", "description": "Echo",
                                "input_schema": reg.schema("echo")}
    # The worker's [fixed, memory + turn context]: both stable blocks marked, the
    # per-turn context split off unmarked.
    p.chat(["fixed", "memory\n## Current Turn Context\nnow"], [{"role": "user", "content": "x"}])
    assert t.sent[1][3]["system"] == [
        {"type": "text", "text": "fixed", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "memory", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "\n## Current Turn Context\nnow"}]
    assert "tools" not in t.sent[1][3]


def test_usage_as_each_api_reports_it():
    """Every prompt token counts as input, cached ones included; cache reads and writes
    as the API names them (Anthropic, OpenAI, DeepSeek, OpenRouter)."""
    r = Anthropic("k", client=FakeTransport(anthropic_ok("x", usage={
        "input_tokens": 7, "output_tokens": 3, "cache_read_input_tokens": 40,
        "cache_creation_input_tokens": 900}))).chat("S", [{"role": "user", "content": "q"}])
    assert r.usage == {"input": 947, "output": 3, "cache_read": 40, "cache_write": 900}

    def oai(usage):
        body = {"choices": [{"message": {"role": "assistant", "content": "x"},
                             "finish_reason": "stop"}], "usage": usage}
        p = OpenAI("k", api_base="http://127.0.0.1:1/v1", client=FakeTransport(Resp(200, body)))
        return p.chat("S", [{"role": "user", "content": "q"}]).usage

    assert oai({"prompt_tokens": 50, "completion_tokens": 2}) == {
        "input": 50, "output": 2, "cache_read": 0, "cache_write": 0}
    assert oai({"prompt_tokens": 50, "completion_tokens": 2, "prompt_cache_hit_tokens": 32,
                "prompt_cache_miss_tokens": 18})["cache_read"] == 32  # DeepSeek
    assert oai({"prompt_tokens": 50, "completion_tokens": 2, "prompt_tokens_details": {
        "cached_tokens": 0, "cache_write_tokens": 45}})["cache_write"] == 45  # OpenRouter


def test_openai_conversion():
    hist = [
        {"role": "user", "content": "time?"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "checking"},
            {"type": "tool_use", "id": "c1", "name": "echo", "input": {"text": "x"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": "echo:x"}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "c2", "name": "boom", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "c2", "content": "Error: x"},
            {"type": "text", "text": "and then?"}]},
    ]
    out = [{"role": "system", "content": "SYS"}]
    for m in hist:
        out += json.loads("[%s]" % b",".join(bytes(v) for v in OpenAI("k").message(m)).decode())
    assert out[0] == {"role": "system", "content": "SYS"}
    assert out[1] == {"role": "user", "content": "time?"}
    assert out[2]["content"] == "checking"
    assert out[2]["tool_calls"] == [{"id": "c1", "type": "function", "function": {
        "name": "echo", "arguments": '{"text":"x"}'}}]
    assert out[3] == {"role": "tool", "tool_call_id": "c1", "content": "echo:x"}
    assert out[4]["content"] is None and out[4]["tool_calls"][0]["id"] == "c2"
    assert out[5] == {"role": "tool", "tool_call_id": "c2", "content": "Error: x"}
    assert out[6] == {"role": "user", "content": "and then?"}

    reply = {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "echo", "arguments": "{\"text\":\"q\"}"}},
        {"type": "function", "function": {"name": "echo", "arguments": "{bad"}}]},
        "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4,
                  "prompt_tokens_details": {"cached_tokens": 6}}}
    local = FakeTransport(Resp(200, reply))
    p = OpenAI("", api_base="http://127.0.0.1:1234/v1", client=local)
    r = p.chat("SYS", hist[:1], make_registry())
    assert r.text == "" and r.tool_calls[0].args == {"text": "q"}
    assert r.tool_calls[1].id == "call_1" and r.tool_calls[1].args == "{bad"
    assert r.usage == {"input": 9, "output": 4, "cache_read": 6, "cache_write": 0}
    _, path, headers, body = local.sent[0]
    assert path == "/v1/chat/completions" and "authorization" not in headers
    assert body["max_tokens"] == 4096 and "max_completion_tokens" not in body
    assert body["tool_choice"] == "auto" and body["tools"][0]["type"] == "function"
    official = FakeTransport(Resp(200, reply))
    OpenAI("sk", client=official).chat("S", hist[:1], [])
    _, _, headers, body = official.sent[0]
    assert headers["authorization"] == "Bearer sk"
    assert body["max_completion_tokens"] == 4096 and "max_tokens" not in body
    assert "tools" not in body and "tool_choice" not in body
    assert body["model"] == DEFAULT_MODEL["openai"]


def test_tools_without_arguments_go_without_parameters_in_openai_shape():
    # OpenAI: "omitting parameters defines a function with an empty parameter list"; the
    # firmware's no-argument tools save those bytes in every request. Anthropic's
    # input_schema is required: kept. A tool whose arguments are in its words keeps it.
    from mimi.tools.registry import registry

    none = [str(n, "utf-8") for n, _, _, s in registry.rows() if s == '{"type":"object","properties":{}}']
    assert "get_current_time" in none and "cron_list" in none and "i2c_scan" not in none
    o, a = FakeTransport(Resp(200, {"choices": [{"message": {"content": "x"}}]})), \
        FakeTransport(anthropic_ok("x"))
    OpenAI("k", client=o).chat("S", [{"role": "user", "content": "q"}], registry)
    Anthropic("k", client=a).chat("S", [{"role": "user", "content": "q"}], registry)
    fns = {t["function"]["name"]: t["function"] for t in o.sent[0][3]["tools"]}
    assert fns and all(("parameters" in f) == (n not in none) for n, f in fns.items())
    assert fns["read_file"]["parameters"]["required"] == ["path"]
    assert all(t["input_schema"]["type"] == "object" for t in a.sent[0][3]["tools"])
    assert sorted(t["name"] for t in a.sent[0][3]["tools"]) == sorted(fns)


def test_retries_backoff_and_errors():
    waits = []
    t = FakeTransport(
        Resp(429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}},
             {"retry-after": "7"}),
        Resp(500, b"oops"), OSError(110), Resp(529, b"{}"), anthropic_ok("done"))
    p = Anthropic("k", client=t, sleep=waits.append)
    assert limits.LLM_RETRIES >= 3
    if limits.LLM_RETRIES == 3:
        e = raises(LLMError, p.chat, "s", [{"role": "user", "content": "x"}])
        assert "529" in str(e)
        assert waits == [7, 2, 4]
    waits[:] = []
    t = FakeTransport(Resp(401, {"type": "error", "error": {"type": "authentication_error",
                                                          "message": "invalid x-api-key"}}))
    e = raises(LLMError, Anthropic("k", client=t, sleep=waits.append).chat, "s",
               [{"role": "user", "content": "x"}])
    assert str(e) == "LLM error 401: invalid x-api-key" and e.status == 401 and waits == []
    t = FakeTransport(Resp(200, b"{\"id\": tru"))
    e = raises(LLMError, Anthropic("k", client=t, sleep=waits.append).chat, "s",
               [{"role": "user", "content": "x"}])
    assert "malformed" in str(e)
    t = FakeTransport(Resp(200, {"choices": []}))
    e = raises(LLMError, OpenAI("k", client=t).chat, "s", [{"role": "user", "content": "x"}])
    assert "unexpected shape" in str(e)
    t = FakeTransport(Resp(503, {"error": "model is loading"}), Resp(200, {"choices": [
        {"message": {"content": "<think>x</think>fine"}, "finish_reason": "stop"}]}))
    r = OpenAI("k", client=t, sleep=waits.append).chat("s", [{"role": "user", "content": "x"}])
    assert r.text == "fine" and waits == [limits.LLM_BACKOFF_BASE_S]


def test_retry_waits_capped_and_what_is_not_retried():
    from mimi.net import http

    msgs = [{"role": "user", "content": "x"}]
    waits = []
    t = FakeTransport(Resp(429, b"{}", {"retry-after": "3600"}),
                      Resp(503, b"{}", {"retry-after-ms": "1500", "retry-after": "9"}),
                      Resp(429, b"{}", {"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"}),
                      anthropic_ok("ok"))
    assert Anthropic("k", client=t, sleep=waits.append).chat("s", msgs).text == "ok"
    # Retry-After obeyed but capped; -ms preferred; an HTTP date falls back to backoff
    assert waits == [limits.LLM_BACKOFF_MAX_S, 1.5, 4 * limits.LLM_BACKOFF_BASE_S], waits
    # Negative, absurd and NaN values: clamped to [0, max] or our own backoff, never a failed turn
    waits[:] = []
    t = FakeTransport(Resp(429, b"{}", {"retry-after": "-5"}),
                      Resp(503, b"{}", {"retry-after-ms": "-1e9"}),
                      Resp(429, b"{}", {"retry-after": "nan"}),
                      anthropic_ok("ok"))
    assert Anthropic("k", client=t, sleep=waits.append).chat("s", msgs).text == "ok"
    assert waits == [0, 0, 4 * limits.LLM_BACKOFF_BASE_S], waits
    waits[:] = []
    t = FakeTransport(http.Timeout("no answer"), http.ConnectFailure("refused"),
                      anthropic_ok("ok"))
    assert Anthropic("k", client=t, sleep=waits.append).chat("s", msgs).text == "ok"
    assert len(waits) == 2
    for err in (http.TLSFailure("bad certificate"), http.TooLarge("too big")):
        waits[:] = []
        t = FakeTransport(err, anthropic_ok("never"))
        e = raises(LLMError, Anthropic("k", client=t, sleep=waits.append).chat, "s", msgs)
        assert str(err) in str(e) and waits == [] and len(t.sent) == 1
    # A 4xx body that is not JSON (and cut inside a UTF-8 character) is still quoted.
    t = FakeTransport(Resp(400, ("é" * limits.LLM_ERROR_BODY_MAX).encode()))
    e = raises(LLMError, Anthropic("k", client=t, sleep=waits.append).chat, "s", msgs)
    assert str(e).startswith("LLM error 400: éé") and e.status == 400 and waits == []


class Cfg:
    def __init__(self, **kw):
        self.kw = kw

    def get(self, k):
        return self.kw.get(k, {"provider": "anthropic", "max_tokens": 4096}.get(k, ""))


def test_from_config():
    t = FakeTransport()
    p = from_config(Cfg(api_key="k"), client=t)
    assert isinstance(p, Anthropic) and p.model == DEFAULT_MODEL["anthropic"]
    assert p.api_base == "https://api.anthropic.com"
    p = from_config(Cfg(provider="openai", api_base="http://lan:11434", model="llama3"), client=t)
    assert isinstance(p, OpenAI) and p.model == "llama3" and p.token_param() == "max_tokens"
    e = raises(ValueError, from_config, Cfg(provider="gemini", api_key="k"), client=t)
    assert "gemini" in str(e)
    raises(ValueError, from_config, Cfg(), client=t)  # anthropic needs a key
    e = raises(ValueError, from_config, Cfg(provider="openai"), client=t)  # so does OpenAI's
    assert "set_api_key" in str(e)
    # The real client: proxy settings reach it; same settings, same provider (and its
    # open keep-alive connection) next turn; changed settings, a new one.
    cfg = Cfg(api_key="k", proxy_host="127.0.0.1", proxy_port=3128, proxy_type="socks5")
    p = from_config(cfg)
    assert p.client.proxy == ("socks5", "127.0.0.1", 3128) and p.client.tls
    assert from_config(cfg) is p
    cfg.kw["model"] = "claude-other"
    q = from_config(cfg)
    assert q is not p and q.model == "claude-other"
    q.close()


class ScriptedProvider:
    def __init__(self, *replies):
        self.replies = list(replies)
        self.seen = []

    def chat(self, system, messages, tools=None):
        self.seen.append(json.loads(json.dumps(messages)))
        r = self.replies.pop(0)
        if isinstance(r, Exception):
            raise r
        return r


def U(i, o, c=0):
    return {"input": i, "output": o, "cache_read": c}


def test_react_tools_limits_and_usage():
    reg = make_registry()
    calls = [Call("a%d" % i, "echo", {"text": str(i)}) for i in range(6)]
    p = ScriptedProvider(Reply("", calls, U(10, 1, 4)),
                         Reply("", [Call("b", "nope", {}), Call("b", "echo", "{x")], U(20, 2)),
                         Reply("All done", [], U(30, 3, 8)))
    hist = [{"role": "user", "content": "old"}, {"role": "assistant", "content": "older"}]
    t = run_turn(p, "sys", hist, "go", reg, Ctx("websocket", "1"))
    assert t.text == "All done" and t.error is None
    assert t.llm_calls == 3 and t.tool_calls == 6
    assert t.usage == dict(U(60, 6, 12), cache_write=0)
    assert len(hist) == 2  # the caller's history is not touched
    results = p.seen[1][-1]["content"]
    assert [r["tool_use_id"] for r in results] == ["a%d" % i for i in range(6)]
    assert results[0]["content"] == "echo:0"
    assert results[4]["content"].startswith("Error: too many tool calls")
    assert results[5]["content"].startswith("Error: too many tool calls")
    second = p.seen[2][-1]["content"]
    assert second[0]["content"] == "Error: unknown tool 'nope'"
    assert second[1]["tool_use_id"] != second[0]["tool_use_id"]  # duplicate id renamed
    assert second[1]["content"].startswith("Error: ")
    assert p.seen[2][-2]["content"][1]["input"] == {}


def test_react_iteration_cap_and_failures():
    reg = make_registry()
    loop = [Reply("", [Call("x%d" % i, "echo", {"text": "."})], U(1, 1))
            for i in range(limits.MAX_TOOL_ITER)]
    t = run_turn(ScriptedProvider(*loop), "s", [], "go", reg)
    assert t.error == "iteration limit" and t.llm_calls == limits.MAX_TOOL_ITER
    assert "ran out of steps" in t.text
    t = run_turn(ScriptedProvider(LLMError("LLM error 401: invalid x-api-key", 401)), "s", [],
                 "go", reg)
    assert t.error and "invalid x-api-key" in t.text
    t = run_turn(ScriptedProvider(Reply("  ", [], U(1, 1))), "s", [], "go", reg)
    assert t.error and t.text


def test_react_repairs_history():
    from mimi.agent.react import _history

    h = [{"role": "assistant", "content": "orphan"}, {"role": "user", "content": "a"},
         {"role": "user", "content": "b"}, {"role": "assistant", "content": ""},
         {"role": "assistant", "content": "c"}, {"role": "user", "content": "d"}]
    assert _history(h, "e") == [{"role": "user", "content": "a\n\nb"},
                                {"role": "assistant", "content": "c"},
                                {"role": "user", "content": "d\n\ne"}]
    assert _history([], "") == [{"role": "user", "content": "(empty message)"}]


def test_request_written_from_parts_once_per_turn():
    # The prompt, the tool table and each message are encoded once; what goes out is
    # their parts, in order, never joined.
    from mimi.agent import react

    t = FakeTransport(anthropic_ok("", [("echo", {"text": "a"})]), anthropic_ok("done"))
    p = Anthropic("k", client=t)
    system = (['"Fixed é \\n rules"'], ['"Memory"'], ['"\\n## Current Turn Context"'])
    encoded = []
    enc = p.message
    p.message = lambda m: encoded.append(m) or enc(m)
    turn = react.run_turn(p, system, [p.message({"role": "user", "content": "old"}),
                                      p.message({"role": "assistant", "content": "older"})],
                          "go", make_registry())
    assert turn.text == "done" and turn.tool_calls == 1
    assert len(encoded) == 5  # 2 stored + the new text + the tool call + its result
    body = t.sent[1][3]
    assert [b["text"] for b in body["system"]] == ["Fixed é \n rules", "Memory",
                                                   "\n## Current Turn Context"]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user", "assistant", "user"]
    assert body["messages"][4]["content"][0]["content"] == "echo:a"
    assert [x["name"] for x in body["tools"]] == ["echo", "boom", "big", "where"]
    assert p._sys is None and p._tools is None  # nothing of the turn kept after it


def test_long_text_escaped_in_pieces():
    # A tool output as big as a file read is escaped a piece at a time (a short heap has
    # no second block that big for its escaped copy); the request is the same JSON.
    from mimi.llm import openai
    from mimi.llm.provider import dumps, parts
    from mimi.net import httpbody

    text = "".join('line "%d"\n' % i for i in range(500))  # ~5 KB, escapes in it
    wide = "\u00e9\u4e2d" * 1500  # 3,000 characters, 7,500 bytes
    m = {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "c1", "content": text},
        {"type": "tool_result", "tool_use_id": "c2", "content": wide},
        {"type": "tool_result", "tool_use_id": "c3", "content": "short"}]}
    for p, want in ((Anthropic("k"), [m]), (OpenAI("k"), openai._convert(m))):
        enc = p.message(m)
        assert json.loads(joined((b"[", [enc], b"]"))) == want
        sizes = [len(x) for x in httpbody.flat((enc,))]
        assert max(sizes) < 2 * limits.PROMPT_CHUNK < len(text), sizes
    small = {"role": "assistant", "content": "hi"}
    assert bytes(parts(small)) == dumps(small).encode()  # one view, as before


def test_openai_tool_arguments_made_in_pieces():
    # OpenAI sends a call's arguments as JSON in a string: a long argument (a file's content
    # for write_file) is made a piece at a time, never as one block its size, which a heap
    # broken up by the turn did not have; the request is the same JSON.
    from mimi.llm import openai
    from mimi.llm.provider import text_of

    content = "".join('line "%d"\t\u00e9\n' % i for i in range(800))  # ~12 KB, escapes in it
    args = {"path": "/spiffs/notes.md", "content": content, "n": [1, {"deep": content[:2000]}]}
    m = {"role": "assistant", "content": [
        {"type": "tool_use", "id": "c1", "name": "write_file", "input": args}]}
    t = text_of(args)
    assert isinstance(t, tuple) and json.loads("".join(t)) == args
    assert max(len(x) for x in t) < 2 * limits.ESCAPE_STEP
    assert text_of({"text": "x"}) == '{"text":"x"}'  # short: one str, as before
    p = OpenAI("k")
    want = json.loads(joined(p.message(m)[0]))
    assert json.loads(want["tool_calls"][0]["function"]["arguments"]) == args
    ballast = support.leave_pieces(1536)  # no free block over 1.5 KB
    try:
        enc = p.message(m)
    finally:
        del ballast
    assert json.loads(joined(enc[0])) == want
    assert openai._convert(m)[0]["tool_calls"][0]["function"]["arguments"] == t


def test_tool_arguments_and_results_capped_in_the_turn():
    # issue 16: a huge argument is neither run nor kept (it would ride on every call);
    # the turn's tool output has a budget; each answer is an error the model can act on.
    reg = make_registry()
    ran = []
    reg.add("store", "Store", {"type": "object", "properties": {"text": {"type": "string"}},
                               "required": ["text"]}, lambda a, ctx: ran.append(a) or "stored")
    big = "x" * (limits.TOOL_ARGS_MAX + 1)
    many = [Reply("", [Call("b%d" % i, "big", {})], U(1, 1)) for i in range(4)]
    p = ScriptedProvider(Reply("", [Call("s1", "store", {"text": big})], U(1, 1)), *many,
                         Reply("ok", [], U(1, 1)))
    t = run_turn(p, "s", [], "go", reg)
    assert t.text == "ok" and ran == []
    first = p.seen[1]
    assert first[-2]["content"][0]["input"] == {}  # not kept
    assert first[-1]["content"][0]["content"].startswith("Error: the arguments of this call were")
    outs = [p.seen[k][-1]["content"][0]["content"] for k in range(2, 6)]
    assert sum(len(o) for o in outs[:3]) <= limits.TURN_TOOL_BYTES
    assert outs[3].startswith("Error: this turn's tool output is used up"), outs[3][:80]


def test_surrogate_pair_escapes_joined():
    # Servers escape emoji as "\\ud83d\\ude00"; MicroPython's json alone leaves lone
    # surrogates that are invalid UTF-8 in every later request.
    from mimi import jsonutil

    obj = jsonutil.loads(b'{"t": "hi \\ud83d\\ude00 \\u4e2d", "l": ["\\ud83d"]}')
    assert obj["t"] == "hi \U0001F600 \u4e2d"
    assert obj["t"].encode().decode() == obj["t"]
    assert obj["l"] == ["\ufffd"]
