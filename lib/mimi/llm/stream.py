# A streamed LLM answer (`"stream": true`, server-sent events): the HTTP client hands
# the body to a Stream as it arrives (net/http.py's sink); its events are folded into
# the dict a plain answer would have been, which the provider decodes as usual, and
# the answer's text so far goes to a function as it grows, at most every
# STREAM_PARTIAL_MS. A server that answers with plain JSON (no text/event-stream) is
# kept as a body. Loaded only when a turn streams.
from mimi import limits, jsonutil
from mimi.net.http import HTTPError, ProtocolError, TooLarge
from mimi.llm.provider import strip_think, dumps
import time

# Kinds of mid-stream error worth another try (Anthropic's and OpenAI's names; the
# others would fail again).
_AGAIN = ("overloaded_error", "api_error", "rate_limit_error", "server_error", "rate_limit_exceeded")


class StreamError(HTTPError):
    """An error event in the middle of the answer; final: not worth another try."""

    def __init__(self, message, final):
        super().__init__(message)
        self.final = final


class Stream:
    def __init__(self, kind, on_text):
        self.fold = _anthropic if kind == "anthropic" else _openai
        self.on_text = on_text
        self.sse = False
        self.line = b""  # an unfinished line
        self.data = None  # the data of the event being read
        self.kept = 0  # bytes of text, tool arguments or plain body kept: capped
        self.pieces = []  # the answer's text (or a plain body's bytes)
        self.calls = {}  # index -> [id, name, [argument pieces]]
        self.usage = {}
        self.stop = None
        self.done = False
        self.shown = None  # the text last given to on_text, and when
        self.at = 0

    def begin(self, status, headers):
        self.sse = status == 200 and headers.get("content-type", "").startswith("text/event-stream")

    def __call__(self, piece):
        if not self.sse:  # an error, or a server that does not stream: the body as it is
            self._keep(len(piece))
            self.pieces.append(bytes(piece))
            return
        b = bytes(piece)  # (piece is a view of the receive buffer)
        i = 0
        while True:
            k = b.find(b"\n", i)
            if k < 0:
                break
            ln = b[i:k]
            if self.line:
                ln, self.line = self.line + ln, b""
            self._field(ln[:-1] if ln.endswith(b"\r") else ln)
            i = k + 1
        if i < len(b):
            self.line += b[i:]
            if len(self.line) > limits.SSE_LINE_MAX:
                raise TooLarge("a line of the streamed answer is longer than %d bytes"
                               % limits.SSE_LINE_MAX)

    def _field(self, ln):
        if not ln:  # the end of an event
            if self.data is not None:
                data, self.data = self.data, None
                self._event(data)
        elif ln.startswith(b"data:"):
            v = ln[6:] if ln[5:6] == b" " else ln[5:]
            self.data = v if self.data is None else self.data + b"\n" + v
            if len(self.data) > limits.SSE_LINE_MAX:
                raise TooLarge("an event of the streamed answer is larger than %d bytes"
                               % limits.SSE_LINE_MAX)
        # "event:" (the type is in the data too), "id:", "retry:" and ": comments" ignored

    def _event(self, data):
        if data == b"[DONE]":
            self.done = True
            return
        try:
            e = jsonutil.loads(data)
        except ValueError:
            raise ProtocolError("malformed event in the streamed answer: %r" % data[:60])
        if isinstance(e, dict):
            self.fold(self, e)

    def _keep(self, n):
        self.kept += n
        if self.kept > limits.HTTP_RESPONSE_MAX:
            raise TooLarge("LLM answer larger than %d bytes" % limits.HTTP_RESPONSE_MAX)

    def text(self, t):
        if not t:
            return
        self._keep(len(t))
        self.pieces.append(t)
        if len(self.pieces) > 32:  # many tiny strings cost more than their text
            self.pieces = ["".join(self.pieces)]
        now = time.ticks_ms()
        if self.on_text and (self.shown is None or time.ticks_diff(now, self.at) >= limits.STREAM_PARTIAL_MS):
            self.pieces = ["".join(self.pieces)]
            shown = strip_think(self.pieces[0])  # nothing of a <think> block
            if shown and shown != self.shown:
                self.shown, self.at = shown, now
                self.on_text(shown)

    def args(self, index, t):
        call = self.calls.get(index)
        if call is None:
            raise ProtocolError("streamed arguments of an unknown tool call (%r)" % (index,))
        if t:
            self._keep(len(t))
            call[2].append(t)

    def body(self):
        """A plain body (no event stream): its bytes."""
        return b"".join(self.pieces)

    def result(self):
        """The answer as the provider's plain reply dict."""
        if self.line:  # a last line or event without its line end
            self._field(self.line)
        self._field(b"")
        if not self.done:
            raise ProtocolError("the streamed answer ended before its end event")
        text = "".join(self.pieces)
        calls = [self.calls[k] for k in sorted(self.calls)]
        self.pieces = self.calls = None
        if self.fold is _openai:
            msg = {"content": text, "tool_calls": [
                {"id": c[0], "function": {"name": c[1], "arguments": "".join(c[2])}} for c in calls]}
            return {"choices": [{"message": msg, "finish_reason": self.stop}], "usage": self.usage}
        content = [{"type": "text", "text": text}]
        for c in calls:
            raw = "".join(c[2])
            try:
                args = jsonutil.loads(raw) if raw else {}
            except ValueError:
                args = raw  # the agent answers the model that its arguments were not JSON
            content.append({"type": "tool_use", "id": c[0], "name": c[1], "input": args})
        return {"content": content, "usage": self.usage, "stop_reason": self.stop}


def _counts(s, u):
    for k, v in (u or {}).items():  # message_delta's counts are running totals
        if v is not None:
            s.usage[k] = v


def _anthropic(s, e):
    t = e.get("type")
    if t == "content_block_delta":
        d = e.get("delta") or {}
        if d.get("type") == "text_delta":
            s.text(d.get("text"))
        elif d.get("type") == "input_json_delta":
            s.args(e.get("index"), d.get("partial_json"))
    elif t == "content_block_start":
        b = e.get("content_block") or {}
        if b.get("type") == "tool_use":
            s.calls[e.get("index")] = [b.get("id") or "", b.get("name") or "", []]
        elif b.get("type") == "text":
            s.text(b.get("text"))
    elif t == "message_start":
        _counts(s, (e.get("message") or {}).get("usage"))
    elif t == "message_delta":
        s.stop = (e.get("delta") or {}).get("stop_reason") or s.stop
        _counts(s, e.get("usage"))
    elif t == "message_stop":
        s.done = True
    elif t == "error":
        _broke(e.get("error"))


def _broke(err):
    if not isinstance(err, dict):
        err = {"message": str(err)}
    kind = err.get("type") or err.get("code") or "error"
    raise StreamError("the answer broke off: %s (%s)" % (err.get("message") or kind, kind),
                      kind not in _AGAIN)


def _openai(s, e):
    if e.get("error"):  # how OpenAI-compatible servers report a failure mid-stream
        _broke(e["error"])
    if e.get("usage"):
        s.usage = e["usage"]
    for c in e.get("choices") or ():
        if c.get("index", 0):
            continue
        d = c.get("delta") or {}
        s.text(d.get("content"))
        for tc in d.get("tool_calls") or ():
            k = tc.get("index", 0)
            call = s.calls.get(k)
            if call is None:
                call = s.calls[k] = ["", "", []]
            call[0] = tc.get("id") or call[0]
            f = tc.get("function") or {}
            call[1] = call[1] or f.get("name") or ""
            a = f.get("arguments")
            s.args(k, a if isinstance(a, str) or a is None else dumps(a))
        if c.get("finish_reason"):
            s.stop = c["finish_reason"]
            s.done = True
