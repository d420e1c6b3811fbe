# Anthropic Messages API (POST {api_base}/v1/messages). The internal message format
# is already Anthropic's, so a message is encoded as it is; the request adds the
# prompt-cache marks.
from mimi.llm.provider import Provider, Reply, Call, strip_think, dumps, parts, inner, tokens, joined
from micropython import const

VERSION = "2023-06-01"
_MARK = const(b',"cache_control":{"type":"ephemeral"}')


class Anthropic(Provider):
    name = "anthropic"
    path = "/messages"
    _head = None

    def headers(self):
        return {"x-api-key": self.api_key, "anthropic-version": VERSION,
                "content-type": "application/json"}

    def message(self, m):
        return parts(m)

    def system_parts(self, p):
        """Text blocks with cache marks on the fixed and the sections block (2 marks + 1
        on the tools, within Anthropic's 4); the per-turn context, which changes every
        turn, is left unmarked, so a memory edit still reads tools + fixed from cache."""
        fixed, sections, turn = p
        return [(b'{"type":"text","text":"', inner(lits), b'"', _MARK if k < 2 else b"", b"}")
                for k, lits in enumerate((fixed, sections, turn)) if lits]

    def tool_parts(self, specs):
        """The tools, the last one marked so the tool definitions are cached too."""
        last = len(specs) - 1
        return [(b'{"name":"', n, b'","description":"', d, b'","input_schema":', s,
                 _MARK if k == last else b"", b"}") for k, (n, d, s) in enumerate(specs)]

    def body(self, system, messages, tools, stream=False):
        if self._head is None:  # the same for every call
            self._head = ('{"model":%s,"max_tokens":%d' % (dumps(self.model), self.max_tokens)).encode()
        return (self._head, b',"stream":true' if stream else b"",
                (b',"system":[', system, b"]") if system else b"",
                (b',"tools":[', tools, b"]") if tools else b"",
                b',"messages":[', messages, b"]}")

    def decode(self, data):
        texts = []
        calls = []
        for blk in data.get("content") or ():
            t = blk.get("type")
            if t == "text":
                texts.append(blk.get("text") or "")
            elif t == "tool_use":
                calls.append(Call(blk.get("id") or "", blk.get("name") or "",
                                  blk.get("input") if blk.get("input") is not None else {}))
        u = data.get("usage") or {}
        read = tokens(u.get("cache_read_input_tokens"))
        made = tokens(u.get("cache_creation_input_tokens"))
        usage = {"input": tokens(u.get("input_tokens")) + read + made,
                 "output": tokens(u.get("output_tokens")), "cache_read": read, "cache_write": made}
        return Reply(strip_think(joined(texts)), calls, usage, data.get("stop_reason"))


def fold(s, e):
    """One event of a streamed answer folded into s (llm/stream.py's Stream)."""
    t = e.get("type")
    d = e.get("delta") or {}
    u = None
    if t == "content_block_delta":
        if d.get("type") == "text_delta":
            s.text(d.get("text"))
        elif d.get("type") == "input_json_delta":
            s.args(e.get("index"), d.get("partial_json"))
    elif t == "content_block_start":
        b = e.get("content_block") or {}
        if b.get("type") == "tool_use":
            from mimi.llm.stream import index

            s.calls[index(e.get("index"))] = [b.get("id") or "", b.get("name") or "", []]
        elif b.get("type") == "text":
            s.text(b.get("text"))
    elif t == "message_start":
        u = (e.get("message") or {}).get("usage")
    elif t == "message_delta":
        s.stop = d.get("stop_reason") or s.stop
        u = e.get("usage")
    elif t == "message_stop":
        s.done = True
    elif t == "error":
        from mimi.llm.stream import broke

        broke(s, e.get("error"))
    for k, v in (u or {}).items():  # message_delta's counts are running totals
        if v is not None:
            s.usage[k] = v


def streamed(s, text, calls):
    """A streamed answer (its text; its calls [id, name, [argument pieces]]) as the
    plain reply's dict."""
    from mimi import jsonutil

    content = [{"type": "text", "text": text}]
    for c in calls:
        raw = "".join(c[2])
        try:
            args = jsonutil.loads(raw) if raw else {}
        except ValueError:
            args = raw  # the agent tells the model its arguments were not JSON
        content.append({"type": "tool_use", "id": c[0], "name": c[1], "input": args})
    return {"content": content, "usage": s.usage, "stop_reason": s.stop}
