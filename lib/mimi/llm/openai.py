# OpenAI Chat Completions (POST {api_base}/v1/chat/completions) and the servers that
# copy it (Ollama, LM Studio, DeepSeek, OpenRouter, ...). The one place where the
# internal Anthropic-style messages become OpenAI messages.
from mimi import jsonutil
from mimi.llm.provider import Provider, Reply, Call, strip_think, dumps, parts, inner, tokens, joined, text_of
from mimi.net import split_url
from micropython import const

OFFICIAL_HOST = "api.openai.com"
_NOARGS = const('{"type":"object","properties":{}}')  # a tool without arguments (mimi/tools)


def _text(content):
    if isinstance(content, (str, tuple)):  # (a tuple: a text in pieces, bus.pieces())
        return content
    out = []
    for blk in content or ():
        if isinstance(blk, str):
            out.append(blk)
        elif blk.get("type") == "text":
            out.append(blk.get("text") or "")
    return joined(out)


def _convert(m):
    """One Anthropic-style message -> its OpenAI messages (a tool result each)."""
    role, content = m["role"], m["content"]
    if isinstance(content, (str, tuple)):
        return [{"role": role, "content": content}]
    if role == "assistant":
        calls = [{"id": b["id"], "type": "function",
                  "function": {"name": b["name"], "arguments": text_of(b.get("input") or {})}}
                 for b in content if b.get("type") == "tool_use"]
        text = _text(content)
        msg = {"role": "assistant", "content": text or (None if calls else "")}
        if calls:
            msg["tool_calls"] = calls
        return [msg]
    out = [{"role": "tool", "tool_call_id": b["tool_use_id"], "content": _text(b.get("content"))}
           for b in content if b.get("type") == "tool_result"]
    text = _text(content)
    if text:
        out.append({"role": "user", "content": text})
    return out


class OpenAI(Provider):
    name = "openai"
    path = "/chat/completions"
    _ends = None

    def headers(self):
        h = {"content-type": "application/json"}
        if self.api_key:
            h["authorization"] = "Bearer " + self.api_key
        return h

    def token_param(self):
        # api.openai.com wants max_completion_tokens (its reasoning models refuse
        # max_tokens); Ollama, LM Studio, DeepSeek and others only know max_tokens.
        host = split_url(self.api_base)[1]
        return "max_completion_tokens" if host == OFFICIAL_HOST else "max_tokens"

    def message(self, m):
        """One internal message as its OpenAI messages: a list of parts() (written
        comma-separated, net/httpbody.py). Never joined: a tool result as big as a file
        read would be in RAM twice."""
        return [parts(x) for x in _convert(m)]

    def system_parts(self, p):
        lits = p[0] + p[1] + p[2]
        return (b'{"role":"system","content":"', inner(lits), b'"},') if lits else b""

    def tool_parts(self, specs):
        # A tool without arguments goes without "parameters" ("omitting parameters defines
        # a function with an empty parameter list"): 31-47 bytes less in every request.
        return [(b'{"type":"function","function":{"name":"', n, b'","description":"', d, b'"}}')
                if s == _NOARGS else
                (b'{"type":"function","function":{"name":"', n, b'","description":"', d,
                 b'","parameters":', s, b"}}") for n, d, s in specs]

    def body(self, system, messages, tools, stream=False):
        if self._ends is None:  # the same for every call
            self._ends = (('{"model":%s,"messages":[' % dumps(self.model)).encode(),
                          ('],"%s":%d' % (self.token_param(), self.max_tokens)).encode())
        return (self._ends[0], system, messages, self._ends[1],
                b',"stream":true,"stream_options":{"include_usage":true}' if stream else b"",
                (b',"tools":[', tools, b'],"tool_choice":"auto"') if tools else b"", b"}")

    def decode(self, data):
        choice = data["choices"][0]
        msg = choice.get("message") or {}
        calls = []
        for k, tc in enumerate(msg.get("tool_calls") or ()):
            f = tc.get("function") or {}
            raw = f.get("arguments")
            if isinstance(raw, dict):  # some servers send an object, not a JSON string
                args = raw
            else:
                try:
                    args = jsonutil.loads(raw) if raw else {}
                except ValueError:
                    args = raw
            calls.append(Call(tc.get("id") or "call_%d" % k, f.get("name") or "", args))
        u = data.get("usage") or {}
        details = u.get("prompt_tokens_details") or {}
        # OpenAI reports cache reads only; DeepSeek names them prompt_cache_hit_tokens,
        # OpenRouter adds cache_write_tokens, LiteLLM-style gateways Anthropic's name.
        usage = {"input": tokens(u.get("prompt_tokens")), "output": tokens(u.get("completion_tokens")),
                 "cache_read": tokens(details.get("cached_tokens") or u.get("prompt_cache_hit_tokens")),
                 "cache_write": tokens(details.get("cache_write_tokens")
                                       or u.get("cache_creation_input_tokens"))}
        content = msg.get("content")
        text = _text(content) if content else ""
        return Reply(strip_think(text), calls, usage, choice.get("finish_reason"))


def fold(s, e):
    """One event of a streamed answer folded into s (llm/stream.py's Stream)."""
    if e.get("error"):  # how OpenAI-compatible servers report a failure mid-stream
        from mimi.llm.stream import broke

        broke(s, e["error"])
    s.usage = e.get("usage") or s.usage
    for c in e.get("choices") or ():
        if c.get("index", 0):
            continue
        d = c.get("delta") or {}
        s.text(d.get("content"))
        for tc in d.get("tool_calls") or ():
            from mimi.llm.stream import index

            k = index(tc.get("index", 0))
            call = s.calls.get(k)
            if call is None:
                call = s.calls[k] = ["", "", []]
            f = tc.get("function") or {}
            call[0] = tc.get("id") or call[0]
            call[1] = call[1] or f.get("name") or ""
            a = f.get("arguments")
            s.args(k, a if isinstance(a, str) or a is None else dumps(a))
        if c.get("finish_reason"):
            s.stop = c["finish_reason"]
            s.done = True


def streamed(s, text, calls):
    """A streamed answer (its text; its calls [id, name, [argument pieces]]) as the
    plain reply's dict."""
    msg = {"content": text, "tool_calls": [
        {"id": c[0], "function": {"name": c[1], "arguments": "".join(c[2])}} for c in calls]}
    return {"choices": [{"message": msg, "finish_reason": s.stop}], "usage": s.usage}
