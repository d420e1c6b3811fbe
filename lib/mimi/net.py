# Socket options shared by the HTTP client and the WebSocket gateway.
from mimi import limits


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


def explain(e):
    """An OSError as text; running out of sockets (ENFILE, EMFILE: 23, 24 on lwIP and
    Linux alike) says what that means on the board."""
    if getattr(e, "errno", None) in (23, 24):
        return ("%s: out of sockets (the board has %d for everything; see the socket budget "
                "in limits.py: close a chat tab, or wait for the agent's turn to end)"
                % (e, limits.LWIP_SOCKETS))
    return str(e)
