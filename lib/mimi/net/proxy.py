# The proxy handshakes of the HTTP client (net/http.py): HTTP CONNECT (with
# Proxy-Authorization: Basic when a user is set) and SOCKS5 (no authentication, or
# username/password, RFC 1929), run on a fresh connection to the proxy, after which
# it reaches the target. A module of its own: it loads only when a proxy is set.
from mimi.net.http import _W, _read_head, ConnectFailure, ProtocolError, TooLarge

_CHECK = " (check proxy_user and proxy_pass)"
_ASK = " (it wants a username and password: set proxy_user and proxy_pass)"


class Refused(ConnectFailure):
    """The proxy said no (407/403, its authentication or rules): asking again cannot
    help, so the caller reports it at once (final)."""
    final = True


def _exact(buf, n, what):
    while buf.j - buf.i < n:
        yield from buf.fill(what)
    return bytes(buf.take(n))


def tunnel(buf, proxy, host, port):
    """Generator (the client's I/O protocol): the handshake with proxy (kind, host, port
    [, user, password]) for host:port."""
    try:
        yield from _handshake(buf, proxy, host, port)
    except (ProtocolError, TooLarge) as e:  # the request never went out
        raise ConnectFailure("proxy failed: %s" % e)


def _handshake(buf, proxy, host, port):
    buf.clear()
    user = proxy[3].encode() if len(proxy) > 3 else b""
    password = proxy[4].encode() if len(proxy) > 4 else b""
    why = _CHECK if user else _ASK
    if proxy[0] == "socks5":
        yield (_W, b"\x05\x02\x00\x02" if user else b"\x05\x01\x00")
        ver, method = yield from _exact(buf, 2, "SOCKS5 greeting")
        if ver != 5:
            raise ProtocolError("not a SOCKS5 proxy (version %d)" % ver)
        if method == 2 and user:  # RFC 1929
            yield (_W, bytes((1, len(user))) + user + bytes((len(password),)) + password)
            if (yield from _exact(buf, 2, "SOCKS5 authentication"))[1] != 0:
                raise Refused("SOCKS5 proxy refused the username and password" + _CHECK)
        elif method != 0:
            raise Refused("SOCKS5 proxy accepts none of our authentication methods" + why)
        name = host.encode()
        yield (_W, b"\x05\x01\x00\x03" + bytes((len(name),)) + name + bytes((port >> 8, port & 255)))
        rep = yield from _exact(buf, 4, "SOCKS5 reply")
        if rep[0] != 5 or rep[1] != 0:
            if rep[1] == 2:  # "not allowed by ruleset"
                raise Refused("SOCKS5 proxy refused the connection to %s:%d (its rules)" % (host, port))
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
        auth = ""
        if user:
            from binascii import b2a_base64

            auth = "Proxy-Authorization: Basic %s\r\n" % b2a_base64(user + b":" + password).decode().strip()
        yield (_W, ("CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (target, target, auth)).encode())
        _, status, reason, _ = yield from _read_head(buf, "proxy reply")
        if status in (403, 407):
            raise Refused("proxy refused CONNECT to %s: %d %s%s"
                          % (target, status, reason, why if status == 407 else ""))
        if status != 200:
            raise ConnectFailure("proxy refused CONNECT to %s: %d %s" % (target, status, reason))
    if buf.i != buf.j:
        raise ProtocolError("proxy sent data before the tunnel was used")
    buf.clear()
