"""Fake LLM APIs for tests (CPython): Anthropic Messages and OpenAI Chat Completions.

Each fake is scripted with a queue of replies, records every request and checks each
request body against the real API's shape. A bad request gets a 400 in that API's
own error format and is recorded as a violation the test can assert on.

Script items (JSON dicts, so MicroPython tests can send them over HTTP):
  {"text": "hi"}                                   plain answer ("" or None: no text)
  {"text": "..", "tool_calls": [{"name": "x", "input": {..}, "id": optional,
                                 "arguments": "raw JSON string (OpenAI)"}]}
  {"status": 429, "retry_after": 2, "message": ".."}  API error (any status)
  {"raw": "not json", "status": 200}               body sent as is
  {"truncate": true, ...}   announce the full Content-Length, send half, close
  {"chunked": true, ...}    Transfer-Encoding: chunked
  {"delay_s": 3, ...}       wait before answering (past a client deadline)
  {"stop": "max_tokens"}    stop_reason / finish_reason override
  {"usage": {...}}          usage override
A request with "stream": true is answered with server-sent events in the API's own
format (Anthropic: message_start, content_block_start/delta/stop with text_delta and
input_json_delta, ping, message_delta with usage, message_stop; OpenAI: chunks with
choices[].delta content and tool_calls by index, finish_reason, the usage chunk when
stream_options.include_usage, data: [DONE]). The text goes out a word (a "token") an
event, tool arguments in a few pieces, at `pace` tokens/s (0: at once); a plain
(not streamed) answer then comes after the time those tokens would take. For those:
  {"pace": 50, ...}         this reply's pace (else the fake's, see /_config)
  {"stream_error": {"type": "overloaded_error", "message": ".."}, "error_after": 3}
                            an error event after that many tokens, then the end
  {"plain": true, ...}      answer a streaming request with plain JSON (a server that
                            does not stream)
With an empty queue the fake answers "Echo: <last user text>".

Control endpoints on every listener of the fake (HTTP and HTTPS):
  POST /_script   body: a script item or a list of them -> appended to the queue
  POST /_reset    clears queue, requests, violations and counters
  POST /_config   {"api_key": .., "token_param": "max_tokens"|"max_completion_tokens"|None,
                   "pace": tokens/s of streamed answers (0: at once)}
  GET  /_requests {"requests": [...], "violations": [...], "handshakes": n,
                   "connections": n (both of the HTTPS listener), "queued": n}; ?bodies=0 leaves request bodies
                   out, ?last=N keeps only the last N requests. A request record is
                   {method, path, headers (lower-case), body (parsed JSON), size,
                   status, violations}.
"""
import json
import re
import threading
import time

from fakes import httpserver

API_KEY = "test-key"
ANTHROPIC_VERSION = "2023-06-01"
_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class FakeLLM:
    kind = ""
    path = ""

    def __init__(self, api_key=API_KEY):
        self.lock = threading.Lock()
        self.api_key = api_key
        self.token_param = None  # None: either is accepted (but not both)
        self.pace = 0  # tokens/s of a streamed answer (0: at once)
        self.reset()

    # --- control -----------------------------------------------------------
    def reset(self):
        with self.lock:
            self.queue = []
            self.requests = []
            self.violations = []
            self._zero = self.counters()
            self._seq = 0
            self._cached = set()

    def script(self, *items):
        with self.lock:
            for item in items:
                if isinstance(item, list):
                    self.queue.extend(item)
                else:
                    self.queue.append(item)

    def configure(self, **kw):
        with self.lock:
            if "api_key" in kw:
                self.api_key = kw["api_key"]
            if "token_param" in kw:
                self.token_param = kw["token_param"]
            if "pace" in kw:
                self.pace = kw["pace"] or 0

    def snapshot(self, bodies=True, last=None):
        with self.lock:
            reqs = self.requests[-last:] if last else self.requests
            if not bodies:
                reqs = [{k: v for k, v in r.items() if k != "body"} for r in reqs]
            now = self.counters()
            return {
                "requests": json.loads(json.dumps(reqs)),
                "violations": list(self.violations),
                "handshakes": now[0] - self._zero[0],
                "connections": now[1] - self._zero[1],
                "queued": len(self.queue),
            }

    def counters(self):
        """(TLS handshakes, API connections) so far; set by the Service that serves us."""
        return (0, 0)

    # --- HTTP entry point ----------------------------------------------------
    def handle(self, method, path, headers, body):
        """-> dict(status, headers, body, [delay_s, truncate, chunked])."""
        path, _, query = path.partition("?")
        if path.startswith("/_"):
            return self._control(method, path, body, query)
        rec = {"method": method, "path": path, "headers": dict(headers), "size": len(body)}
        try:
            parsed = json.loads(body.decode("utf-8")) if body else None
        except (UnicodeDecodeError, ValueError):
            parsed = None
        rec["body"] = parsed if parsed is not None else body.decode("utf-8", "replace")
        problems = []
        if method != "POST" or path != self.path:
            out = self.not_found(method, path)
            problems.append("unknown endpoint %s %s" % (method, path))
        else:
            auth = self.check_auth(headers)
            if auth == "missing":
                problems.append("no API key header")
            if parsed is None:
                problems.append("body is not JSON")
            elif not isinstance(parsed, dict):
                problems.append("body is not a JSON object")
            else:
                problems.extend(self.validate(parsed, headers))
            if problems:
                out = self.error(400, "; ".join(problems), "invalid_request_error")
            elif auth:
                out = self.error(401, self.auth_message(), "authentication_error")
            else:
                out = self._reply(parsed)
        rec["status"] = out["status"]
        rec["violations"] = problems
        with self.lock:
            self.requests.append(rec)
            self.violations.extend(problems)
        return out

    def _control(self, method, path, body, query=""):
        try:
            data = json.loads(body.decode()) if body else None
        except ValueError:
            return _json(400, {"error": "control body is not JSON"})
        if path == "/_script" and method == "POST":
            self.script(*(data if isinstance(data, list) else [data]))
            return _json(200, {"queued": len(self.queue)})
        if path == "/_reset" and method == "POST":
            self.reset()
            return _json(200, {"ok": True})
        if path == "/_config" and method == "POST":
            self.configure(**(data or {}))
            return _json(200, {"ok": True})
        if path == "/_requests" and method == "GET":
            q = dict(kv.partition("=")[::2] for kv in query.split("&") if kv)
            return _json(200, self.snapshot(q.get("bodies") != "0",
                                            int(q["last"]) if q.get("last") else None))
        return _json(404, {"error": "unknown control endpoint"})

    def _reply(self, req):
        with self.lock:
            item = self.queue.pop(0) if self.queue else None
            self._seq += 1
            seq = self._seq
        if item is None:
            item = {"text": "Echo: " + self.last_user_text(req)}
        if "raw" in item:
            raw = item["raw"]
            out = {"status": item.get("status", 200),
                   "headers": [("Content-Type", item.get("content_type", "application/json"))],
                   "body": raw.encode() if isinstance(raw, str) else raw}
        elif item.get("status", 200) != 200:
            out = self.error(item["status"], item.get("message"), item.get("type"))
            if item.get("retry_after") is not None:
                out["headers"].append(("Retry-After", str(item["retry_after"])))
        elif req.get("stream") and not item.get("plain"):
            msg = self.success(req, item, seq)
            pace = item.get("pace", self.pace)
            events = self.events(req, msg, item)
            out = {"status": 200, "headers": [("Content-Type", self.SSE_TYPE)], "body": b"",
                   "stream": [(1.0 / pace if pace and tok else 0, data) for tok, data in events]}
        else:
            out = _json(200, self.success(req, item, seq))
            pace = item.get("pace", self.pace)
            if pace and item.get("status", 200) == 200 and "raw" not in item:
                # a model that does not stream takes as long to write the answer
                n = len(_tokens(item.get("text"))) + 3 * len(item.get("tool_calls") or ())
                out["delay_s"] = n / pace
        for k in ("delay_s", "truncate", "chunked"):
            if item.get(k):
                out[k] = item[k]
        return out

    # --- shared checks ---------------------------------------------------------
    @staticmethod
    def check_schema(schema, where):
        if not isinstance(schema, dict):
            return ["%s must be an object" % where]
        if schema.get("type") != "object":
            return ["%s.type must be 'object'" % where]
        p = []
        props = schema.get("properties", {})
        if not isinstance(props, dict):
            p.append("%s.properties must be an object" % where)
        req = schema.get("required", [])
        if not isinstance(req, list) or any(r not in props for r in req if isinstance(props, dict)):
            p.append("%s.required must list properties" % where)
        return p

    @staticmethod
    def tokens(obj):
        return max(1, len(json.dumps(obj)) // 4)


class FakeAnthropic(FakeLLM):
    kind = "anthropic"
    path = "/v1/messages"
    TOP = {"model", "messages", "system", "max_tokens", "tools", "tool_choice", "temperature",
           "top_p", "top_k", "stop_sequences", "stream", "metadata", "thinking", "service_tier"}
    ERR = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
           404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
           500: "api_error", 529: "overloaded_error"}

    def check_auth(self, h):
        if "x-api-key" not in h:
            return "missing"
        return "bad" if h["x-api-key"] != self.api_key else None

    def auth_message(self):
        return "invalid x-api-key"

    def error(self, status, message=None, etype=None):
        etype = etype or self.ERR.get(status, "api_error")
        body = {"type": "error", "error": {"type": etype, "message": message or etype}}
        return _json(status, body, [("request-id", "req_fake")])

    def not_found(self, method, path):
        return self.error(404, "Not found: %s %s" % (method, path), "not_found_error")

    def last_user_text(self, req):
        for m in reversed(req.get("messages") or []):
            if m.get("role") == "user":
                c = m.get("content")
                if isinstance(c, str):
                    return c
                return " ".join(b.get("text", "") for b in c if b.get("type") == "text")
        return ""

    def validate(self, b, h):
        p = []
        if h.get("anthropic-version") != ANTHROPIC_VERSION:
            p.append("anthropic-version header must be %s (got %r)"
                     % (ANTHROPIC_VERSION, h.get("anthropic-version")))
        if "application/json" not in h.get("content-type", ""):
            p.append("content-type must be application/json")
        for k in b:
            if k not in self.TOP:
                p.append("%s: Extra inputs are not permitted" % k)
        if not isinstance(b.get("model"), str) or not b.get("model"):
            p.append("model: Field required")
        mt = b.get("max_tokens")
        if not isinstance(mt, int) or isinstance(mt, bool) or mt < 1:
            p.append("max_tokens: Field required (positive integer)")
        if "stream" in b and not isinstance(b["stream"], bool):
            p.append("stream: Input should be a valid boolean")
        cache_marks = 0
        system = b.get("system")
        if system is not None:
            if isinstance(system, list):
                for i, blk in enumerate(system):
                    if not isinstance(blk, dict) or blk.get("type") != "text" \
                            or not isinstance(blk.get("text"), str) or not blk.get("text"):
                        p.append("system.%d: must be a non-empty text block" % i)
                    elif "cache_control" in blk:
                        cache_marks += 1
                        p.extend(_check_cache(blk, "system.%d" % i))
            elif not isinstance(system, str):
                p.append("system: must be a string or a list of text blocks")
        tools = b.get("tools")
        names = set()
        if tools is not None:
            if not isinstance(tools, list):
                p.append("tools: must be a list")
                tools = []
            for i, t in enumerate(tools):
                if not isinstance(t, dict):
                    p.append("tools.%d: must be an object" % i)
                    continue
                extra = set(t) - {"name", "description", "input_schema", "cache_control", "type"}
                if extra:
                    p.append("tools.%d: unexpected keys %s" % (i, sorted(extra)))
                if not isinstance(t.get("name"), str) or not _NAME_RE.match(t["name"]):
                    p.append("tools.%d.name: must match ^[a-zA-Z0-9_-]{1,64}$" % i)
                elif t["name"] in names:
                    p.append("tools: tool names must be unique (%s)" % t["name"])
                else:
                    names.add(t["name"])
                if "description" in t and not isinstance(t["description"], str):
                    p.append("tools.%d.description: must be a string" % i)
                p.extend(self.check_schema(t.get("input_schema"), "tools.%d.input_schema" % i))
                if "cache_control" in t:
                    cache_marks += 1
                    p.extend(_check_cache(t, "tools.%d" % i))
        if cache_marks > 4:
            p.append("A maximum of 4 blocks with cache_control may be provided")
        if "tool_choice" in b and not tools:
            p.append("tool_choice: requires tools")
        p.extend(self._check_messages(b.get("messages"), tools))
        return p

    def _check_messages(self, msgs, tools):
        p = []
        if not isinstance(msgs, list) or not msgs:
            return ["messages: Field required (non-empty list)"]
        prev_role = None
        pending = []  # tool_use ids of the previous assistant message
        uses_tools = False
        for i, m in enumerate(msgs):
            where = "messages.%d" % i
            if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
                p.append("%s.role: must be 'user' or 'assistant'" % where)
                continue
            role = m["role"]
            if i == 0 and role != "user":
                p.append("messages: first message must use the 'user' role")
            if role == prev_role:
                p.append("%s: roles must alternate between 'user' and 'assistant'" % where)
            extra = set(m) - {"role", "content"}
            if extra:
                p.append("%s: unexpected keys %s" % (where, sorted(extra)))
            c = m.get("content")
            blocks = []
            if isinstance(c, str):
                if not c and not (role == "assistant" and i == len(msgs) - 1):
                    p.append("%s: text content must be non-empty" % where)
            elif isinstance(c, list) and c:
                blocks = c
            else:
                p.append("%s.content: must be a non-empty string or list of blocks" % where)
            results = []
            uses = []
            for j, blk in enumerate(blocks):
                bw = "%s.content.%d" % (where, j)
                t = blk.get("type") if isinstance(blk, dict) else None
                if t == "text":
                    if not isinstance(blk.get("text"), str) or not blk["text"]:
                        p.append("%s: text content blocks must be non-empty" % bw)
                elif t == "tool_use":
                    uses_tools = True
                    if role != "assistant":
                        p.append("%s: tool_use only in assistant messages" % bw)
                    if not isinstance(blk.get("id"), str) or not blk.get("id"):
                        p.append("%s.id: Field required" % bw)
                    if not isinstance(blk.get("name"), str) or not blk.get("name"):
                        p.append("%s.name: Field required" % bw)
                    if not isinstance(blk.get("input"), dict):
                        p.append("%s.input: must be an object" % bw)
                    uses.append(blk.get("id"))
                elif t == "tool_result":
                    uses_tools = True
                    if role != "user":
                        p.append("%s: tool_result only in user messages" % bw)
                    if results is not None and len(results) != j:
                        p.append("%s: tool_result blocks must come first in the message" % bw)
                    rc = blk.get("content")
                    if rc is not None and not isinstance(rc, (str, list)):
                        p.append("%s.content: must be a string or list" % bw)
                    extra = set(blk) - {"type", "tool_use_id", "content", "is_error",
                                        "cache_control"}
                    if extra:
                        p.append("%s: unexpected keys %s" % (bw, sorted(extra)))
                    results.append(blk.get("tool_use_id"))
                elif t == "image":
                    pass
                else:
                    p.append("%s.type: unknown block type %r" % (bw, t))
            if role == "user":
                for rid in results:
                    if rid not in pending:
                        p.append("%s: unexpected tool_use_id found in tool_result blocks: %s. "
                                 "Each tool_result block must have a corresponding tool_use "
                                 "block in the previous message." % (where, rid))
                missing = [u for u in pending if u not in results]
                if missing:
                    p.append("%s: tool_use ids were found without tool_result blocks "
                             "immediately after: %s" % (where, ", ".join(map(str, missing))))
                pending = []
            else:
                if len(set(uses)) != len(uses):
                    p.append("%s: tool_use ids must be unique" % where)
                pending = uses
            prev_role = role
        if uses_tools and not tools:
            p.append("Requests which include tool_use or tool_result blocks must define tools.")
        return p

    def success(self, req, item, seq):
        content = []
        if item.get("text"):
            content.append({"type": "text", "text": item["text"]})
        calls = item.get("tool_calls") or []
        for k, c in enumerate(calls):
            content.append({"type": "tool_use", "id": c.get("id") or "toolu_%02d%02d" % (seq, k),
                            "name": c["name"], "input": c.get("input", {})})
        stop = item.get("stop") or ("tool_use" if calls else "end_turn")
        # Like the real cache: every marked prefix is written; a request reads the
        # longest marked prefix already cached and writes the rest up to its last mark.
        read = created = 0
        prefixes = _cached_prefixes(req)
        if prefixes:
            with self.lock:
                for pre in prefixes:
                    if json.dumps(pre, sort_keys=True) in self._cached:
                        read = self.tokens(pre)
                for pre in prefixes:
                    self._cached.add(json.dumps(pre, sort_keys=True))
            created = max(0, self.tokens(prefixes[-1]) - read)
        usage = {"input_tokens": max(1, self.tokens(req) - read - created),
                 "output_tokens": self.tokens(content),
                 "cache_creation_input_tokens": created, "cache_read_input_tokens": read}
        usage.update(item.get("usage") or {})
        return {"id": "msg_fake%04d" % seq, "type": "message", "role": "assistant",
                "model": req["model"], "content": content, "stop_reason": stop,
                "stop_sequence": None, "usage": usage}


    SSE_TYPE = "text/event-stream; charset=utf-8"

    def events(self, req, msg, item):
        """-> [(is a token, SSE bytes)]: the message as Anthropic streams it."""
        out = []

        def ev(kind, data, tok=False):
            data = dict({"type": kind}, **data)
            out.append((tok, ("event: %s\ndata: %s\n\n" % (kind, json.dumps(data))).encode()))

        usage = dict(msg["usage"])
        start = dict(msg, content=[], stop_reason=None, usage=dict(usage, output_tokens=1))
        ev("message_start", {"message": start})
        err, after, sent = item.get("stream_error"), item.get("error_after", 0), 0
        for i, blk in enumerate(msg["content"]):
            if blk["type"] == "text":
                ev("content_block_start", {"index": i, "content_block": {"type": "text", "text": ""}})
                if i == 0:
                    ev("ping", {})
                for t in _tokens(blk["text"]):
                    if err and sent >= after:
                        break
                    ev("content_block_delta", {"index": i, "delta": {"type": "text_delta", "text": t}}, True)
                    sent += 1
            else:
                ev("content_block_start", {"index": i, "content_block": dict(blk, input={})})
                for piece in _pieces(json.dumps(blk["input"])):
                    ev("content_block_delta", {"index": i, "delta": {"type": "input_json_delta",
                                                                     "partial_json": piece}}, True)
            if err and sent >= after:
                ev("error", {"error": err})
                return out
            ev("content_block_stop", {"index": i})
        if err:
            ev("error", {"error": err})
            return out
        ev("message_delta", {"delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
                             "usage": {"output_tokens": usage["output_tokens"]}})
        ev("message_stop", {})
        return out


class FakeOpenAI(FakeLLM):
    kind = "openai"
    path = "/v1/chat/completions"
    TOP = {"model", "messages", "tools", "tool_choice", "max_tokens", "max_completion_tokens",
           "temperature", "top_p", "n", "stream", "stop", "presence_penalty",
           "frequency_penalty", "logit_bias", "user", "response_format", "seed",
           "parallel_tool_calls", "reasoning_effort", "stream_options", "store", "metadata",
           "logprobs", "top_logprobs", "service_tier"}
    ERR = {400: "invalid_request_error", 401: "invalid_request_error", 404: "invalid_request_error",
           429: "rate_limit_exceeded", 500: "server_error", 503: "server_error"}

    def check_auth(self, h):
        a = h.get("authorization", "")
        if not a.startswith("Bearer "):
            return "missing"
        return "bad" if a[7:] != self.api_key else None

    def auth_message(self):
        return "Incorrect API key provided: %s. You can find your API key at " \
               "https://platform.openai.com/account/api-keys." % "sk-****"

    def error(self, status, message=None, etype=None):
        etype = etype or self.ERR.get(status, "server_error")
        code = "invalid_api_key" if status == 401 else None
        body = {"error": {"message": message or etype, "type": etype, "param": None,
                          "code": code}}
        return _json(status, body, [("x-request-id", "req_fake")])

    def not_found(self, method, path):
        return self.error(404, "Invalid URL (%s %s)" % (method, path))

    def last_user_text(self, req):
        for m in reversed(req.get("messages") or []):
            if m.get("role") == "user":
                c = m.get("content")
                if isinstance(c, str):
                    return c
                return " ".join(x.get("text", "") for x in c if isinstance(x, dict))
        return ""

    def validate(self, b, h):
        p = []
        if "application/json" not in h.get("content-type", ""):
            p.append("content-type must be application/json")
        for k in b:
            if k not in self.TOP:
                p.append("Unrecognized request argument supplied: %s" % k)
        if not isinstance(b.get("model"), str) or not b.get("model"):
            p.append("you must provide a model parameter")
        if "stream" in b and not isinstance(b["stream"], bool):
            p.append("stream: must be a boolean")
        if "stream_options" in b and not b.get("stream"):
            p.append("The 'stream_options' parameter is only allowed when 'stream' is enabled.")
        has_mt, has_mct = "max_tokens" in b, "max_completion_tokens" in b
        if has_mt and has_mct:
            p.append("max_tokens and max_completion_tokens cannot both be set")
        for k in ("max_tokens", "max_completion_tokens"):
            v = b.get(k)
            if k in b and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
                p.append("%s: must be a positive integer" % k)
        if self.token_param == "max_completion_tokens" and has_mt:
            p.append("Unsupported parameter: 'max_tokens' is not supported with this model. "
                     "Use 'max_completion_tokens' instead.")
        if self.token_param == "max_tokens" and has_mct:
            p.append("Unrecognized request argument supplied: max_completion_tokens")
        tools = b.get("tools")
        if tools is not None:
            if not isinstance(tools, list) or not tools:
                p.append("tools: must be a non-empty list")
                tools = []
            names = set()
            for i, t in enumerate(tools):
                f = t.get("function") if isinstance(t, dict) else None
                if not isinstance(t, dict) or t.get("type") != "function" or not isinstance(f, dict):
                    p.append("tools.%d: must be {type:'function', function:{...}}" % i)
                    continue
                if not isinstance(f.get("name"), str) or not _NAME_RE.match(f["name"]):
                    p.append("tools.%d.function.name: invalid" % i)
                elif f["name"] in names:
                    p.append("tools: duplicate function name %s" % f["name"])
                else:
                    names.add(f["name"])
                extra = set(f) - {"name", "description", "parameters", "strict"}
                if extra:
                    p.append("tools.%d.function: unexpected keys %s" % (i, sorted(extra)))
                if "parameters" in f:
                    p.extend(self.check_schema(f["parameters"], "tools.%d.function.parameters" % i))
        tc = b.get("tool_choice")
        if tc is not None:
            if not tools:
                p.append("'tool_choice' is only allowed when 'tools' are specified")
            if not (tc in ("auto", "none", "required") or isinstance(tc, dict)):
                p.append("tool_choice: invalid value %r" % (tc,))
        p.extend(self._check_messages(b.get("messages")))
        return p

    def _check_messages(self, msgs):
        p = []
        if not isinstance(msgs, list) or not msgs:
            return ["messages: must be a non-empty list"]
        pending = []
        prev = None  # last user/assistant role, tool messages skipped
        for i, m in enumerate(msgs):
            where = "messages[%d]" % i
            role = m.get("role") if isinstance(m, dict) else None
            if role not in ("system", "developer", "user", "assistant", "tool"):
                p.append("%s.role: invalid %r" % (where, role))
                continue
            if pending and role != "tool":
                p.append("An assistant message with 'tool_calls' must be followed by tool "
                         "messages responding to each 'tool_call_id'. The following "
                         "tool_call_ids did not have response messages: %s" % ", ".join(pending))
                pending = []
            c = m.get("content")
            if role in ("system", "developer"):
                if i != 0:
                    p.append("%s: system message must come first" % where)
                if not isinstance(c, str) or not c:
                    p.append("%s.content: must be a non-empty string" % where)
            elif role == "user":
                if not (isinstance(c, str) and c) and not (isinstance(c, list) and c):
                    p.append("%s.content: must be a non-empty string or list" % where)
            elif role == "assistant":
                calls = m.get("tool_calls")
                if c is not None and not isinstance(c, (str, list)):
                    p.append("%s.content: must be a string or null" % where)
                if calls is not None:
                    if not isinstance(calls, list) or not calls:
                        p.append("%s.tool_calls: must be a non-empty list" % where)
                        calls = []
                    ids = []
                    for j, tc in enumerate(calls):
                        tw = "%s.tool_calls[%d]" % (where, j)
                        f = tc.get("function") if isinstance(tc, dict) else None
                        if not isinstance(tc, dict) or tc.get("type") != "function" \
                                or not isinstance(f, dict):
                            p.append("%s: must be {id, type:'function', function}" % tw)
                            continue
                        if not isinstance(tc.get("id"), str) or not tc["id"]:
                            p.append("%s.id: required" % tw)
                        if not isinstance(f.get("name"), str) or not f["name"]:
                            p.append("%s.function.name: required" % tw)
                        if not isinstance(f.get("arguments"), str):
                            p.append("%s.function.arguments: must be a JSON string" % tw)
                        else:
                            try:
                                json.loads(f["arguments"])
                            except ValueError:
                                p.append("%s.function.arguments: not valid JSON" % tw)
                        ids.append(tc.get("id"))
                    pending = [x for x in ids if isinstance(x, str)]
                elif not c:
                    p.append("%s: assistant content is required unless tool_calls is set"
                             % where)
            else:  # tool
                tid = m.get("tool_call_id")
                if tid not in pending:
                    p.append("%s: Invalid parameter: messages with role 'tool' must be a "
                             "response to a preceeding message with 'tool_calls' (%s)"
                             % (where, tid))
                else:
                    pending.remove(tid)
                if not isinstance(c, (str, list)):
                    p.append("%s.content: must be a string" % where)
                prev = "tool"
                continue
            if role in ("user", "assistant"):
                if role == prev:
                    p.append("%s: roles must alternate between 'user' and 'assistant'" % where)
                prev = role
        if pending:
            p.append("tool_call_ids without tool messages: %s" % ", ".join(pending))
        return p

    SSE_TYPE = "text/event-stream"

    def events(self, req, full, item):
        return _openai_events(req, full, item)

    def success(self, req, item, seq):
        calls = item.get("tool_calls") or []
        msg = {"role": "assistant", "content": item.get("text"), "refusal": None}
        if calls:
            msg["tool_calls"] = [
                {"id": c.get("id") or "call_%02d%02d" % (seq, k), "type": "function",
                 "function": {"name": c["name"],
                              "arguments": c["arguments"] if "arguments" in c
                              else json.dumps(c.get("input", {}))}}
                for k, c in enumerate(calls)]
        stop = item.get("stop") or ("tool_calls" if calls else "stop")
        prompt = self.tokens(req)
        usage = {"prompt_tokens": prompt, "completion_tokens": self.tokens(msg),
                 "total_tokens": prompt + self.tokens(msg),
                 "prompt_tokens_details": {"cached_tokens": 0}}
        usage.update(item.get("usage") or {})
        return {"id": "chatcmpl-fake%04d" % seq, "object": "chat.completion",
                "created": int(time.time()), "model": req["model"],
                "choices": [{"index": 0, "message": msg, "logprobs": None,
                             "finish_reason": stop}],
                "usage": usage, "system_fingerprint": "fp_fake"}


def _openai_events(req, full, item):
    """-> [(is a token, SSE bytes)]: a chat.completion as OpenAI streams it."""
    out = []
    base = {"id": full["id"], "object": "chat.completion.chunk", "created": full["created"],
            "model": full["model"], "system_fingerprint": full["system_fingerprint"]}

    def chunk(delta, finish=None, tok=False):
        c = dict(base, choices=[{"index": 0, "delta": delta, "logprobs": None,
                                 "finish_reason": finish}])
        out.append((tok, ("data: %s\n\n" % json.dumps(c)).encode()))

    msg = full["choices"][0]["message"]
    chunk({"role": "assistant", "content": "", "refusal": None})
    err, after = item.get("stream_error"), item.get("error_after", 0)
    for n, t in enumerate(_tokens(msg.get("content"))):
        if err and n >= after:
            break
        chunk({"content": t}, tok=True)
    if err:
        out.append((False, ("data: %s\n\n" % json.dumps({"error": err})).encode()))
        return out
    for k, tc in enumerate(msg.get("tool_calls") or ()):
        f = tc["function"]
        chunk({"tool_calls": [{"index": k, "id": tc["id"], "type": "function",
                               "function": {"name": f["name"], "arguments": ""}}]})
        for piece in _pieces(f["arguments"]):
            chunk({"tool_calls": [{"index": k, "function": {"arguments": piece}}]}, tok=True)
    chunk({}, full["choices"][0]["finish_reason"])
    if (req.get("stream_options") or {}).get("include_usage"):
        out.append((False, ("data: %s\n\n" % json.dumps(dict(base, choices=[], usage=full["usage"]))).encode()))
    out.append((False, b"data: [DONE]\n\n"))
    return out


def _tokens(text):
    """A text as the pieces a streamed answer sends it in: a word (with the spaces
    after it) each."""
    return re.findall(r"\s*\S+\s*|\s+", text or "")


def _pieces(s, n=3):
    """A tool call's JSON arguments in about n pieces (as the APIs stream them)."""
    size = max(1, -(-len(s) // n))
    return [s[i:i + size] for i in range(0, len(s), size)] or [""]


def _check_cache(blk, where):
    cc = blk["cache_control"]
    if not isinstance(cc, dict) or cc.get("type") != "ephemeral":
        return ["%s.cache_control: type must be 'ephemeral'" % where]
    return []


def _cached_prefixes(req):
    """The request prefixes ending at each cache_control mark (tools, then system)."""
    parts, cuts = [], []
    for t in req.get("tools") or []:
        parts.append(t)
        if "cache_control" in t:
            cuts.append(len(parts))
    system = req.get("system")
    if isinstance(system, list):
        for blk in system:
            parts.append(blk)
            if "cache_control" in blk:
                cuts.append(len(parts))
    return [parts[:c] for c in cuts]


def _json(status, obj, headers=()):
    return {"status": status, "headers": [("Content-Type", "application/json")] + list(headers),
            "body": json.dumps(obj).encode()}


# --- serving on the shared loopback server (tests/fakes/httpserver.py) ---------


def _reply(out):
    """FakeLLM.handle() output -> httpserver.Reply."""
    headers = dict(out["headers"])
    if out.get("truncate"):  # full Content-Length announced, half the body, then close
        body = out["body"]
        head = "HTTP/1.1 %d Status\r\n" % out["status"]
        head += "".join("%s: %s\r\n" % kv for kv in headers.items())
        head += "Content-Length: %d\r\nConnection: keep-alive\r\n\r\n" % len(body)
        return httpserver.Reply(raw=head.encode("latin-1") + body[: len(body) // 2],
                                delay=out.get("delay_s", 0))
    return httpserver.Reply(out["status"], out["body"], headers, chunked=bool(out.get("chunked")),
                            delay=out.get("delay_s", 0), stream=out.get("stream"))


class Service(dict):
    """What the fake_anthropic / fake_openai fixtures return: a JSON-able dict
    (kind, base_url, http_base_url, ca, api_key, control) plus helper methods.
    The API answers on both listeners (HTTPS base_url, plain http_base_url); the
    control endpoints too, and `control` is the plain one."""

    def __init__(self, fake, certs):
        self.fake = fake
        self.https = httpserver.Server(tls=certs, hostname="127.0.0.1") if certs else None
        self.http = httpserver.Server(hostname="127.0.0.1")
        for srv in (self.https, self.http):
            if srv:
                srv.route("*", "*", self._handle)
                srv.start()
        fake.counters = self._counters
        fake.reset()
        super().__init__(kind=fake.kind, api_key=fake.api_key,
                         base_url=(self.https or self.http).url,
                         http_base_url=self.http.url, control=self.http.url,
                         ca=certs["ca"] if certs else None)

    def _handle(self, req):
        return _reply(self.fake.handle(req.method, req.target, req.headers, req.body))

    def _counters(self):  # of the HTTPS listener; control traffic uses the plain one
        return (self.https.handshakes, self.https.connections) if self.https else (0, 0)

    def script(self, *items):
        self.fake.script(*items)

    def configure(self, **kw):
        self.fake.configure(**kw)

    def reset(self):
        self.fake.reset()

    def snapshot(self, bodies=True, last=None):
        return self.fake.snapshot(bodies, last)

    @property
    def requests(self):
        return self.snapshot()["requests"]

    @property
    def violations(self):
        return self.snapshot()["violations"]

    def close(self):
        for srv in (self.https, self.http):
            if srv:
                srv.stop()


def start(kind, certs=None, api_key=API_KEY):
    """kind 'anthropic' | 'openai'; certs: tlsca.make() dict (None: plain HTTP only)."""
    cls = FakeAnthropic if kind == "anthropic" else FakeOpenAI
    return Service(cls(api_key), certs)
