# The network parts shared by the HTTP client (net/http.py and its transports),
# the servers (net/httpserver.py: gateway and portal) and the channels, plus the
# small helpers several modules need once each: socket options, URL splitting,
# secret comparison, HTML escaping and random ids. Only built-in modules are
# imported (config validates URLs with split_url at boot), and at the top: an
# `import os` inside a function looks on the filesystem every time it runs (os,
# binascii, time, json... can be overridden by files), racing the other thread.
import os
import binascii


def nodelay(sock):
    """Turn off Nagle: a request head and body (or a status frame and a reply) go out
    in separate writes, and with Nagle the second waits for the peer's delayed ACK
    (~40 ms on Linux) every time. IPPROTO_TCP 6 / TCP_NODELAY 1 are the same on lwIP
    and Linux (the unix port's socket module lacks the names); a port that refuses
    the option just keeps Nagle."""
    try:
        sock.setsockopt(6, 1, 1)
    except (OSError, AttributeError):
        pass


def split_url(url):
    """'https://h:8443/a?b' -> ('https', 'h', 8443, '/a?b'); port None when the URL
    names none, path '' when it has none (so the origin is url[:len(url) - len(path)]).
    ValueError without a scheme or a host, or with a port that is not a number."""
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme:
        raise ValueError("not a URL (no scheme://): %r" % url)
    hostport, slash, path = rest.partition("/")
    host, port = hostport, None
    if ":" in hostport:
        host, _, p = hostport.rpartition(":")
        if not p.isdigit():
            raise ValueError("bad port in URL %r" % url)
        port = int(p)
    if not host:
        raise ValueError("URL has no host: %r" % url)
    return scheme, host, port, slash + path


def secrets_equal(a, b):
    """Compare secrets (str or bytes) in time independent of where they differ."""
    a = a.encode() if isinstance(a, str) else a
    b = b.encode() if isinstance(b, str) else b
    if len(a) != len(b):
        return False
    r = 0
    for x, y in zip(a, b):
        r |= x ^ y
    return r == 0


def html_escape(s, quote=True):
    """Text for HTML: & < > always; with quote also " and ' (attribute values). A str
    with nothing to escape comes back as it is (str(s) would copy it: MicroPython)."""
    if not isinstance(s, str):
        s = str(s)
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if quote:
        s = s.replace('"', "&quot;").replace("'", "&#39;")
    return s


def random_id(nbytes):
    """nbytes random bytes as lower-case hex: job ids, chat ids, tokens."""
    return binascii.hexlify(os.urandom(nbytes)).decode()


def explain(e):
    """An OSError as text; running out of sockets (ENFILE, EMFILE: 23, 24 on lwIP and
    Linux alike) says what that means on the board."""
    if getattr(e, "errno", None) in (23, 24):
        from mimi import limits

        return ("%s: out of sockets (the board has %d for everything; see the socket budget "
                "in limits.py: close a chat tab, or wait for the agent's turn to end)"
                % (e, limits.LWIP_SOCKETS))
    return str(e)
