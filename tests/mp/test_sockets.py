# The socket budget (limits.py) against the board's lwIP limit, and what a user
# reads when sockets run out anyway (ENFILE/EMFILE).
import socket

import support
from mimi import limits, net


def test_worst_case_fits_the_boards_sockets():
    online = 1 + limits.WS_MAX_CONN + limits.SOCK_TELEGRAM + limits.SOCK_AGENT + limits.SOCK_UDP
    onboarding = 1 + limits.WS_MAX_CONN + 1 + limits.PORTAL_CLIENTS + 1
    assert online <= limits.LWIP_SOCKETS and onboarding <= limits.LWIP_SOCKETS, (online, onboarding)
    assert limits.WS_MAX_CONN >= limits.WS_MAX_CLIENTS  # SPEC §7: four chat clients fit
    assert limits.PORTAL_CLIENTS >= 2


def test_out_of_sockets_is_explained():
    e = OSError(23)
    text = net.explain(e)
    assert "out of sockets" in text and str(limits.LWIP_SOCKETS) in text
    assert net.explain(OSError(104)) == str(OSError(104))
    # where the HTTP client opens its socket
    from mimi.net import http, httpsync

    class Full:  # the socket module of a board whose sockets are all taken
        SOCK_STREAM = socket.SOCK_STREAM
        getaddrinfo = socket.getaddrinfo

        @staticmethod
        def socket(*a):
            raise OSError(23)

    httpsync.socket = Full
    try:
        e = support.raises(http.ConnectFailure, http.Client("http://127.0.0.1:9").request, "GET", "/")
    finally:
        httpsync.socket = socket
    assert "cannot open a socket for 127.0.0.1:9" in str(e) and "out of sockets" in str(e), e


async def test_the_loop_client_explains_it_too():
    import asyncio
    from mimi.net import http

    real = asyncio.open_connection

    async def full(*a):
        raise OSError(24)

    asyncio.open_connection = full
    try:
        c = http.AsyncClient("http://127.0.0.1:9")
        try:
            await c.request("GET", "/")
            raise AssertionError("no error")
        except http.ConnectFailure as e:
            assert "out of sockets" in str(e), e
    finally:
        asyncio.open_connection = real
