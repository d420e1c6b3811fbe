# The HTTP part of a connection to the WebSocket gateway (connection.py loads it for a
# connection's first moments and drops it once no connection is before its upgrade):
# the admission (a connection cap where sockets not upgraded yet are shed: at most
# WS_PEER_PENDING per address, from the address holding the most, never one sending
# its request; an upgrade deadline), the upgrade itself, the token with a per-address
# back-off after wrong ones (shared by every other address once WS_AUTH_PEERS have
# one), the browser Origin check (a web page the user visits must not drive the
# board) and the chat page on a plain GET.
import time
import asyncio
import mimi
from mimi import limits, log, board, channels
from mimi.config import settings as config
from mimi.net import httpserver as hs
from mimi.net import wshandshake as wh
from mimi.channels.websocket import gateway as gw
from mimi.channels.websocket.gateway import _conns, _fails
from micropython import const

_SHARED = const("*")  # _fails key of the back-off shared by addresses without their own


async def run(rd, w, me):
    """Connection `me` ([address, task, upgraded, Reader], in _conns) admitted and
    upgraded within the deadline -> True; else what went wrong answered -> False."""
    me[0] = hs.peer(w)
    if not _admit(me):
        log.warning("ws", "too many connections (at most %d, %d from one address: the socket budget "
                    "in limits.py); one refused", limits.WS_MAX_CONN, limits.WS_PEER_CONN)
        await _respond(w, "503 Service Unavailable", "too many connections to the board; "
                       "close a chat tab or try again later\n", extra=("Retry-After: 10",))
        return False
    try:
        return await asyncio.wait_for(_handshake(rd, w, me), limits.WS_HANDSHAKE_TIMEOUT_S)
    except asyncio.TimeoutError:  # silent past the deadline: goes first among equals next time
        hs.remember(gw._shed_lately, me[0])
        raise


def own_hosts():
    hosts = set()
    try:
        hosts.add(board.wlan().ifconfig()[0])
    except Exception:
        pass
    if board.BIND_ADDR != "0.0.0.0":
        hosts.add(board.BIND_ADDR)
    if board.NAME == "host":
        hosts.add("localhost")
    return hosts


async def _respond(w, status, body, ctype="text/plain; charset=utf-8", extra=()):
    w.write(hs.http_response(status, body, ctype, extra))
    await asyncio.wait_for(w.drain(), limits.WS_WRITE_TIMEOUT_S)


async def _handshake(rd, w, me):
    """The HTTP part (within the upgrade deadline). -> True when upgraded, else None."""
    try:
        method, path, query, headers = hs.parse_request(await hs.read_head(rd, limits.WS_HEADER_MAX))
    except ValueError as e:
        await _respond(w, "400 Bad Request", "%s\n" % e)
        return None
    if method != "GET":
        await _respond(w, "405 Method Not Allowed", "GET only\n", extra=("Allow: GET",))
        return None
    if path != "/":
        await _respond(w, "404 Not Found", "not found\n")
        return None
    if not hs.has_token(headers.get("upgrade"), "websocket"):
        page = channels.load("websocket.chatpage")
        page, csp = page.PAGE, page.CSP
        mimi.drop("channels.websocket.chatpage")  # its 3 KB are loaded for each page view, not kept
        await _respond(w, "200 OK", page, "text/html; charset=utf-8", (
            "Content-Security-Policy: " + csp, "X-Frame-Options: DENY",
            "Referrer-Policy: no-referrer", "X-Content-Type-Options: nosniff"))
        return None
    key = headers.get("sec-websocket-key", "")
    if not hs.has_token(headers.get("connection"), "upgrade") or not wh.key_ok(key):
        await _respond(w, "400 Bad Request", "bad WebSocket upgrade\n")
        return None
    if headers.get("sec-websocket-version") != "13":
        await _respond(w, "426 Upgrade Required", "WebSocket version 13 only\n",
                       extra=("Sec-WebSocket-Version: 13",))
        return None
    expected = config.cfg.get("ws_token")
    token_ok = False
    if expected:
        peer = me[0]
        wait = _backoff(peer)
        if wait:  # not even looked at: guessing goes no faster than the back-off
            await _respond(w, "429 Too Many Requests", "wrong gateway token; try again in %d s\n" % wait,
                           extra=("Retry-After: %d" % wait,))
            return None
        token_ok = wh.token_ok(expected, query, headers)
        if token_ok:
            _fails.pop(peer, None)
        else:
            _failed(peer)
            log.warning("ws", "refused a client without a valid token")
            await _respond(w, "401 Unauthorized",
                           "gateway token required: ws://HOST:PORT/?token=... or "
                           "Authorization: Bearer ...\n", extra=('WWW-Authenticate: Bearer',))
            return None
    origin = headers.get("origin")
    if not token_ok and not wh.origin_ok(origin, own_hosts(), gw.port):
        log.warning("ws", "refused a browser connection from origin %s", origin[:80])
        await _respond(w, "403 Forbidden", "origin not allowed\n")
        return None
    me[2] = True  # upgraded: never shed from now on
    w.write(wh.upgrade_response(key))
    await w.drain()
    return True


def _entry(peer):
    """The key of the back-off `peer` answers to: its own entry, or, once the table
    holds WS_AUTH_PEERS others, the one every address without an entry shares (a
    global rate: rotating through more addresses than the table holds buys nothing).
    Entries whose back-off ended WS_AUTH_FORGET_S ago are forgotten first."""
    now = time.ticks_ms()
    for k in [k for k in _fails if time.ticks_diff(now, _fails[k][1]) > limits.WS_AUTH_FORGET_S * 1000]:
        del _fails[k]
    if peer in _fails or len(_fails) - (_SHARED in _fails) < limits.WS_AUTH_PEERS:
        return peer
    return _SHARED


def _backoff(peer):
    """Seconds `peer` must still wait after wrong tokens (0: none)."""
    f = _fails.get(_entry(peer))
    left = time.ticks_diff(f[1], time.ticks_ms()) if f else 0
    return (left + 999) // 1000 if left > 0 else 0


def _failed(peer):
    key = _entry(peer)
    n = _fails.get(key, (0, 0))[0] + 1
    if key == _SHARED and n == 1:
        log.warning("ws", "wrong gateway tokens from more than %d addresses: the others now share "
                    "one back-off", limits.WS_AUTH_PEERS)
    wait = min(limits.WS_AUTH_BACKOFF_S << min(n - 1, 16), limits.WS_AUTH_BACKOFF_MAX_S)
    _fails[key] = (n, time.ticks_add(time.ticks_ms(), wait * 1000))


def _admit(me):
    """Make room for connection `me` (already in _conns; net/httpserver.shed()): an
    address keeps at most WS_PEER_PENDING connections before their upgrade and
    WS_PEER_CONN in all; upgraded clients and one sending its request are never shed.
    -> False when there is no room."""
    return (hs.shed(_conns, me, limits.WS_MAX_CONN, limits.WS_PEER_PENDING, gw._shed_lately)
            and len([c for c in _conns if c[0] == me[0]]) <= limits.WS_PEER_CONN)
