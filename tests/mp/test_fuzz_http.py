# Fuzzing the LLM transport (issue 16, item 3): a loopback server (a thread of this
# MicroPython process) answers the real provider and HTTP client with hostile raw
# responses: broken status lines and headers, lying Content-Length, bogus chunked
# framing, bodies cut short or garbled, bytes after the response on a kept-alive
# connection. Each call must end in a reply or an LLMError a person can read, and the
# next sound response must be answered, never a stray one taken for it.
# Seed and case count: tests/mp/fuzz.py.
import json
import socket
import _thread
import fuzz
from fuzzsse import EVENTS, sse
from mimi import log
from mimi.utf8 import valid
from mimi.llm.anthropic import Anthropic
from mimi.llm.openai import OpenAI
from mimi.llm.provider import LLMError

HEAPSIZE = "4m"
TIMEOUT = 300


class Server:
    """Answers each request with the next scripted (bytes, close after) and, when the
    script is used up, with `final`."""

    def __init__(self):
        import os

        self.s = socket.socket()
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        for k in range(50):  # (no getsockname() here to learn an ephemeral port)
            self.port = 20000 + (os.urandom(2)[0] << 5 | k) % 12000
            try:
                self.s.bind(socket.getaddrinfo("127.0.0.1", self.port)[0][-1])
                break
            except OSError:
                pass
        self.s.listen(4)
        self.lock = _thread.allocate_lock()
        self.script = []
        self.final = None
        _thread.start_new_thread(self._run, ())

    def set(self, script, final):
        with self.lock:
            self.script = list(script)
            self.final = final

    def _next(self):
        with self.lock:
            return self.script.pop(0) if self.script else (self.final, False)

    def _run(self):
        while True:  # a thread per connection: a kept-alive one must not hold up the next
            _thread.start_new_thread(self._conn, (self.s.accept()[0],))

    def _conn(self, c):
        try:
            self._serve(c)
        except OSError:
            pass
        c.close()

    def _serve(self, c):
        buf = b""
        while True:
            while b"\r\n\r\n" not in buf:
                d = c.recv(4096)
                if not d:
                    return
                buf += d
            head, _, buf = buf.partition(b"\r\n\r\n")
            n = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    n = int(line.split(b":")[1])
            while len(buf) < n:
                d = c.recv(4096)
                if not d:
                    return
                buf += d
            buf = buf[n:]
            data, close = self._next()
            c.write(data)
            if close:
                return


def sound(kind, text):
    if kind == "anthropic":
        obj = {"content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
               "usage": {"input_tokens": 1, "output_tokens": 1}}
    else:
        obj = {"choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}
    return fuzz.dumps(obj)


def response(body, status=b"HTTP/1.1 200 OK", headers=None):
    hs = [status] + (headers if headers is not None else [b"Content-Type: application/json",
                                                         b"Content-Length: %d" % len(body)])
    return b"\r\n".join(hs) + b"\r\n\r\n" + body


def chunked(body, r):
    return fuzz.chunked(r, body, 300)


STATUS = (b"HTTP/1.1 200 OK", b"HTTP/1.0 200 OK", b"HTTP/1.1 2000 OK", b"HTTP/2 200", b"ICY 200 OK",
          b"HTTP/1.1 200", b"HTTP/1.1 20x OK", b"", b"HTTP/1.1 500 Internal", b"HTTP/1.1 429 Slow",
          b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK", b"HTTP/1.1 204 No Content", b"\xff\xfe",
          b"HTTP/1.1 401 \xed\xa0\x80", b"HTTP/1.1 101 Switching")
HEADERS = (b"Content-Length: -1", b"Content-Length: abc", b"Content-Length: 10, 20", b"Content-Length: 99999999999999999999",
           b"Content-Length: 0", b"Transfer-Encoding: gzip", b"Transfer-Encoding: chunked", b"no colon",
           b" leading: space", b"X-Long: " + b"x" * 5000, b"Connection: close", b"Connection: keep-alive",
           b"Retry-After: -5", b"Retry-After: nan", b"Retry-After-Ms: 1e9", b"Content-Type: text/html", b"\x00: \x00",
           b"X: \xc0\x80")


def streamed(r, kind):
    """(raw response, close after): a sound event stream in broken HTTP framing."""
    body = sse(EVENTS[kind](r, r.pick(("Hello", "\u4e2d\u6587")), False), r)
    hs = [b"Content-Type: text/event-stream"]
    k = r.below(4)
    if k == 0:  # chunked, then spoiled
        data = chunked(body, r)
        data = fuzz.garble(r, data) if r.chance(50) else data[:r.below(len(data))]
        return response(data, headers=hs + [b"Transfer-Encoding: chunked"]), True
    if k == 1:  # cut short, until the connection closes
        return response(body[:r.below(len(body))], headers=hs + [b"Connection: close"]), True
    if k == 2:  # a lying length
        return response(body, headers=hs + [b"Content-Length: %d" % max(0, len(body) + r.pick((-9, 5)))]), True
    return response(fuzz.garble(r, body), headers=hs + [b"Content-Length: %d" % len(body)]), True


def hostile(r, kind):
    """(raw response bytes, close after sending)."""
    body = sound(kind, r.pick(("Hello", "\u4e2d", "")))
    if r.chance(40):
        body = fuzz.garble(r, fuzz.dumps(fuzz.mutate(r, json.loads(body))))
    k = r.below(8)
    if k == 0:  # Content-Length that lies
        n = len(body) + r.pick((-5, -1, 1, 100, -len(body)))
        return response(body, headers=[b"Content-Length: %d" % max(n, 0)]), True
    if k == 1:  # chunked, then spoiled
        data = chunked(body, r)
        if r.chance(70):
            data = fuzz.garble(r, data) if r.chance(50) else data[:r.below(len(data))]
        return response(data, headers=[b"Transfer-Encoding: chunked"]), True
    if k == 2:  # until the connection closes
        return response(body, headers=[b"Connection: close"]), True
    if k == 3:
        return response(body, status=r.pick(STATUS)), True
    if k == 4:
        hs = [b"Content-Length: %d" % len(body)]
        for _ in range(r.below(4) + 1):
            hs.insert(r.below(len(hs) + 1), r.pick(HEADERS))
        return response(body, headers=hs), True
    if k == 5:  # bare LF, or cut anywhere
        data = response(body)
        return (data.replace(b"\r\n", b"\n") if r.chance(50) else data[:r.below(len(data))]), True
    if k == 6:  # a sound answer with a stray one behind it, on a kept-alive connection
        return response(body) + r.pick((response(sound(kind, "STRAY")), b"junk", b"\r\n")), False
    return fuzz.garble(r, response(body)), True


def readable(text):
    return valid(text) and text.strip() and "Traceback" not in text and len(text) < 1000


def test_fuzz_llm_transport():
    log.mute = True
    srv = Server()
    what = "llm http"
    providers = {}
    for n, r in fuzz.cases(150, what):
        print("CASE", n)
        kind = "anthropic" if n % 2 == 0 else "openai"
        if kind not in providers:
            cls = Anthropic if kind == "anthropic" else OpenAI
            providers[kind] = cls("key", model="m", api_base="http://127.0.0.1:%d" % srv.port,
                                  sleep=lambda s: None, timeout_s=5)
        p = providers[kind]
        partials = []
        p.stream = partials.append if r.chance(30) else None  # a streamed answer
        script = [(streamed if p.stream and r.chance(70) else hostile)(r, kind) for _ in range(r.below(3) + 1)]
        srv.set(script, response(sound(kind, "next %d" % n)))
        print(script)
        try:
            reply = p.chat("system", [{"role": "user", "content": "hi"}])
            if not isinstance(reply.text, str) or not valid(reply.text) or "STRAY" in reply.text:
                fuzz.fail(what, n, "reply %r" % (reply.text,), script)
        except LLMError as e:
            if not readable(str(e)):
                fuzz.fail(what, n, "unreadable error %r" % str(e), script)
        except Exception as e:  # noqa: B902 - any other escape is the finding
            fuzz.crash(what, n, e, script)
        for text in partials:
            if not isinstance(text, str) or not valid(text) or not text:
                fuzz.fail(what, n, "partial %r" % (text,), script)
        srv.set([], response(sound(kind, "next %d" % n)))
        try:
            reply = p.chat("system", [{"role": "user", "content": "again"}])
        except Exception as e:  # noqa: B902
            fuzz.crash(what, n, e, script)
        if reply.text != "next %d" % n:
            fuzz.fail(what, n, "the next call got %r" % (reply.text,), script)
