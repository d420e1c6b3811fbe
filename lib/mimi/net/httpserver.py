# The small HTTP/1.1 server side shared by the WebSocket gateway
# (channels/websocket/upgrade.py) and the onboarding portal (services/portal.py): a
# request's head read and parsed (query strings and forms decoded), a whole response, and which
# connection a server short of sockets lets go; the buffered reads are net/reader.py,
# the listening port (a fixed one, or a free random one) net/listen.py.
import time
import socket
from mimi import limits
from mimi.net.listen import on_port  # noqa: F401 - the portal takes it from here
from mimi.net.reader import Reader  # noqa: F401 - the portal takes it from here


async def read_head(rd, limit):
    """The HTTP request head (up to the blank line) from Reader rd; ValueError past
    `limit` bytes."""
    while True:
        i = rd.buf.find(b"\r\n\r\n")
        if i > limit:
            raise ValueError("request head too large")
        if i >= 0:
            head = rd.buf[:i]
            rd.buf = rd.buf[i + 4:]
            return head
        if len(rd.buf) > limit:
            raise ValueError("request head too large")
        await rd.more(512)


def unquote(s):
    """A percent-encoded query or form value; ValueError when a % is not followed by
    two hex digits or the bytes are not valid UTF-8 (junk must never become a value,
    nor an empty one that clears a setting)."""
    if "%" not in s and "+" not in s:
        return s
    parts = s.replace("+", " ").split("%")
    out = bytearray(parts[0].encode())
    for p in parts[1:]:
        h = p[:2]
        if len(h) < 2 or not all(c in "0123456789abcdefABCDEF" for c in h):
            raise ValueError("bad %%-escape %r" % ("%" + h))
        out.append(int(h, 16))
        out += p[2:].encode()
    return text(out)


def text(data):
    """Bytes that must be strict UTF-8 -> str; ValueError if not."""
    from mimi.utf8 import valid

    if not valid(data):
        raise ValueError("not valid UTF-8")
    return str(data, "utf-8")


def parse_query(qs):
    q = {}
    for item in qs.split("&"):
        if item:
            k, _, v = item.partition("=")
            q[unquote(k)] = unquote(v)
    return q


def parse_request(head):
    """-> (method, path, query dict, headers dict with lower-case names); ValueError if bad."""
    try:
        text = head.decode()
    except UnicodeError:
        raise ValueError("request head is not UTF-8")
    lines = text.split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise ValueError("bad request line")
    method, target = parts[0], parts[1]
    headers = {}
    for line in lines[1:]:
        k, sep, v = line.partition(":")
        if not sep or not k.strip():
            raise ValueError("bad header line")
        k = k.strip().lower()
        v = v.strip()
        headers[k] = headers[k] + ", " + v if k in headers else v
    path, _, qs = target.partition("?")
    return method, path, parse_query(qs), headers


def peer(stream):
    """The client's address (the port left out), as a dict key."""
    a = stream.get_extra_info("peername")
    if isinstance(a, tuple):  # lwIP: ("1.2.3.4", port)
        return a[0]
    try:  # the unix port: a raw sockaddr
        return bytes(socket.sockaddr(a)[1])
    except Exception:
        return bytes(a)


def shed(conns, me, most, per_peer, recent):
    """Make room for connection `me`, the newest of `conns`: records [address, task,
    done, Reader or None], oldest first, `done` once its request is read (or upgraded).
    An address with per_peer unfinished connections besides `me` loses its oldest one.
    Past `most` in all, one unfinished connection goes: never one that is sending its
    request (begun less than HTTP_HEAD_GRACE_MS ago: a slow client), from the address
    holding the most unfinished ones, among those first the address that opened or lost
    the most lately (`recent`, the server's dict: one that keeps coming back; a slow
    client opens one and waits, a flood opens many), then the oldest. A connection shed
    is cancelled. -> does `me` fit?"""
    remember(recent, me[0])
    mine = [c for c in conns if c[0] == me[0] and not c[2] and c is not me]
    if len(mine) >= per_peer:
        _drop(conns, mine[0], recent)
    if len(conns) > most:
        count = {}
        for c in conns:
            if not c[2]:
                count[c[0]] = count.get(c[0], 0) + 1
        now = time.ticks_ms()
        best = worst = None
        for c in conns:  # oldest first: the oldest of the same rank goes
            rd = c[3]
            if c is me or c[2] or rd and rd.got and time.ticks_diff(now, rd.first) < limits.HTTP_HEAD_GRACE_MS:
                continue
            rank = (count[c[0]], recent.get(c[0], 0))
            if best is None or rank > worst:
                best, worst = c, rank
        if best:
            _drop(conns, best, recent)
    return len(conns) <= most


def _drop(conns, c, recent):
    conns.remove(c)
    c[1].cancel()
    remember(recent, c[0])


def remember(recent, addr):
    """One more connection opened, shed or timed out for addr in a server's counts
    (SHED_RECENT addresses at most: a new one replaces the least counted; all halved as
    one reaches SHED_COUNT_MAX, so they tell what happened lately)."""
    n = recent.get(addr, 0) + 1
    if not n - 1 and len(recent) >= limits.SHED_RECENT:
        least = min(recent, key=recent.get)
        del recent[least]
    recent[addr] = n
    if n >= limits.SHED_COUNT_MAX:
        for a in recent:
            recent[a] >>= 1


def has_token(value, word):
    """Is `word` one of the comma-separated tokens of a header value (case-insensitive)?"""
    word = word.lower()
    for t in (value or "").split(","):
        if t.strip().lower() == word:
            return True
    return False


def http_response(status, body=b"", ctype="text/plain; charset=utf-8", extra=()):
    if isinstance(body, str):
        body = body.encode()
    head = ["HTTP/1.1 %s" % status, "Content-Type: " + ctype,
            "Content-Length: %d" % len(body), "Connection: close", "Cache-Control: no-store"]
    head.extend(extra)
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body
