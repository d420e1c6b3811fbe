# A streamed LLM answer (`"stream": true`, server-sent events): the HTTP client hands
# the body to a Stream as it arrives (net/http.py's sink); its events are folded into
# the dict a plain answer would have been, which the provider decodes as usual, and
# the answer's text so far goes to a function as it grows, at most every
# STREAM_PARTIAL_MS. A server that answers with plain JSON (no text/event-stream) is
# kept as a body. Loaded only when a turn streams; kept small (few functions). The
# events' shapes are the provider's (fold() and streamed() of llm/anthropic.py,
# llm/openai.py): only the configured one's code is loaded.
import gc
import time
import mimi
from mimi import limits, jsonutil, short, log, fs
from mimi.net.http import _err  # (net/httperr.py: loaded by the first error, not by a turn)
from mimi.llm.provider import strip_think
from micropython import const

# Kinds of mid-stream error worth another try (Anthropic's and OpenAI's names); any
# other is final: asking again would fail again.
_AGAIN = const(("overloaded_error", "api_error", "rate_limit_error", "server_error", "rate_limit_exceeded"))


class Stream:
    sse = done = False
    line = b""  # an unfinished line
    data = stop = shown = at = None  # the event being read; stop reason; the text last
    # shown, and when the next may be
    kept = 0  # bytes kept (text, tool arguments, a plain body): capped
    n = whole = loose = 0  # the text's characters; pieces joined so far; characters since
    out = 0  # joined pieces waiting on the flash (spill()); k < 0: -k - 1 of them, then the flash said no

    def __init__(self, kind, on_text):
        self.api = mimi.load("mimi.llm." + kind)  # its events' shapes
        self.on_text = on_text
        self.pieces = []  # the answer's text (or a plain body's bytes)
        self.calls = {}  # index -> [id, name, [argument pieces]]
        self.usage = {}

    def begin(self, status, headers):
        self.sse = status == 200 and headers.get("content-type", "").startswith("text/event-stream")

    def __call__(self, piece):
        if not self.sse:  # an error, or a server that does not stream: the body as it is
            self.keep(bytes(piece))
            return
        b = self.line + piece  # (piece: a view of the receive buffer)
        i = 0
        while True:
            k = b.find(b"\n", i)
            if k < 0:
                break
            ln = b[i:k - 1] if k > i and b[k - 1] == 13 else b[i:k]
            i = k + 1
            if not ln:  # an event ends
                if self.data is not None:
                    d, self.data = self.data, None
                    self.event(d)
            elif ln.startswith(b"data:"):  # ("event:" is in the data too; id:, retry:, comments)
                ln = ln[6:] if ln[5:6] == b" " else ln[5:]
                self.data = ln if self.data is None else self.data + b"\n" + ln
        self.line = b[i:]
        if len(self.line) + len(self.data or b"") > limits.SSE_LINE_MAX:
            raise _err("TooLarge", "an event of the streamed answer is longer than %d bytes" % limits.SSE_LINE_MAX)

    def event(self, d):
        if d == b"[DONE]":
            self.done = True
            return
        try:
            try:
                s = str(d, "utf-8")
            except UnicodeError:
                s = ""
            # ASCII without \u escapes (nearly every event): its strings are valid UTF-8 as
            # json makes them, and a key that is not a string is never read here
            e = jsonutil.json.loads(s) if len(s) == len(d) and "\\u" not in s else jsonutil.loads(d)
        except ValueError:
            raise _err("ProtocolError", "malformed event in the streamed answer: %r" % d[:60])
        if isinstance(e, dict):
            try:
                self.api.fold(self, e)
            except (AttributeError, TypeError, KeyError, IndexError) as x:  # fields of the wrong type
                raise _err("ProtocolError", "malformed event in the streamed answer (%s: %s)" % (type(x).__name__, x))

    def keep(self, x, call=None):
        if x:
            if not isinstance(x, (str, bytes)):  # joined at the end: refused now, in event()
                raise TypeError("%s where text belongs" % type(x).__name__)
            self.kept += len(x)
            if self.kept > limits.HTTP_RESPONSE_MAX:
                raise _err("TooLarge", "LLM answer larger than %d bytes" % limits.HTTP_RESPONSE_MAX)
            (self.pieces if call is None else call[2]).append(x)

    def text(self, t):
        if not t:
            return
        self.keep(t)
        p = self.pieces
        # the small pieces since the last whole one joined into one of up to PROMPT_CHUNK:
        # a long answer is held in such pieces, never in one block as big as itself (a
        # short heap: smaller ones, which its holes have room for)
        self.n += len(t)
        self.loose += len(t)
        whole = limits.STREAM_PIECE_SHORT if short() else limits.PROMPT_CHUNK
        if self.loose >= whole or len(p) - self.whole > 32:
            p[self.whole:] = ["".join(p[self.whole:])]  # (many tiny strings cost more than their text)
            if self.loose >= whole:
                self.whole += 1
                self.loose = 0
                if self.out >= 0 and short() and (not self.on_text or self.n > limits.STREAM_PARTIAL_SHORT):
                    self.spill()  # (the text so far is shown no more)
        now = time.ticks_ms()
        if not self.on_text or self.at is not None and time.ticks_diff(now, self.at) < 0:
            return
        # the text so far is a copy: on a short heap only its start is shown as it
        # grows (the reply brings all of it)
        if self.n > (limits.STREAM_PARTIAL_SHORT if short() else limits.STREAM_PARTIAL_MAX):
            return
        self.at = time.ticks_add(now, limits.STREAM_PARTIAL_MS)
        try:
            shown = strip_think("".join(p))  # nothing of a <think> block
        except MemoryError:  # a heap with room in all but no block this big: the text so
            self.on_text = None  # far is a nicety, the reply brings all of it; none more
            return
        if shown and shown != self.shown:
            self.shown = shown
            self.on_text(shown)

    def spill(self):
        """On a short heap the answer's joined pieces wait on the flash
        (limits.ANSWER_SPILL) while the rest streams in, each replaced by its length in
        bytes, and come back when it has ended (result()): a 10 KB answer is then not
        in the heap beside the connection, the event being read and the loop's work,
        which left a 120 KB heap without the 1 KB the next piece needs. Kept in RAM when
        the flash says no."""
        p = self.pieces
        try:
            with fs.lock, open(limits.ANSWER_SPILL, "ab" if self.out else "wb") as f:
                while self.out < self.whole:
                    p[self.out] = f.write(p[self.out])
                    self.out += 1
        except OSError as e:
            log.warning("llm", "streamed answer kept in RAM: %s", e)
            self.out = -self.out - 1  # (the pieces written so far come back all the same)

    def unspill(self):
        """The pieces spill() wrote, read back in place (str(bytes) shares the bytes)."""
        n = self.out if self.out >= 0 else -self.out - 1
        if n:
            p = self.pieces
            with fs.lock, open(limits.ANSWER_SPILL, "rb") as f:
                for i in range(n):
                    p[i] = str(f.read(p[i]), "utf-8")

    def args(self, index, t):
        call = self.calls.get(index)
        if call is None:
            raise _err("ProtocolError", "streamed arguments of an unknown tool call (%r)" % (index,))
        self.keep(t, call)

    def result(self):
        """The answer as the provider's plain reply dict."""
        self(b"\n\n")  # a last line or event without its line ends
        if not self.done:
            raise _err("ProtocolError", "the streamed answer ended before its end event")
        if short():  # the events' garbage out first: what the turn keeps of the answer
            gc.collect()  # goes to the lowest holes, not across the room the tools need
        self.unspill()
        text = self.pieces
        text = text[0] if len(text) == 1 else "".join(text) if self.n <= limits.PROMPT_CHUNK \
            else tuple(text)  # a long answer stays in its pieces (bus.pieces())
        calls = [self.calls[k] for k in sorted(self.calls)]
        self.pieces = self.calls = None
        return self.api.streamed(self, text, calls)


def index(v):
    """A tool call's index: a number (the calls are sorted by it at the end)."""
    if isinstance(v, int):
        return v
    raise TypeError("tool call index %r" % (v,))


def broke(s, err):
    if not isinstance(err, dict):
        err = {"message": str(err)}
    kind = err.get("type") or err.get("code") or "error"
    e = _err("ProtocolError", "the answer broke off: %s (%s)" % (err.get("message") or kind, kind))
    e.final = kind not in _AGAIN  # (llm/failure.py: not retried)
    raise e
