# Streamed responses of the blocking http.Client: the head parsed, the body read
# piece by piece through http's one body decoder (Content-Length, chunked, until
# EOF) within the request's deadline, redirects followed on request. For bodies
# that must not sit in RAM whole: OTA bundles and firmware images (to flash).
# A module of its own so the LLM path, which never streams, doesn't load it.
#
#   with client.stream("GET", "/x", redirects=3) as r:   # or open_url(url, ...)
#       r.status, r.headers, r.length (None: unknown)
#       n = r.readinto(buf)   # 0 at the end;  r.read(n) -> bytes, b"" at the end
#
# Closing a stream before its body ended drops the connection (the rest of the body
# would still be on it); a fully read one leaves it for keep-alive.
import time

from mimi import limits, net
from mimi.net import http

_REDIRECTS = (301, 302, 303, 307, 308)


def _soon(deadline, idle_ms):
    """The deadline of the next wait: the request's, or sooner with idle_ms."""
    if idle_ms:
        t = time.ticks_add(time.ticks_ms(), idle_ms)
        if time.ticks_diff(t, deadline) < 0:
            return t
    return deadline


class Stream:
    def __init__(self, client, res, deadline, own, idle_ms):
        self.status, self.reason, self.headers, self._keep = res
        b = self._buf = client._buf  # the client's buffer holds the body's framing
        self.length = None if b.chunked else b.left  # None: chunked or until EOF
        self._c = client
        self._deadline = deadline
        self._idle = idle_ms
        self._own = own  # a client made for a redirect or by open_url: closed with us
        client._busy = self

    @property
    def done(self):
        return self._buf is None or self._buf.done

    def readinto(self, buf):
        """Up to len(buf) body bytes into buf; how many, 0 at the end of the body."""
        if self.done or not len(buf):
            return 0
        k = self._run(self._buf.body(len(buf)))
        buf[0:len(k)] = k
        return len(k)

    def read(self, n=-1):
        """Up to n body bytes (all that is left when n < 0); b"" at the end."""
        if self.done or n == 0:
            return b""
        if n > 0:
            return bytes(self._run(self._buf.body(n)))
        out = bytearray()
        while True:
            k = self._run(self._buf.body(len(self._buf.b)))
            if not k:
                return out
            out.extend(k)

    def _run(self, gen):
        try:
            return self._c._run(gen, _soon(self._deadline, self._idle))
        except Exception as e:  # noqa: B902 - the connection is out of step
            self._drop()
            raise self._c._fail(e)

    def _drop(self):
        self._buf = None
        self._c._busy = None
        self._c.close()

    def close(self):
        b = self._buf
        if b is None:
            return
        if self._own or not (b.done and self._keep and b.i == b.j):
            self._drop()
        self._buf = None
        self._c._busy = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<Stream %d %s>" % (self.status, self.reason)


def stream(client, method, path, headers=None, body=None, deadline_s=None, cap=None,
           redirects=0, idle_s=None):
    """http.Client.stream(): like request(), but returns a Stream once the head is in;
    its body is read within the same deadline. cap: body limit (None: none).
    redirects: how many 301/302/303/307/308 to follow (0: none). idle_s: also fail
    when one wait (connect, handshake, head, a read) lasts this long."""
    deadline = client._begin(deadline_s)
    idle_ms = int(idle_s * 1000) if idle_s else 0
    if cap is None:
        cap = 0x3FFFFFFF
    c = client
    for hop in range(redirects + 1):
        try:
            res = c._send(method, path, headers, body, _soon(deadline, idle_ms), http._response, cap)
        except BaseException:
            if c is not client:
                c.close()
            raise
        st = Stream(c, res, deadline, c is not client, idle_ms)
        loc = st.headers.get("location")
        if not redirects or st.status not in _REDIRECTS or not loc:
            return st
        st.close()
        if hop == redirects:
            raise http.ProtocolError("more than %d redirects" % redirects)
        origin, path = _origin_path(_resolve(loc, c, path))
        c = http.Client(origin, client.ca, client.proxy, client.timeout_s)
        if (c.tls, c.host, c.port) == (client.tls, client.host, client.port) and not client.prefix:
            c = client  # same origin: keep-alive
        else:
            c._start()
            c._secs = client._secs
        if st.status == 303 or (st.status in (301, 302) and method == "POST"):
            method, body = "GET", None


def _origin_path(url):
    """'https://h:1/a?b' -> ('https://h:1', '/a?b')"""
    path = net.split_url(url)[3]
    return url[:len(url) - len(path)], path or "/"


def _resolve(loc, c, path):
    """The absolute URL of Location `loc` answered to `path` on client c."""
    if "://" in loc:
        return loc
    scheme = "https" if c.tls else "http"
    if loc.startswith("//"):
        return scheme + ":" + loc
    if not loc.startswith("/"):
        path = c.prefix + path.partition("?")[0]
        loc = path[:path.rfind("/") + 1] + loc
    return "%s://%s:%d%s" % (scheme, c.host, c.port, loc)


def open_url(url, headers=None, ca=None, proxy=None, timeout_s=limits.LLM_TIMEOUT_S,
             redirects=limits.HTTP_REDIRECTS, cap=None, method="GET", idle_s=None):
    """One request to a full URL, redirects followed: a Stream that closes its own
    connection. timeout_s bounds the whole request, body included."""
    origin, path = _origin_path(url)
    c = http.Client(origin, ca, proxy, timeout_s)
    try:
        st = c.stream(method, path, headers, cap=cap, redirects=redirects, idle_s=idle_s)
    except BaseException:
        c.close()
        raise
    if st._c is c:
        st._own = True
    else:
        c.close()
    return st
