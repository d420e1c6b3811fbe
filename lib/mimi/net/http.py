# HTTP/1.1 client of the firmware: verified TLS, keep-alive, chunked bodies, one
# deadline per request, size caps, HTTP CONNECT and SOCKS5 proxies.
# micropython-lib `requests` speaks HTTP/1.0 (0.10.2, the frozen one), forces
# CERT_NONE and opens a connection per request, so LLM and Telegram calls use this.
#
# API: Client(base_url, ca=None, proxy=None, timeout_s) .request(method, path,
# headers=None, body=None, deadline_s=None, sink=None) -> Response(.status .reason
# .headers .body .text .json()) (sink: the body handed to it as it arrives); AsyncClient: the same with `await` (net/asynchttp.py); its
# detach() hands a connection that switched protocols (101) to its new owner
# (net/wsclient.py). .body is the one copy of the body (bytearray; bytes for a chunked one);
# with a sink it is handed over piece by piece instead, never kept (Telegram's updates,
# a streamed LLM answer, OTA downloads: update/download.py). ca: None (the process's shared roots, net/tls.py), a file
# path, or PEM/DER bytes. proxy: ("http"|"socks5", host, port). body: bytes, str, a
# dict/list sent as JSON, or a tuple of parts written one after the other without
# ever being joined (str/bytes/memoryview, nested tuples, and lists whose items are
# written comma-separated: the LLM request, net/httpbody.py), Regions of files read as
# they are sent and Pieces made as they are sent (a chart's PNG). Errors (net/httperr.py,
# loaded by the first one raised or named): HTTPError > Timeout, TooLarge, TLSFailure,
# ConnectFailure (the request never reached the server: safe to resend), ProtocolError.
# Counters: connects (TCP connections), handshakes (TLS handshakes started).
# A kept-alive connection is checked before it is used again: anything readable on
# it (an unsolicited response, the server's close) means it is closed and a new one
# opened, so a stray answer is never taken for the next request's.
#
# The protocol is written once, as generators that yield I/O operations:
#   (_W, data)  write all of data            -> None
#   (_R, mv)    read at most len(mv) into mv -> count, 0 at EOF
# Client (net/httpsync.py, loaded on first use of http.Client) runs them on
# non-blocking sockets with poll (agent thread, blocking);
# AsyncClient (net/asynchttp.py, loaded on first use of http.AsyncClient) runs them on
# asyncio streams (event loop).
import json

from mimi import limits, jsonutil, net
from mimi.fs import decode

# (the module's table holds 23 names: one more makes it 29 slots, +48 B of a frozen
# board's heap with Telegram; what a rare path needs it imports there)
_W = 0
_R = 1


def _err(kind, msg):
    """The error `kind` (a class name of net/httperr.py, loaded by the first one) for msg."""
    return getattr(_mod("httperr"), kind)(msg)


def _mod(name):
    """net/<name>.py (httperr, httpbody), loaded under the flash's lock (mimi.load): both
    threads load them (the first error may come on both at once, when the network goes),
    and imported by both, one took the module half-made or each made its own classes
    (an except missed the other's errors)."""
    import mimi

    return mimi.load("mimi.net." + name)


class Response:
    def __init__(self, status, reason, headers, body):
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body

    @property
    def text(self):
        return decode(self.body)

    def json(self):
        try:
            return jsonutil.loads(self.body)  # joins surrogate-pair escapes
        except ValueError:
            start = decode(self.body[:60])
            raise _err("ProtocolError", "response is not valid JSON (HTTP %d, %d bytes): %r"
                                % (self.status, len(self.body), start))


# ---- parsing (shared by both clients) ----

class _Buf:
    """Receive buffer of one client: the response head must fit in it whole."""

    def __init__(self, size):
        self.b = bytearray(size)
        self.mv = memoryview(self.b)
        self.i = self.j = 0  # unread bytes are b[i:j]
        self.got = 0  # bytes received for the current response
        self.head = 0  # bytes of the current response head
        self.sent = False  # the whole request went out (the server may have acted on it)

    def clear(self):
        self.i = self.j = self.got = self.head = 0
        self.sent = False

    def fill(self, what):
        if self.j == len(self.b):
            if self.i == 0:
                raise _err("TooLarge", "%s larger than %d bytes" % (what, len(self.b)))
            n = self.j - self.i
            self.mv[0:n] = self.mv[self.i:self.j]
            self.i, self.j = 0, n
        self.took((yield (_R, self.mv[self.j:])), what)

    def took(self, n, what):
        """n bytes were read into the buffer past j (0: the connection closed)."""
        if not n:
            if self.got == 0:
                raise _err("_Stale", "connection closed by the server before the response")
            raise _err("ProtocolError", "connection closed in the middle of the %s" % what)
        self.j += n
        self.got += n

    def until(self, sep, what):
        """Index just past the next `sep` in the buffer, reading more as needed."""
        pos = self.i
        while True:
            k = self.b.find(sep, pos, self.j)
            if k >= 0:
                return k + len(sep)
            pos = max(self.i, self.j - len(sep) + 1)
            shift = self.i
            yield from self.fill(what)
            pos -= shift - self.i  # fill() may have moved the data to the front

    def line(self, what):
        end = yield from self.until(b"\r\n", what)
        s = bytes(self.mv[self.i:end - 2])
        self.i = end
        return s

    def take(self, n):
        k = min(n, self.j - self.i)
        mv = self.mv[self.i:self.i + k]
        self.i += k
        return mv

    def body(self, most):
        """At most `most` bytes of the response body (framing set by _response) as a
        view of the buffer, valid until the next call; empty at the end. The one body
        decoder: request() reads bodies whole with it, or hands them to a sink."""
        if self.chunked and self.left == 0 and not self.done:
            if self.seen and (yield from self.line("chunked body")):
                raise _err("ProtocolError", "chunk not followed by CRLF")
            ln = yield from self.line("chunk header")
            try:
                n = int(ln.split(b";", 1)[0].strip(), 16)
                if n < 0:
                    raise ValueError
            except ValueError:
                raise _err("ProtocolError", "malformed chunk size line: %r" % ln[:40])
            if n == 0:
                while (yield from self.line("chunk trailer")):
                    pass
                self.done = True
            self.left = n
        if self.done:
            return self.mv[0:0]
        if self.i == self.j:
            self.i = 0
            self.j = (yield (_R, self.mv)) or 0
            self.got += self.j
        left = self.left  # in the body or chunk; None: until EOF
        k = self.take(min(most, self.j - self.i if left is None else left))
        n = len(k)
        if not n:
            if left is not None:
                raise _err("ProtocolError", "connection closed in the middle of the response body")
            self.done = True
        self.seen += n
        if self.seen > self.cap:
            raise _err("TooLarge", "HTTP response body larger than %d bytes" % self.cap)
        if left is not None:
            self.left = left - n
            self.done = self.left == 0 and not self.chunked
        return k


def _read_head(buf, what="response headers"):
    """Generator: the response head, read line by line from buf (inline: a generator
    per line would be garbage for every header). A line longer than the buffer is
    read and dropped (a huge header we don't need must not fail the request); the
    whole head is capped at limits.HTTP_HEADER_MAX."""
    while True:
        status = None
        headers = {}
        while True:
            pos = buf.i
            long = False
            while True:
                k = buf.b.find(b"\r\n", pos, buf.j)
                if k >= 0 or (buf.i == 0 and buf.j == len(buf.b)):
                    end = k + 2 if k >= 0 else buf.j - (buf.j > buf.i and buf.b[buf.j - 1] == 13)
                    buf.head += end - buf.i
                    if buf.head > limits.HTTP_HEADER_MAX:
                        raise _err("TooLarge", "%s larger than %d bytes" % (what, limits.HTTP_HEADER_MAX))
                    if k >= 0:
                        ln = None if long else bytes(buf.mv[buf.i:k])
                        buf.i = end
                        break
                    long = True  # full without a line end: drop what we have, keep looking
                    buf.i = end
                pos = max(buf.i, buf.j - 1)
                shift = buf.i
                yield from buf.fill(what)
                pos -= shift - buf.i
            if status is None:
                status = decode(ln or b"").split(" ", 2)
                if len(status) < 2 or not status[0].startswith("HTTP/1.") or len(status[1]) != 3 \
                        or not status[1].isdigit():
                    raise _err("ProtocolError", "malformed HTTP status line: %r" % decode((ln or b"")[:80]))
                continue
            if not ln:
                if ln is None:
                    continue  # a header line too long to keep
                break
            name, sep, value = decode(ln).partition(":")
            if not sep or not name or name != name.strip():
                raise _err("ProtocolError", "malformed HTTP header line: %r" % decode(ln[:80]))
            name = name.lower()
            value = value.strip()
            headers[name] = headers[name] + ", " + value if name in headers else value
        code = int(status[1])
        if code < 200 and code != 101:  # 100 Continue and friends: the answer follows
            continue
        return status[0], code, status[2] if len(status) > 2 else "", headers


def _ask(buf, head, body):
    """Send a request on an open connection. The clients then read the response's
    first bytes on their own (buf.fill("response headers"); the asyncio client's
    _first()), and run _exchange or _sunk after: a long poll waits for those bytes all
    the time (Telegram's 30 s) with no frame of this protocol's."""
    buf.clear()
    yield (_W, head)
    if isinstance(body, tuple):  # a body of parts (net/httpbody.py)
        yield from _mod("httpbody").send_parts(buf, body)
    elif body:
        yield (_W, body)
    buf.sent = True


def _response(buf, method, cap):
    """Read the response head (its first bytes in buf: _ask) and set up the body's
    framing in buf. Returns (status, reason, headers, keep_alive)."""
    version, status, reason, headers = yield from _read_head(buf)
    conn = headers.get("connection", "").lower()
    keep = "close" not in conn and (version != "HTTP/1.0" or "keep-alive" in conn)
    te = headers.get("transfer-encoding", "").lower()
    length = headers.get("content-length")
    if method == "HEAD" or status in (101, 204, 304):  # 101: the body is the new protocol's
        length, te = 0, ""
    if te:
        if te != "chunked":
            raise _err("ProtocolError", "unsupported Transfer-Encoding: %s" % te)
        length = None
    elif length is not None:
        try:
            length = int(length)
        except ValueError:
            length = -1
        if length < 0:
            raise _err("ProtocolError", "malformed Content-Length: %r" % headers["content-length"])
        if length > cap:
            raise _err("TooLarge", "HTTP response body of %d bytes is larger than the %d byte limit"
                           % (length, cap))
    else:
        keep = False
    buf.chunked = bool(te)
    buf.left = 0 if te else length
    buf.done = length == 0
    buf.seen = 0
    buf.cap = cap
    return status, reason, headers, keep


def _exchange(buf, method, cap):
    """The whole response to a request sent (_ask). Returns (Response, keep_alive)."""
    status, reason, headers, keep = yield from _response(buf, method, cap)
    sized = not buf.chunked and buf.left is not None
    # Known size: the one allocation of the body. Otherwise pieces, joined once at the
    # end: a body grown in place needs its old and new copy at once, again and again.
    data = bytearray(buf.left) if sized else []
    off = got = 0
    while True:
        k = yield from buf.body(len(buf.b))
        if not k:
            break
        if sized:
            data[off:off + len(k)] = k
            off += len(k)
        else:
            if got >= limits.HTTP_PIECES_COLLECT:  # the reads' garbage out of the way: the
                import gc  # pieces fill small holes and the big block stays whole

                gc.collect()
                got = 0
            data.append(bytes(k))
            got += len(k)
    if not sized:
        data = b"".join(data)
    if buf.i != buf.j and status != 101:  # bytes past the response: out of step (101: the new protocol's)
        keep = False
    return Response(status, reason, headers, data), keep


def _sunk(buf, method, sink):
    """_exchange with the body handed to sink(piece) as it arrives, never kept. A sink
    with a begin(status, headers) method is told the head first."""
    status, reason, headers, keep = yield from _response(buf, method, limits.HTTP_SINK_MAX)
    begin = getattr(sink, "begin", None)
    if begin:
        begin(status, headers)
    while True:
        k = yield from buf.body(len(buf.b))
        if not k:
            break
        sink(k)
    return Response(status, reason, headers, b""), keep and buf.i == buf.j


# ---- configuration shared by both clients ----

def proxy_from_config(cfg):
    """(type, host, port[, user, password]) from the proxy_* settings, or None when no
    proxy is set."""
    host = cfg.get("proxy_host")
    port = cfg.get("proxy_port")
    if not host or not port:
        return None
    p = (cfg.get("proxy_type") or "http", host, int(port))
    user = cfg.get("proxy_user")
    return p + (user, cfg.get("proxy_pass") or "") if user else p


def _clean(s, what):
    s = str(s)
    if "\r" in s or "\n" in s:
        raise ValueError("%s contains a line break" % what)
    return s


class _Base:
    def __init__(self, base_url, ca=None, proxy=None, timeout_s=limits.LLM_TIMEOUT_S, bufsize=limits.HTTP_RECV_BUF):
        scheme, self.host, port, path = net.split_url(base_url)
        if scheme not in ("http", "https"):
            raise ValueError("URL must start with http:// or https://: %r" % base_url)
        self.tls = scheme == "https"
        self.port = (443 if self.tls else 80) if port is None else port
        self.prefix = path.rstrip("/")
        self.ca = ca
        self.proxy = proxy
        if proxy and proxy[0] not in ("http", "socks5"):
            raise ValueError("proxy type must be http or socks5, not %r" % (proxy[0],))
        self.timeout_s = timeout_s
        self.bufsize = bufsize  # the receive buffer, made at the first request
        self.handshakes = 0
        self.connects = 0
        self._buf = None
        self._sock = None
        self._wrapped = False  # _sock is a TLS connection (counted by net/tls.py)

    def _roots(self):
        """Before connecting: the TLS module, its roots loaded (no roots, no connection)."""
        if not self.tls:
            return None
        from mimi.net import tls

        tls.context(self.ca)
        return tls

    def _wrap(self, tls, sock):
        w = tls.wrap(sock, self.host, self.ca)
        self._wrapped = True
        w.setblocking(False)
        self.handshakes += 1
        return w

    def _tunnel(self):
        from mimi.net import proxy

        return proxy.tunnel(self._buf, self.proxy, self.host, self.port)

    def _stray(self, sock):
        """Is anything readable on an idle kept-alive connection (an unsolicited
        response, or the server's close)? Then it is out of step: not to be reused."""
        import select

        p = select.poll()
        p.register(sock, select.POLLIN)
        return bool(p.poll(0))

    def _hop(self):
        return (self.proxy[1], self.proxy[2]) if self.proxy else (self.host, self.port)

    def _build(self, method, path, headers, body):
        if not path.startswith("/") or " " in path:
            raise ValueError("path must start with / and hold no spaces: %r" % path)
        ctype = None
        if body is None or isinstance(body, (bytes, bytearray, memoryview, tuple)):
            data = body
        elif isinstance(body, str):
            data = body.encode()
        else:
            data = json.dumps(body).encode()
            ctype = "application/json"
        host = self.host
        if self.port != (443 if self.tls else 80):
            host = "%s:%d" % (host, self.port)
        lines = ["%s %s%s HTTP/1.1" % (_clean(method, "method"), self.prefix, _clean(path, "path")),
                 "Host: " + host]
        given = set()
        for k, v in (headers or {}).items():
            lines.append("%s: %s" % (_clean(k, "header name"), _clean(v, "header " + k)))
            given.add(k.lower())
        if "user-agent" not in given:
            lines.append("User-Agent: mimiclaw-micropython")
        if "accept-encoding" not in given:
            lines.append("Accept-Encoding: identity")
        if ctype and "content-type" not in given:
            lines.append("Content-Type: " + ctype)
        if (data is not None or method in ("POST", "PUT", "PATCH")) and "content-length" not in given:
            if isinstance(data, tuple):
                n = _mod("httpbody").length(data)
            else:
                n = len(data) if data else 0
            lines.append("Content-Length: %d" % n)
        lines.append("\r\n")
        return "\r\n".join(lines).encode(), data

    def _start(self):
        if self._buf is None:
            self._buf = _Buf(self.bufsize)

    def _failed(self, e, attempt, reused):
        """Close after failure e; True to try once more on a fresh connection (a reused
        keep-alive connection that died before any response byte), else raise
        (net/httperr.py's failed(): loaded with the first error)."""
        return _mod("httperr").failed(self, e, attempt, reused)

    def close(self):
        if self._sock is not None:
            try:
                # an asyncio Stream's close() does nothing (its wait_closed() closes): its socket
                getattr(self._sock, "s", self._sock).close()
            except OSError:
                pass
            self._sock = None
            if self._wrapped:
                from mimi.net import tls

                tls.closed()
                self._wrapped = False


def __getattr__(name):
    # Each client lives in its own module, loaded by its first use: the blocking one
    # (the agent thread's) and the asyncio one (Telegram, Feishu, on the loop).
    if name == "Client":
        from mimi.net.httpsync import Client

        return Client
    if name == "AsyncClient":
        from mimi.net.asynchttp import AsyncClient

        return AsyncClient
    if name in ("HTTPError", "Timeout", "TooLarge", "TLSFailure", "ConnectFailure", "ProtocolError", "_Stale"):
        return getattr(_mod("httperr"), name)  # (the errors: loaded by the first one raised)
    if name in ("Region", "Pieces"):  # (net/httpbody.py: tuple bodies, the LLM request's)
        return getattr(_mod("httpbody"), name)
    raise AttributeError(name)
