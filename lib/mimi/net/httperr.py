# The HTTP clients' errors (net/http.py), in a module of their own: loaded when the
# first one is raised or named (`http.Timeout`, `from mimi.net.http import
# ProtocolError`: http's __getattr__), not by a client that never failed. Seven
# classes are ~0.7 KB of a frozen board's heap, held from boot by Telegram's poll.
# Never unloaded: an `except` names the same class as the raise.


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
