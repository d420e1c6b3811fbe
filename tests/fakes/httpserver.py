"""Scriptable loopback HTTP/1.1 server (plain or TLS) and CONNECT / SOCKS5 proxies.

CPython, threads, 127.0.0.1 and ephemeral ports only. Base for the fake Anthropic,
OpenAI and Telegram servers:

    srv = Server(tls=ca_files)            # ca_files: tests.fakes.tlsca.make() dict, or None
    srv.route("POST", "/v1/messages", lambda req: Reply(200, body={"id": "x"}))
    srv.route("GET", "/bot*", handler)    # trailing * = path prefix
    srv.start(); srv.url -> "https://localhost:PORT"; ...; srv.stop()

A handler gets a Request (.method .path .query .target .headers lower-case .body
bytes .json()) and returns a Reply, or a dict/list (JSON 200), str or bytes (200).
Counters: srv.connections, srv.handshakes (successful TLS), srv.requests (list).
srv.stats() is a JSON-able summary; Server.stats_route(servers) makes a handler
that reports the stats of several servers (for MicroPython tests that can't see
Python objects).
"""
import json
import select
import socket
import socketserver
import ssl
import threading
import time
from urllib.parse import parse_qs, urlsplit


class Request:
    def __init__(self, method, target, headers, body):
        self.method = method
        self.target = target
        parts = urlsplit(target)
        self.path = parts.path
        self.query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body or b"null")


class Reply:
    """What a handler answers.

    body: bytes, str, or anything JSON-able (then Content-Type: application/json).
    chunked: send with Transfer-Encoding: chunked, split into `chunks` pieces.
    delay: seconds to wait before answering (deadline tests).
    trickle: seconds between body bytes (a server that is never silent for long,
    but slower than the whole-request deadline).
    close: send Connection: close and close. drop: close after the reply without
    saying so (a keep-alive connection the server times out).
    raw: bytes sent verbatim instead of a response (malformed-response tests).
    extra: bytes sent on the same connection 0.2 s after the reply (an unsolicited
    second response on a kept-alive connection).
    stream: (seconds to wait, bytes) pairs sent as chunks, each after its wait (a
    server-sent event stream); body is then ignored.
    """

    def __init__(self, status=200, body=b"", headers=None, chunked=False, chunks=3,
                 delay=0, close=False, drop=False, raw=None, reason=None, trickle=0, extra=None,
                 stream=None):
        self.status = status
        self.reason = reason
        if isinstance(body, str):
            body = body.encode()
        elif not isinstance(body, (bytes, bytearray)):
            body = json.dumps(body).encode()
            headers = dict(headers or {})
            headers.setdefault("Content-Type", "application/json")
        self.body = bytes(body)
        self.headers = dict(headers or {})
        self.chunked = chunked
        self.chunks = chunks
        self.delay = delay
        self.trickle = trickle
        self.close = close
        self.drop = drop
        self.raw = raw
        self.extra = extra
        self.stream = stream


_REASONS = {200: "OK", 204: "No Content", 400: "Bad Request", 401: "Unauthorized",
            403: "Forbidden", 404: "Not Found", 429: "Too Many Requests",
            500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}


def _as_reply(r):
    if isinstance(r, Reply):
        return r
    if isinstance(r, tuple):
        return Reply(*r)
    return Reply(200, r)


def _read_head(f):
    """Request/response head from a binary file: (first line, headers) or None at EOF."""
    line = f.readline(65536)
    if not line:
        return None
    first = line.decode("latin-1").rstrip("\r\n")
    headers = {}
    while True:
        line = f.readline(65536)
        if not line or line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    return first, headers


def _read_body(f, headers):
    if headers.get("transfer-encoding", "").lower() == "chunked":
        out = b""
        while True:
            n = int(f.readline().split(b";")[0].strip(), 16)
            if n == 0:
                while f.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return out
            out += f.read(n)
            f.readline()
    return f.read(int(headers.get("content-length", 0) or 0))


class _TCPServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class _Base:
    """A threaded loopback TCP server whose connections are handled by self.serve(sock)."""

    def __init__(self):
        owner = self
        self.connections = 0
        self._lock = threading.Lock()
        self._socks = set()

        class H(socketserver.BaseRequestHandler):
            def handle(self):
                # the head and the body go out in separate sendall() calls: without
                # this, the body waits for the client's delayed ACK (40 ms on Linux)
                self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                with owner._lock:
                    owner.connections += 1
                    owner._socks.add(self.request)
                try:
                    owner.serve(self.request)
                except (OSError, ValueError):
                    pass
                finally:
                    with owner._lock:
                        owner._socks.discard(self.request)

        self._srv = _TCPServer(("127.0.0.1", 0), H, bind_and_activate=True)
        self.port = self._srv.server_address[1]
        self._thread = None

    def start(self):
        self._thread = threading.Thread(target=self._srv.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._srv.shutdown()
        self._srv.server_close()
        with self._lock:
            socks = list(self._socks)
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class Server(_Base):
    def __init__(self, tls=None, hostname="localhost"):
        """tls: dict with "cert" and "key" PEM paths (tlsca.make()), or None for plain HTTP."""
        super().__init__()
        self.handshakes = 0
        self.sni = []  # server names the clients sent in their TLS hello (None: none)
        self.requests = []
        self._routes = []
        self._ctx = None
        if tls:
            self._ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self._ctx.load_cert_chain(tls["cert"], tls["key"])
            self._ctx.sni_callback = self._on_sni
        scheme = "https" if tls else "http"
        self.url = "%s://%s:%d" % (scheme, hostname, self.port)

    def route(self, method, path, handler):
        """handler(Request) -> Reply | dict | list | str | bytes; path may end with *."""
        self._routes.insert(0, (method, path, handler))

    def _on_sni(self, sslsock, name, ctx):
        with self._lock:
            self.sni.append(name)

    def stats(self):
        return {"connections": self.connections, "handshakes": self.handshakes,
                "requests": len(self.requests), "sni": list(self.sni)}

    @staticmethod
    def stats_route(servers):
        """A handler answering {name: server.stats()} for a dict of servers/proxies."""
        return lambda req: {name: s.stats() for name, s in servers.items()}

    def _handler(self, method, path):
        for m, p, h in self._routes:
            if m in (method, "*") and (p == path or (p.endswith("*") and path.startswith(p[:-1]))):
                return h
        return lambda req: Reply(404, {"error": "no route for %s %s" % (method, path)})

    def serve(self, sock):
        if self._ctx:
            sock = self._ctx.wrap_socket(sock, server_side=True)  # raises if the client refuses us
            with self._lock:
                self.handshakes += 1
        f = sock.makefile("rb")
        try:
            while True:
                head = _read_head(f)
                if head is None:
                    return
                first, headers = head
                method, target, _ = first.split(" ", 2)
                req = Request(method, target, headers, _read_body(f, headers))
                with self._lock:
                    self.requests.append(req)
                reply = _as_reply(self._handler(method, req.path)(req))
                if not self._send(sock, reply, req):
                    return
        finally:
            f.close()
            sock.close()

    def _send(self, sock, r, req):
        """Write the reply; False when the connection is to be closed."""
        if r.delay:
            time.sleep(r.delay)
        if r.raw is not None:
            sock.sendall(r.raw)
            return False
        lines = ["HTTP/1.1 %d %s" % (r.status, r.reason or _REASONS.get(r.status, "Status"))]
        headers = dict(r.headers)
        if r.chunked or r.stream is not None:
            headers["Transfer-Encoding"] = "chunked"
        else:
            headers.setdefault("Content-Length", str(len(r.body)))
        if r.close or req.headers.get("connection", "").lower() == "close":
            headers["Connection"] = "close"
        lines += ["%s: %s" % kv for kv in headers.items()]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        if r.stream is not None:
            for wait, piece in r.stream:
                if wait:
                    time.sleep(wait)
                sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
            sock.sendall(b"0\r\n\r\n")
        elif r.chunked:
            size = max(1, -(-len(r.body) // max(1, r.chunks)))
            for i in range(0, len(r.body), size):
                piece = r.body[i:i + size]
                sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
            sock.sendall(b"0\r\n\r\n")
        elif r.trickle:
            for i in range(len(r.body)):
                time.sleep(r.trickle)
                sock.sendall(r.body[i:i + 1])
        elif req.method != "HEAD":
            sock.sendall(r.body)
        if r.extra:
            time.sleep(0.2)
            sock.sendall(r.extra)
        return "Connection" not in headers and not r.drop


class Silent(_Base):
    """Accepts connections, reads whatever comes and never answers (stalled TLS handshake)."""

    def serve(self, sock):
        while sock.recv(4096):
            pass

    def stats(self):
        return {"connections": self.connections}


def _pump(a, b):
    """Copy bytes both ways until one side closes."""
    socks = [a, b]
    while True:
        ready, _, _ = select.select(socks, [], [], 30)
        if not ready:
            return
        for s in ready:
            data = s.recv(65536)
            if not data:
                return
            (b if s is a else a).sendall(data)


class _Proxy(_Base):
    def __init__(self):
        super().__init__()
        self.tunnels = 0
        self.targets = []
        self.refuse = False

    def stats(self):
        return {"connections": self.connections, "tunnels": self.tunnels,
                "targets": ["%s:%d" % t for t in self.targets]}

    def _open(self, host, port):
        with self._lock:
            self.targets.append((host, port))
        if self.refuse:
            return None
        try:
            up = socket.create_connection((host, port), timeout=10)
        except OSError:
            return None
        up.settimeout(None)
        with self._lock:
            self.tunnels += 1
        return up


class ConnectProxy(_Proxy):
    """HTTP CONNECT proxy (no auth). Answers 502 when the target is unreachable or
    .refuse is True."""

    def serve(self, sock):
        f = sock.makefile("rb")
        head = _read_head(f)
        if head is None:
            return
        method, target, _ = head[0].split(" ", 2)
        host, _, port = target.rpartition(":")
        if method != "CONNECT":
            sock.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            return
        up = self._open(host, int(port))
        if up is None:
            sock.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        sock.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        with up:
            _pump(sock, up)


class Socks5Proxy(_Proxy):
    """SOCKS5 proxy: no authentication, CONNECT by domain name or IPv4."""

    def serve(self, sock):
        def exact(n):
            data = b""
            while len(data) < n:
                more = sock.recv(n - len(data))
                if not more:
                    raise OSError("client went away")
                data += more
            return data

        ver, n = exact(2)
        exact(n)
        sock.sendall(b"\x05\x00")
        ver, cmd, _, atyp = exact(4)
        if atyp == 3:
            host = exact(exact(1)[0]).decode()
        elif atyp == 1:
            host = socket.inet_ntoa(exact(4))
        else:
            sock.sendall(b"\x05\x08\x00\x01\x00\x00\x00\x00\x00\x00")
            return
        port = int.from_bytes(exact(2), "big")
        up = self._open(host, port) if cmd == 1 else None
        if up is None:  # 5: connection refused
            sock.sendall(b"\x05\x05\x00\x01\x00\x00\x00\x00\x00\x00")
            return
        sock.sendall(b"\x05\x00\x00\x01\x7f\x00\x00\x01" + up.getsockname()[1].to_bytes(2, "big"))
        with up:
            _pump(sock, up)


MEGA = bytes(range(256)) * 4096  # 1 MiB for the streaming tests


def client_test_routes(srv, big):
    """The routes tests/mp/test_http.py uses (big: a body size over the client's cap)."""
    srv.route("GET", "/hello", lambda req: Reply(200, "hello"))
    srv.route("GET", "/chunked", lambda req: Reply(200, "0123456789" * 300, chunked=True, chunks=7))
    srv.route("GET", "/slow", lambda req: Reply(200, "late", delay=5))
    srv.route("GET", "/trickle", lambda req: Reply(200, "x" * 40, trickle=0.1))
    srv.route("GET", "/big", lambda req: Reply(200, b"x" * big))
    srv.route("GET", "/bigchunked", lambda req: Reply(200, b"x" * big, chunked=True, chunks=40))
    srv.route("GET", "/drop", lambda req: Reply(200, "bye", drop=True))
    srv.route("GET", "/twice", lambda req: Reply(200, "first", extra=b"HTTP/1.1 200 OK\r\n"
                                                 b"Content-Length: 5\r\n\r\nstray"))
    srv.route("GET", "/close", lambda req: Reply(200, "closing", close=True))
    srv.route("GET", "/garbage", lambda req: Reply(raw=b"SPAM SPAM SPAM\r\n\r\n"))
    srv.route("GET", "/hangup", lambda req: Reply(raw=b""))
    srv.route("GET", "/bighead", lambda req: Reply(200, "x", {"X-Big": "a" * 9000}))
    srv.route("GET", "/badjson", lambda req: Reply(200, "{not json", {"Content-Type": "application/json"}))
    srv.route("GET", "/chunked96k", lambda req: Reply(200, b"y" * 96 * 1024, chunked=True, chunks=96))
    srv.route("GET", "/mega", lambda req: Reply(200, MEGA))
    srv.route("GET", "/megachunked", lambda req: Reply(200, MEGA, chunked=True, chunks=300))
    srv.route("*", "/redirect", lambda req: Reply(int(req.query.get("code", 302)), "moved",
                                                  {"Location": req.query["to"]}))
    srv.route("GET", "/loop", lambda req: Reply(302, b"", {"Location": "/loop"}))
    srv.route("*", "/echo", lambda req: {"method": req.method, "path": req.target,
                                         "headers": req.headers, "body": req.body.decode()})
