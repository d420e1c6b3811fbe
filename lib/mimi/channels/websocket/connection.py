# One connection to the WebSocket gateway (gateway.py, which loads this
# module when a connection arrives and drops it after the last one): the HTTP part
# (upgrade, token with its back-off, Origin, the chat page) and the client, with a
# reader (this connection's task) and a sender task with a bounded outbox, so one
# slow client holds up nobody.
# Guards the C gateway lacked: token auth with a per-address back-off after wrong
# tokens (shared by every other address once WS_AUTH_PEERS have one), a browser
# Origin check (a web page the user visits must not drive the board), frame and
# message caps, client masking, a connection cap where sockets not upgraded yet (an
# upgrade deadline, at most WS_PEER_PENDING per address) are shed, from the address
# holding the most, never one sending its request, and slots freed on every kind of
# disconnect.
import json
import time
import asyncio
import mimi
from mimi import limits, log, bus, board, net, channels
from mimi.config import settings as config
from mimi.net import httpserver as hs
from mimi.net import wsproto as wp
from mimi.channels.websocket import gateway as gw
from mimi.channels.websocket.gateway import CHANNEL, clients, _conns, _fails, text, _forget

_SHARED = "*"  # _fails key of the back-off shared by addresses without their own

_ID_OK = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"


def pieces(obj):
    """gateway.text() of an obj whose content is in pieces (bus.pieces()): the JSON as a
    tuple of pieces, each escaped alone (the client's sender writes them as the frames of
    one message), never one block as big as the text."""
    from mimi.utf8 import clean

    head = dict(obj)
    del head["content"]
    head = clean(json.dumps(head))
    return (head[:-1] + ', "content": "',) + \
        tuple(memoryview(clean(json.dumps(p)))[1:-1] for p in obj["content"]) + ('"}',)


def new_chat_id():
    """A connection's chat id until it names one: random, so a new anonymous client
    never lands in an earlier one's session (a counter restarts at 1 every boot)."""
    return net.random_id(limits.WS_CHAT_ID_RANDOM)


async def _no_room(wait):
    """A frame's step found no room in the heap: the spare given back (mimi.spare()) and
    `wait` ms given to whatever holds the heap -> the next wait (from 50 ms, doubling);
    MemoryError after WS_NO_ROOM_TRIES."""
    if wait >= 50 << limits.WS_NO_ROOM_TRIES:
        raise MemoryError("no room in the heap for a frame")
    mimi.spare(False)
    wait = wait * 2 or 50
    await asyncio.sleep_ms(wait)
    return wait


class Client:
    def __init__(self, rd, w, chat_id):
        self.rd = rd
        self.w = w
        self.chat_id = chat_id
        self.out = []  # [(opcode, payload: str or bytes, its size)], one message each
        self.out_bytes = 0
        self.ev = asyncio.Event()  # set: something to send
        self.room = asyncio.Event()  # set: the sender took a message
        self.closing = False  # our close frame is queued: nothing else goes out
        self.dead = False
        self.task = asyncio.current_task()
        self.sender = None

    # --- sending (any task on the loop) ------------------------------------
    def push(self, data, op=wp.TEXT, status=False):
        """Queue one message (it goes out in frames of at most WS_FRAME_MAX). A client
        with WS_CLIENT_OUTBOX messages waiting, or WS_CLIENT_OUTBOX_BYTES behind the
        next one to go, is not reading: it is dropped (a "working" status is just
        skipped). So one message of any size fits, and what waits behind it is capped."""
        if self.dead or self.closing:
            return False
        n = 0
        for p in data if isinstance(data, tuple) else (data,):  # (pieces: gateway.text())
            n += len(memoryview(p))
        if op != wp.CLOSE and (len(self.out) >= limits.WS_CLIENT_OUTBOX or self.out_bytes -
                               (self.out[0][2] if self.out else 0) >= limits.WS_CLIENT_OUTBOX_BYTES):
            if status:
                return False  # a "working" status can be skipped; a reply cannot
            log.warning("ws", "client %s is not reading; dropping it", self.chat_id)
            self.drop()
            return False
        self.out.append((op, data, n))
        self.out_bytes += n
        if op == wp.CLOSE:
            self.closing = True
            _forget(self)  # the slot is free as soon as we are closing
        self.ev.set()
        return True

    def send_obj(self, obj):
        return self.push(text(obj))

    def error(self, text):
        self.send_obj({"type": "error", "content": text})

    def drop(self):
        self.dead = True
        _forget(self)
        if self.task is not asyncio.current_task():
            self.task.cancel()

    async def _send_loop(self):
        step = limits.WS_FRAME_MAX
        try:
            while True:
                while not self.out:
                    self.ev.clear()
                    await self.ev.wait()
                op, data, n = self.out.pop(0)
                self.out_bytes -= n
                self.room.set()
                i = 0  # bytes of the message sent
                for p in data if isinstance(data, tuple) else (data,):
                    mv = memoryview(p)  # a str too: its UTF-8 bytes, not copied
                    j = 0
                    while j < len(mv) or not n:  # the frames of one message (RFC 6455 fragmentation)
                        k = min(len(mv) - j, step)
                        written = False
                        wait = 0
                        while True:  # a full heap (the agent's turn holds it for a moment): room
                            try:  # made, a while given and the step again (made, or drained)
                                if not written:
                                    hdr, piece = wp.header(op if i == 0 else wp.CONT, k, i + k >= n), mv[j:j + k]
                                    self.w.write(hdr)  # (the stream takes it whole or keeps
                                    self.w.write(piece)  # it: no room only when it keeps some)
                                    written = True
                                    hdr = piece = None
                                await asyncio.wait_for(self.w.drain(), limits.WS_WRITE_TIMEOUT_S)
                                break
                            except MemoryError:
                                wait = await _no_room(wait)
                        i += k
                        j += k
                        if not n:
                            break
                mv = p = data = None
                if op == wp.CLOSE:
                    return
        except asyncio.CancelledError:
            raise
        except Exception as e:  # timeout, reset: the connection is gone
            log.info("ws", "client %s: send failed (%s)", self.chat_id, type(e).__name__)
            self.drop()

    # --- receiving (this connection's task) ----------------------------------
    async def run(self):
        self.sender = asyncio.create_task(self._send_loop())
        asm = wp.Assembler(limits.WS_FRAME_MAX)
        pinged = False
        while not self.dead:
            # Backpressure: a client that floods us but reads slowly is read slowly.
            while len(self.out) >= limits.WS_CLIENT_OUTBOX // 2 and not self.dead:
                self.room.clear()
                await self.room.wait()
            try:  # (bus.within, not wait_for: this wait is every idle client's)
                await bus.within(self.rd.fill(1), limits.WS_PING_S)
            except asyncio.TimeoutError:
                if pinged:
                    log.info("ws", "client %s: no answer to ping; dropped", self.chat_id)
                    return
                pinged = True
                self.push(b"mimi", wp.PING)
                continue
            pinged = False
            try:
                fin, op, payload = await bus.within(wp.read_frame(self.rd, limits.WS_FRAME_MAX),
                                                    limits.WS_FRAME_TIMEOUT_S)
                if op == wp.CLOSE:
                    code = wp.close_code(payload)
                    self.push(wp.close_payload(wp.NORMAL if code == 1005 else code), wp.CLOSE)
                    await self._flush()
                    return
                if op == wp.PING:
                    self.push(payload, wp.PONG)
                    continue
                if op == wp.PONG:
                    continue
                m = asm.feed(fin, op, payload)
                if m and m[0] == wp.TEXT:
                    from mimi.utf8 import valid

                    if not valid(m[1]):
                        raise wp.ProtocolError(wp.INVALID_DATA, "text is not valid UTF-8")
            except wp.ProtocolError as e:
                log.info("ws", "client %s: %s; closing with %d", self.chat_id, e.reason, e.code)
                await self.close(e.code, e.reason, e.skip)
                return
            payload = None
            if m:
                self.on_message(m[0], m[1])

    async def _flush(self):
        if self.sender:
            try:
                await asyncio.wait_for(self.sender, limits.WS_CLOSE_WAIT_S)
            except Exception:
                pass

    async def close(self, code, reason="", skip=0):
        """Our close frame, then wait (briefly) for the peer's, so it reads ours before
        the TCP connection goes (unread data would make the close a reset)."""
        self.push(wp.close_payload(code, reason), wp.CLOSE)
        try:
            await asyncio.wait_for(self._linger(skip), limits.WS_CLOSE_WAIT_S)
        except Exception:
            pass
        await self._flush()

    async def _linger(self, skip):
        if skip > limits.WS_DRAIN_MAX:
            return
        await self.rd.skip(skip)
        while True:
            fin, op, payload = await wp.read_frame(self.rd, limits.WS_DRAIN_MAX)
            if op == wp.CLOSE:
                return

    def on_message(self, op, data):
        if op != wp.TEXT:
            return self.error("only text frames with JSON are accepted")
        from mimi import jsonutil

        try:
            obj = jsonutil.loads(data)  # an escaped lone surrogate comes out as U+FFFD
        except ValueError:
            return self.error("invalid JSON")
        if not isinstance(obj, dict):
            return self.error("expected a JSON object")
        kind = obj.get("type")
        if kind == "usage":  # the ledger (its text too): tools/chat and the page show it
            try:
                return self.send_obj(mimi.run("usage.report usage.file", "report"))
            except Exception as e:  # noqa: B902 - out of memory, a broken ledger file
                return self.error("no usage report now: %s %s" % (type(e).__name__, e))
        if kind == "chart":  # a device's history for the page to draw (SVG)
            return self.push(gw.chart([obj.get("name"), obj.get("hours")]))
        if kind != "message":
            return self.error("unknown type %s; send {\"type\":\"message\",\"content\":\"...\"}"
                              % json.dumps(kind)[:40])
        content = obj.get("content")
        if not isinstance(content, str) or not content.strip():
            return self.error("content must be non-empty text")
        cid = obj.get("chat_id")
        if cid is not None and cid != "":
            cid = chat_id_ok(cid)
            if cid is None:
                return self.error("chat_id: 1 to %d of A-Z a-z 0-9 _ -" % limits.WS_CHAT_ID_MAX)
            self.chat_id = cid
        if not bus.inbound.put(bus.Msg(CHANNEL, self.chat_id, content)):
            log.warning("ws", "inbound queue full; told client %s to retry", self.chat_id)
            self.send_obj({"type": "error", "content": bus.BUSY, "chat_id": self.chat_id})


def chat_id_ok(cid):
    """The chat id as a str if acceptable ([A-Za-z0-9_-], at most 31), else None."""
    if isinstance(cid, bool) or not isinstance(cid, (str, int)):
        return None
    cid = str(cid)
    if not 0 < len(cid) <= limits.WS_CHAT_ID_MAX:
        return None
    for ch in cid:
        if ch not in _ID_OK:
            return None
    return cid


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
        method, path, query, headers = hs.parse_request(await rd.read_head(limits.WS_HEADER_MAX))
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
    if not hs.has_token(headers.get("connection"), "upgrade") or not wp.key_ok(key):
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
        token_ok = wp.token_ok(expected, query, headers)
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
    if not token_ok and not wp.origin_ok(origin, own_hosts(), gw.port):
        log.warning("ws", "refused a browser connection from origin %s", origin[:80])
        await _respond(w, "403 Forbidden", "origin not allowed\n")
        return None
    me[2] = True  # upgraded: never shed from now on
    w.write(wp.upgrade_response(key))
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


async def serve(sr, sw):
    rd = hs.Reader(sr)
    me = [hs.peer(sw), asyncio.current_task(), False, rd]  # address, task, upgraded, reader
    _conns.append(me)
    client = None
    net.nodelay(sw.s)  # the "working" frame and the reply must not wait on delayed ACKs
    try:
        if not _admit(me):
            log.warning("ws", "too many connections (at most %d, %d from one address: the socket budget "
                        "in limits.py); one refused", limits.WS_MAX_CONN, limits.WS_PEER_CONN)
            await _respond(sw, "503 Service Unavailable", "too many connections to the board; "
                           "close a chat tab or try again later\n", extra=("Retry-After: 10",))
            return
        try:
            if not await asyncio.wait_for(_handshake(rd, sw, me), limits.WS_HANDSHAKE_TIMEOUT_S):
                return
        except asyncio.TimeoutError:  # silent past the deadline: goes first among equals next time
            hs.remember(gw._shed_lately, me[0])
            raise
        client = Client(rd, sw, new_chat_id())
        if len(clients) >= limits.WS_MAX_CLIENTS:
            log.warning("ws", "client limit (%d) reached; refused one", limits.WS_MAX_CLIENTS)
            client.sender = asyncio.create_task(client._send_loop())
            await client.close(wp.TRY_LATER, "too many clients")
            client = None
            return
        clients.append(client)
        log.info("ws", "client %s connected (%d of %d)", client.chat_id, len(clients),
                 limits.WS_MAX_CLIENTS)
        await client.run()
    except asyncio.CancelledError:
        pass
    except (EOFError, OSError, asyncio.TimeoutError):
        pass  # reset, EOF, timeout: the finally below frees the slot
    except MemoryError as e:
        if not me[2]:
            await gw.refuse(sw)
        else:  # upgraded: closed with 1013 "try again later" and why, not without a word
            mimi.spare(False)
            log.exception("ws", "connection", e)
            try:
                p = wp.close_payload(wp.TRY_LATER, "the board is out of memory")
                sw.write(wp.header(wp.CLOSE, len(p)))
                sw.write(p)
                await asyncio.wait_for(sw.drain(), limits.WS_CLOSE_WAIT_S)
            except Exception:
                pass
    except Exception as e:
        log.exception("ws", "connection", e)
    finally:
        if me in _conns:
            _conns.remove(me)
        if client is not None:
            client.dead = True
            _forget(client)
            if client.sender is not None:
                client.sender.cancel()
        try:
            sw.close()
            await sw.wait_closed()
        except Exception:
            pass
