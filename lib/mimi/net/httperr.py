# The HTTP clients' errors (net/http.py), in a module of their own: loaded when the
# first one is raised or named (`http.Timeout`, `from mimi.net.http import
# ProtocolError`: http's __getattr__), not by a client that never failed. Seven
# classes are ~0.7 KB of a frozen board's heap, held from boot by Telegram's poll.
# Never unloaded: an `except` names the same class as the raise. The clients' failure
# handling (failed()) is here too: it runs with the first error.


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


def failed(client, e, attempt, reused):
    """A client's request failed with e: the connection closed; True to try once more
    on a fresh one (a reused keep-alive connection that died before any response
    byte), else the HTTPError for e raised."""
    client.close()
    if attempt == 0 and reused and client._buf.got == 0 and isinstance(e, (_Stale, OSError)):
        return True
    raise _error(client, e)


def _error(client, e):
    """The HTTPError to raise for exception e (connection already closed)."""
    if isinstance(e, HTTPError):
        return e
    where = "%s:%d" % (client.host, client.port)
    if isinstance(e, ValueError) and client.tls:
        return TLSFailure("TLS to %s failed: %s" % (where, str(e).strip()))
    if isinstance(e, OSError):
        code = e.args[0] if e.args else 0
        if isinstance(code, int) and code < 0:  # an mbedTLS error code
            name = e.args[1] if len(e.args) > 1 else ""
            return TLSFailure("TLS to %s failed: mbedTLS error -0x%04x %s" % (where, -code, name))
        if client._buf.sent:  # ConnectFailure promises the server never saw the request
            return ProtocolError("connection to %s lost after the request was sent: %s" % (where, e))
        if client.proxy:  # the connection is the proxy's
            where = "the proxy %s:%d" % client._hop()
        return ConnectFailure("connection to %s failed: %s" % (where, e))
    return e
