"""The fake LLM servers themselves: real response shapes, request validation,
scripted failures and the HTTP control endpoints."""
import http.client
import json
import socket
import ssl

from fakes.llm import FakeAnthropic, FakeOpenAI

A_HEADERS = {"x-api-key": "test-key", "anthropic-version": "2023-06-01",
             "content-type": "application/json"}
O_HEADERS = {"authorization": "Bearer test-key", "content-type": "application/json"}
TOOL = {"name": "get_current_time", "description": "time",
        "input_schema": {"type": "object", "properties": {}, "required": []}}
OTOOL = {"type": "function", "function": {"name": "get_current_time", "description": "time",
                                          "parameters": TOOL["input_schema"]}}


def call(fake, body, headers):
    out = fake.handle("POST", fake.path, headers, json.dumps(body).encode())
    return out["status"], json.loads(out["body"])


def a_body(messages, **kw):
    body = {"model": "m", "max_tokens": 64, "messages": messages, "tools": [TOOL]}
    body.update(kw)
    return body


def test_anthropic_reply_shapes_and_cache_usage():
    f = FakeAnthropic()
    f.script({"text": "thinking", "tool_calls": [{"name": "get_current_time", "input": {}}]},
             {"text": "It is noon."})
    tools = [dict(TOOL, cache_control={"type": "ephemeral"})]
    system = [{"type": "text", "text": "rules " * 50, "cache_control": {"type": "ephemeral"}},
              {"type": "text", "text": "turn"}]
    st, r = call(f, a_body([{"role": "user", "content": "time?"}], tools=tools, system=system),
                 A_HEADERS)
    assert st == 200 and r["type"] == "message" and r["role"] == "assistant"
    assert r["stop_reason"] == "tool_use"
    assert [b["type"] for b in r["content"]] == ["text", "tool_use"]
    use = r["content"][1]
    assert r["usage"]["cache_creation_input_tokens"] > 0
    msgs = [{"role": "user", "content": "time?"},
            {"role": "assistant", "content": r["content"]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use["id"],
                                          "content": "12:00"}]}]
    st, r = call(f, a_body(msgs, tools=tools, system=system), A_HEADERS)
    assert st == 200 and r["content"] == [{"type": "text", "text": "It is noon."}]
    assert r["stop_reason"] == "end_turn" and r["usage"]["cache_read_input_tokens"] > 0
    assert f.snapshot()["violations"] == []
    st, r = call(f, a_body([{"role": "user", "content": "again"}]), A_HEADERS)
    assert r["content"][0]["text"] == "Echo: again"  # empty queue


def test_anthropic_validator_catches_broken_requests():
    f = FakeAnthropic()
    use = {"type": "tool_use", "id": "toolu_1", "name": "get_current_time", "input": {}}
    bad_id = [{"role": "user", "content": "q"}, {"role": "assistant", "content": [use]},
              {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_X",
                                            "content": "x"}]}]
    st, r = call(f, a_body(bad_id), A_HEADERS)
    assert st == 400 and r["type"] == "error"
    assert r["error"]["type"] == "invalid_request_error"
    assert "toolu_X" in r["error"]["message"]
    cases = [
        (a_body([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]), A_HEADERS),
        (a_body([{"role": "assistant", "content": "a"}]), A_HEADERS),
        (a_body([{"role": "user", "content": "a"}], max_tokens=None), A_HEADERS),
        (a_body([{"role": "user", "content": "a"}]), dict(A_HEADERS, **{"anthropic-version": "x"})),
        (a_body([{"role": "user", "content": "a"}], max_completion_tokens=5), A_HEADERS),
        (a_body([{"role": "user", "content": "a"}], tools=[{"name": "x", "parameters": {}}]),
         A_HEADERS),
        (a_body(bad_id[:2] + [{"role": "user", "content": "no result"}]), A_HEADERS),
        (a_body([{"role": "user", "content": [{"type": "text", "text": ""}]}]), A_HEADERS),
    ]
    for body, headers in cases:
        st, r = call(f, body, headers)
        assert st == 400, body
    no_key = {k: v for k, v in A_HEADERS.items() if k != "x-api-key"}
    assert call(f, a_body([{"role": "user", "content": "a"}]), no_key)[0] == 400
    assert len(f.snapshot()["violations"]) >= len(cases) + 2
    f.reset()
    st, r = call(f, a_body([{"role": "user", "content": "a"}]), dict(A_HEADERS, **{"x-api-key": "no"}))
    assert st == 401 and r["error"] == {"type": "authentication_error",
                                        "message": "invalid x-api-key"}
    assert f.snapshot()["violations"] == []


def test_openai_shapes_and_validation():
    f = FakeOpenAI()
    f.script({"text": None, "tool_calls": [{"name": "get_current_time", "input": {}}]},
             {"text": "<think>x</think>Noon"})
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "time?"}]
    body = {"model": "m", "messages": msgs, "tools": [OTOOL], "tool_choice": "auto",
            "max_tokens": 64}
    st, r = call(f, body, O_HEADERS)
    assert st == 200 and r["object"] == "chat.completion"
    ch = r["choices"][0]
    assert ch["finish_reason"] == "tool_calls" and ch["message"]["content"] is None
    tc = ch["message"]["tool_calls"][0]
    assert tc["type"] == "function" and json.loads(tc["function"]["arguments"]) == {}
    msgs += [ch["message"], {"role": "tool", "tool_call_id": tc["id"], "content": "12:00"}]
    st, r = call(f, dict(body, messages=msgs), O_HEADERS)
    assert st == 200 and r["choices"][0]["message"]["content"] == "<think>x</think>Noon"
    assert r["usage"]["prompt_tokens"] > 0 and f.snapshot()["violations"] == []

    bad = msgs[:3] + [{"role": "tool", "tool_call_id": "call_other", "content": "x"}]
    st, r = call(f, dict(body, messages=bad), O_HEADERS)
    assert st == 400 and r["error"]["type"] == "invalid_request_error"
    assert "call_other" in r["error"]["message"]
    for broken in (dict(body, max_completion_tokens=5),  # both limits
                   dict(body, tools=[TOOL]),  # Anthropic tool format
                   dict(body, tools=None, tool_choice="auto"),
                   dict(body, messages=msgs[:3] + [{"role": "user", "content": "x"}])):
        broken = {k: v for k, v in broken.items() if v is not None}
        assert call(f, broken, O_HEADERS)[0] == 400, broken
    f.configure(token_param="max_completion_tokens")
    st, r = call(f, dict(body, messages=msgs[:2]), O_HEADERS)
    assert st == 400 and "max_completion_tokens" in r["error"]["message"]
    f.configure(token_param="max_tokens")
    body2 = {k: v for k, v in body.items() if k != "max_tokens"}
    st, r = call(f, dict(body2, messages=msgs[:2], max_completion_tokens=5), O_HEADERS)
    assert st == 400
    st, r = call(f, dict(body, messages=msgs[:2]), {"content-type": "application/json",
                                                    "authorization": "Bearer nope"})
    assert st == 401 and r["error"]["code"] == "invalid_api_key"


def _raw(url, method, path, body=b"", headers=(), ca=None):
    host, port = url.split("://")[1].split(":")
    s = socket.create_connection((host, int(port)))
    if url.startswith("https"):
        s = ssl.create_default_context(cafile=ca).wrap_socket(s, server_hostname=host)
    head = "%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n" % (method, path, len(body))
    head += "".join("%s: %s\r\n" % kv for kv in headers)
    s.sendall(head.encode() + b"\r\n" + body)
    return s


def test_http_listener_control_and_failure_modes(fake_anthropic):
    svc = fake_anthropic
    ctl = http.client.HTTPConnection(svc["control"].split("://")[1])
    ctl.request("POST", "/_script", json.dumps([
        {"status": 429, "retry_after": 3}, {"chunked": True, "text": "chunky"},
        {"truncate": True, "text": "cut"}, {"raw": "{not json"}]))
    assert json.loads(ctl.getresponse().read())["queued"] == 4
    ctx = ssl.create_default_context(cafile=svc["ca"])
    conn = http.client.HTTPSConnection(svc["base_url"].split("://")[1], context=ctx)
    body = json.dumps(a_body([{"role": "user", "content": "hi"}]))
    conn.request("POST", "/v1/messages", body, A_HEADERS)
    r = conn.getresponse()
    assert r.status == 429 and r.getheader("Retry-After") == "3"
    assert json.loads(r.read())["error"]["type"] == "rate_limit_error"
    conn.request("POST", "/v1/messages", body, A_HEADERS)  # same connection
    r = conn.getresponse()
    assert r.getheader("Transfer-Encoding") == "chunked"
    assert json.loads(r.read())["content"][0]["text"] == "chunky"
    conn.request("POST", "/v1/messages", body, A_HEADERS)
    r = conn.getresponse()
    try:
        r.read()
        assert False, "truncated body read in full"
    except http.client.IncompleteRead:
        pass
    conn.close()
    s = _raw(svc["base_url"], "POST", "/v1/messages", body.encode(), A_HEADERS.items(), svc["ca"])
    data = b""
    while b"{not json" not in data:
        data += s.recv(4096)
    s.close()
    ctl.request("GET", "/_requests")
    snap = json.loads(ctl.getresponse().read())
    assert snap["handshakes"] == 2 and snap["violations"] == []
    assert [r["status"] for r in snap["requests"]] == [429, 200, 200, 200]
    assert snap["requests"][0]["headers"]["anthropic-version"] == "2023-06-01"
    assert snap["requests"][0]["body"]["messages"][0]["content"] == "hi"
    assert svc.requests == snap["requests"]
    ctl.request("POST", "/_reset", "{}")
    ctl.getresponse().read()
    assert svc.snapshot()["requests"] == [] and json.loads(json.dumps(svc))["kind"] == "anthropic"


def test_openai_fixture_over_plain_http(fake_openai):
    svc = fake_openai
    conn = http.client.HTTPConnection(svc["http_base_url"].split("://")[1])
    body = {"model": "m", "messages": [{"role": "user", "content": "ping"}], "max_tokens": 8}
    conn.request("POST", "/v1/chat/completions", json.dumps(body), O_HEADERS)
    r = json.loads(conn.getresponse().read())
    assert r["choices"][0]["message"]["content"] == "Echo: ping"
    assert svc.violations == [] and svc.snapshot()["handshakes"] == 0
