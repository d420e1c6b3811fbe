# HTTP/1.1 client of the firmware: verified TLS, keep-alive, chunked bodies, one
# deadline per request, size caps, HTTP CONNECT and SOCKS5 proxies.
# micropython-lib `requests` speaks HTTP/1.0 (0.10.2, the frozen one), forces
# CERT_NONE and opens a connection per request, so LLM and Telegram calls use this.
#
# API: Client(base_url, ca=None, proxy=None, timeout_s) .request(method, path,
# headers=None, body=None, deadline_s=None, sink=None) -> Response(.status .reason
# .headers .body .text .json()) (sink: the body handed to it as it arrives); AsyncClient: the same with `await` (net/asynchttp.py); its
# detach() hands a connection that switched protocols (101) to its new owner
# (net/wsclient.py). .body is the one copy of the body (bytearray; bytes for a chunked one). Client.stream(method, path, ...,
# cap=None, redirects=0) and httpstream.open_url(url, ...): the body read piece by
# piece (httpstream.py). ca: None (the process's shared roots, net/tls.py), a file
# path, or PEM/DER bytes. proxy: ("http"|"socks5", host, port). body: bytes, str, a
# dict/list sent as JSON, or a tuple of parts written one after the other without
# ever being joined (str/bytes/memoryview, nested tuples, and lists whose items are
# written comma-separated: the LLM request, see _flat) and Regions of files read as
# they are sent. Errors: HTTPError > Timeout,
# TooLarge, TLSFailure, ConnectFailure (the request never reached the server: safe
# to resend), ProtocolError.
# Counters: connects (TCP connections), handshakes (TLS handshakes started).
# A kept-alive connection is checked before it is used again: anything readable on
# it (an unsolicited response, the server's close) means it is closed and a new one
# opened, so a stray answer is never taken for the next request's.
#
# The protocol is written once, as generators that yield I/O operations:
#   (_W, data)  write all of data            -> None
#   (_R, mv)    read at most len(mv) into mv -> count, 0 at EOF
# Client runs them on non-blocking sockets with poll (agent thread, blocking);
# AsyncClient (net/asynchttp.py, loaded on first use of http.AsyncClient) runs them on
# asyncio streams (event loop).
import errno
import gc
import json
import select
import socket
import time

from mimi import limits, jsonutil, net
from mimi.fs import decode

_W = 0
_R = 1
_UA = "mimiclaw-micropython"


class HTTPError(Exception):
    pass


class Timeout(HTTPError):
    pass


class TooLarge(HTTPError):
    pass


class TLSFailure(HTTPError):
    pass


class ConnectFailure(HTTPError):
    pass


class ProtocolError(HTTPError):
    pass


class _Stale(ProtocolError):
    """The server closed the connection before sending any byte of the response."""


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
            raise ProtocolError("response is not valid JSON (HTTP %d, %d bytes): %r"
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
                raise TooLarge("%s larger than %d bytes" % (what, len(self.b)))
            n = self.j - self.i
            self.mv[0:n] = self.mv[self.i:self.j]
            self.i, self.j = 0, n
        n = yield (_R, self.mv[self.j:])
        if not n:
            if self.got == 0:
                raise _Stale("connection closed by the server before the response")
            raise ProtocolError("connection closed in the middle of the %s" % what)
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
        decoder: request() reads bodies whole with it, streams piece by piece."""
        if self.chunked and self.left == 0 and not self.done:
            if self.seen and (yield from self.line("chunked body")):
                raise ProtocolError("chunk not followed by CRLF")
            ln = yield from self.line("chunk header")
            try:
                n = int(ln.split(b";", 1)[0].strip(), 16)
                if n < 0:
                    raise ValueError
            except ValueError:
                raise ProtocolError("malformed chunk size line: %r" % ln[:40])
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
                raise ProtocolError("connection closed in the middle of the response body")
            self.done = True
        self.seen += n
        if self.seen > self.cap:
            raise TooLarge("HTTP response body larger than %d bytes" % self.cap)
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
                        raise TooLarge("%s larger than %d bytes" % (what, limits.HTTP_HEADER_MAX))
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
                    raise ProtocolError("malformed HTTP status line: %r" % decode((ln or b"")[:80]))
                continue
            if not ln:
                if ln is None:
                    continue  # a header line too long to keep
                break
            name, sep, value = decode(ln).partition(":")
            if not sep or not name or name != name.strip():
                raise ProtocolError("malformed HTTP header line: %r" % decode(ln[:80]))
            name = name.lower()
            value = value.strip()
            headers[name] = headers[name] + ", " + value if name in headers else value
        code = int(status[1])
        if code < 200 and code != 101:  # 100 Continue and friends: the answer follows
            continue
        return status[0], code, status[2] if len(status) > 2 else "", headers


_SEP = b","


class Region:
    """A body part read from a file as it is sent: bytes [start, start + n) of path
    (stored text that needs no copy in RAM, e.g. session history)."""

    def __init__(self, path, start, n):
        self.path = path
        self.start = start
        self.n = n


def _flat(parts, out=None):
    """A tuple body as the flat list of its pieces, in order: nested tuples are opened,
    the items of a list separated by commas (a JSON array's or object's members). One
    list for the body, not a generator per nested part."""
    if out is None:
        out = []
    for p in parts:
        if isinstance(p, tuple):
            _flat(p, out)
        elif isinstance(p, list):
            for k in range(len(p)):
                if k:
                    out.append(_SEP)
                q = p[k]
                if isinstance(q, tuple):
                    _flat(q, out)
                elif isinstance(q, list):
                    _flat((q,), out)
                else:
                    out.append(q)
        else:
            out.append(p)
    return out


def _length(pieces):
    n = 0
    for p in pieces:
        if isinstance(p, Region):
            n += p.n
        else:
            n += len(memoryview(p)) if isinstance(p, str) else len(p)
    return n


def _send_parts(buf, pieces):
    """Write a flat body: small pieces gathered in the (still unused) receive buffer,
    pieces as big as the buffer written from where they are, Regions read into it."""
    mv = buf.mv
    size = len(mv)
    n = 0
    f = name = None  # the file of the last Region, open until the body is sent
    try:
        for p in pieces:
            if isinstance(p, Region):
                if p.path != name:
                    if f:
                        f.close()
                    f, name = open(p.path, "rb"), p.path
                f.seek(p.start)
                left = p.n
                while left:
                    if n == size:
                        yield (_W, mv)
                        n = 0
                    k = f.readinto(mv[n:n + min(left, size - n)])
                    if not k:
                        raise OSError("%s changed while it was being sent" % name)
                    n += k
                    left -= k
                continue
            if isinstance(p, str):  # (an isinstance with a tuple of types allocates the tuple)
                p = memoryview(p)
            k = len(p)
            if n and n + k > size:
                yield (_W, mv[:n])
                n = 0
            if k >= size:
                yield (_W, p)
            else:
                mv[n:n + k] = p
                n += k
        if n:
            yield (_W, mv[:n])
    finally:
        if f:
            f.close()


def _response(buf, head, body, method, cap):
    """Send a request on an open connection, read the response head and set up the
    body's framing in buf. Returns (status, reason, headers, keep_alive)."""
    buf.clear()
    yield (_W, head)
    if isinstance(body, list):  # a tuple body, flattened by _build
        yield from _send_parts(buf, body)
    elif body:
        yield (_W, body)
    buf.sent = True
    version, status, reason, headers = yield from _read_head(buf)
    conn = headers.get("connection", "").lower()
    keep = "close" not in conn and (version != "HTTP/1.0" or "keep-alive" in conn)
    te = headers.get("transfer-encoding", "").lower()
    length = headers.get("content-length")
    if method == "HEAD" or status in (101, 204, 304):  # 101: the body is the new protocol's
        length, te = 0, ""
    if te:
        if te != "chunked":
            raise ProtocolError("unsupported Transfer-Encoding: %s" % te)
        length = None
    elif length is not None:
        try:
            length = int(length)
        except ValueError:
            length = -1
        if length < 0:
            raise ProtocolError("malformed Content-Length: %r" % headers["content-length"])
        if length > cap:
            raise TooLarge("HTTP response body of %d bytes is larger than the %d byte limit"
                           % (length, cap))
    else:
        keep = False
    buf.chunked = bool(te)
    buf.left = 0 if te else length
    buf.done = length == 0
    buf.seen = 0
    buf.cap = cap
    return status, reason, headers, keep


def _exchange(buf, head, body, method, cap):
    """One whole request/response on an open connection. Returns (Response, keep_alive)."""
    status, reason, headers, keep = yield from _response(buf, head, body, method, cap)
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
                gc.collect()  # pieces fill small holes and the big block stays whole
                got = 0
            data.append(bytes(k))
            got += len(k)
    if not sized:
        data = b"".join(data)
    if buf.i != buf.j and status != 101:  # bytes past the response: out of step (101: the new protocol's)
        keep = False
    return Response(status, reason, headers, data), keep


def _sunk(buf, head, body, method, sink):
    """_exchange with the body handed to sink(piece) as it arrives, never kept. A sink
    with a begin(status, headers) method is told the head first."""
    status, reason, headers, keep = yield from _response(buf, head, body, method, limits.HTTP_SINK_MAX)
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
    def __init__(self, base_url, ca=None, proxy=None, timeout_s=limits.LLM_TIMEOUT_S):
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
        p = select.poll()
        p.register(sock, select.POLLIN)
        return bool(p.poll(0))

    def _hop(self):
        return (self.proxy[1], self.proxy[2]) if self.proxy else (self.host, self.port)

    def _build(self, method, path, headers, body):
        if not path.startswith("/") or " " in path:
            raise ValueError("path must start with / and hold no spaces: %r" % path)
        ctype = None
        if body is None or isinstance(body, (bytes, bytearray, memoryview)):
            data = body
        elif isinstance(body, tuple):
            data = _flat(body)
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
            lines.append("User-Agent: " + _UA)
        if "accept-encoding" not in given:
            lines.append("Accept-Encoding: identity")
        if ctype and "content-type" not in given:
            lines.append("Content-Type: " + ctype)
        if (data is not None or method in ("POST", "PUT", "PATCH")) and "content-length" not in given:
            n = _length(data) if isinstance(data, list) else len(data) if data else 0
            lines.append("Content-Length: %d" % n)
        lines.append("\r\n")
        return "\r\n".join(lines).encode(), data

    def _fail(self, e):
        """The HTTPError to raise for exception e (connection already closed)."""
        if isinstance(e, HTTPError):
            return e
        where = "%s:%d" % (self.host, self.port)
        if isinstance(e, ValueError) and self.tls:
            return TLSFailure("TLS to %s failed: %s" % (where, str(e).strip()))
        if isinstance(e, OSError):
            code = e.args[0] if e.args else 0
            if isinstance(code, int) and code < 0:  # an mbedTLS error code
                name = e.args[1] if len(e.args) > 1 else ""
                return TLSFailure("TLS to %s failed: mbedTLS error -0x%04x %s" % (where, -code, name))
            if self._buf.sent:  # ConnectFailure promises the server never saw the request
                return ProtocolError("connection to %s lost after the request was sent: %s"
                                     % (where, e))
            return ConnectFailure("connection to %s failed: %s" % (where, e))
        return e

    def _start(self):
        if self._buf is None:
            self._buf = _Buf(limits.HTTP_RECV_BUF)

    def _failed(self, e, attempt, reused):
        """Close after failure e; True to try once more on a fresh connection (a reused
        keep-alive connection that died before any response byte), else raise."""
        self.close()
        if attempt == 0 and reused and self._buf.got == 0 and isinstance(e, (_Stale, OSError)):
            return True
        raise self._fail(e)

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


# ---- blocking client (agent thread) ----

class Client(_Base):
    _busy = None  # the Stream whose body is still on the connection

    def request(self, method, path, headers=None, body=None, deadline_s=None, sink=None):
        """sink: as AsyncClient.request's (a streamed LLM answer)."""
        deadline = self._begin(deadline_s)
        if sink is not None:
            return self._send(method, path, headers, body, deadline, _sunk, sink)[0]
        return self._send(method, path, headers, body, deadline, _exchange,
                          limits.HTTP_RESPONSE_MAX)[0]

    def stream(self, *args, **kw):
        """httpstream.stream(self, method, path, headers=None, body=None, deadline_s=None,
        cap=None, redirects=0, idle_s=None): the response with its body still to read."""
        from mimi.net import httpstream  # not loaded by the LLM path

        return httpstream.stream(self, *args, **kw)

    def _begin(self, deadline_s):
        self._start()
        if self._busy is not None:
            self._busy.close()  # an unfinished stream: its connection goes
        self._secs = self.timeout_s if deadline_s is None else deadline_s
        return time.ticks_add(time.ticks_ms(), int(self._secs * 1000))

    def _send(self, method, path, headers, body, deadline, proto, cap):
        head, data = self._build(method, path, headers, body)
        for attempt in (0, 1):
            if self._sock is not None and self._stray(self._sock):
                self.close()
            reused = self._sock is not None
            try:
                if not reused:
                    self._open(deadline)
                res = self._run(proto(self._buf, head, data, method, cap), deadline)
            except Exception as e:  # noqa: B902 - any failure leaves the socket unusable
                if self._failed(e, attempt, reused):
                    continue
            if proto is not _response and not res[1]:  # (_response: a stream, still reading)
                self.close()
            return res

    def _open(self, deadline):
        tls = self._roots()
        host, port = self._hop()
        try:
            ai = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)[0]
        except OSError as e:
            raise ConnectFailure("cannot resolve %s: %s" % (host, e))
        try:
            s = socket.socket(ai[0], socket.SOCK_STREAM)
        except OSError as e:
            raise ConnectFailure("cannot open a socket for %s:%d: %s" % (host, port, net.explain(e)))
        self._sock = s
        net.nodelay(s)
        s.setblocking(False)
        try:
            s.connect(ai[-1])
        except OSError as e:
            if e.args[0] != errno.EINPROGRESS:
                raise ConnectFailure("cannot connect to %s:%d: %s" % (host, port, net.explain(e)))
        if self._wait(select.POLLOUT, deadline) & (select.POLLERR | select.POLLHUP):
            raise ConnectFailure("cannot connect to %s:%d (refused or unreachable)" % (host, port))
        self.connects += 1
        if self.proxy:
            self._run(self._tunnel(), deadline)
        if tls:
            self._sock = self._wrap(tls, s)

    def _wait(self, mask, deadline):
        left = time.ticks_diff(deadline, time.ticks_ms())
        if left > 0:
            p = select.poll()
            p.register(self._sock, mask)
            ev = p.poll(left)
            if ev:
                return ev[0][1]
        raise Timeout("no answer from %s:%d within %s s" % (self.host, self.port, self._secs))

    def _run(self, gen, deadline):
        s = self._sock
        res = None
        while True:
            try:
                op, arg = gen.send(res)
            except StopIteration as e:
                return e.value
            res = None
            if op == _W:
                mv = memoryview(arg)
                off = 0
                while off < len(mv):
                    n = s.write(mv[off:])
                    if n is None:
                        self._wait(select.POLLOUT, deadline)
                    else:
                        off += n
            else:
                while res is None:
                    res = s.readinto(arg)
                    if res is None:
                        self._wait(select.POLLIN, deadline)


def __getattr__(name):
    # The asyncio client (Telegram, on the loop) lives in its own module: the agent's
    # blocking path never loads it.
    if name == "AsyncClient":
        from mimi.net.asynchttp import AsyncClient

        return AsyncClient
    raise AttributeError(name)
