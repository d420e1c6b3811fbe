# The proxy handshakes of the HTTP client (net/http.py): HTTP CONNECT and SOCKS5 (no
# authentication), run on a fresh connection to the proxy, after which it reaches the
# target. A module of its own: it loads only when a proxy is set.
from mimi.net.http import _W, _read_head, ConnectFailure, ProtocolError, TooLarge


def _exact(buf, n, what):
    while buf.j - buf.i < n:
        yield from buf.fill(what)
    return bytes(buf.take(n))


def tunnel(buf, kind, host, port):
    """Generator (the client's I/O protocol): the proxy handshake for host:port."""
    try:
        yield from _handshake(buf, kind, host, port)
    except (ProtocolError, TooLarge) as e:  # the request never went out
        raise ConnectFailure("proxy failed: %s" % e)


def _handshake(buf, kind, host, port):
    buf.clear()
    if kind == "socks5":
        yield (_W, b"\x05\x01\x00")
        if (yield from _exact(buf, 2, "SOCKS5 greeting")) != b"\x05\x00":
            raise ConnectFailure("SOCKS5 proxy wants authentication (not supported)")
        name = host.encode()
        yield (_W, b"\x05\x01\x00\x03" + bytes((len(name),)) + name + bytes((port >> 8, port & 255)))
        rep = yield from _exact(buf, 4, "SOCKS5 reply")
        if rep[0] != 5 or rep[1] != 0:
            raise ConnectFailure("SOCKS5 proxy could not reach %s:%d (reply code %d)"
                                 % (host, port, rep[1]))
        if rep[3] == 1:
            n = 4
        elif rep[3] == 4:
            n = 16
        else:
            n = (yield from _exact(buf, 1, "SOCKS5 reply"))[0]
        yield from _exact(buf, n + 2, "SOCKS5 reply")
    else:
        target = "%s:%d" % (host, port)
        yield (_W, ("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
        _, status, reason, _ = yield from _read_head(buf, "proxy reply")
        if status != 200:
            raise ConnectFailure("proxy refused CONNECT to %s: %d %s" % (target, status, reason))
    if buf.i != buf.j:
        raise ProtocolError("proxy sent data before the tunnel was used")
    buf.clear()
