# Socket options shared by the HTTP client and the WebSocket gateway.


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
