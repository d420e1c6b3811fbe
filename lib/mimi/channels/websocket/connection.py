# One connection to the WebSocket gateway (gateway.py, which loads this
# module when a connection arrives and drops it after the last one): the client, with
# a reader (this connection's task) and a sender task with a bounded outbox, so one
# slow client holds up nobody. The HTTP part before it (upgrade, token with its
# back-off, Origin, the chat page: upgrade.py) is loaded for it and dropped once no
# connection is waiting for its upgrade: a client's hours connected hold only this.
# Guards the C gateway lacked: token auth with a per-address back-off after wrong
# tokens (shared by every other address once WS_AUTH_PEERS have one), a browser
# Origin check (a web page the user visits must not drive the board), frame and
# message caps, client masking, a connection cap where sockets not upgraded yet (an
# upgrade deadline, at most WS_PEER_PENDING per address) are shed, from the address
# holding the most, never one sending its request, and slots freed on every kind of
# disconnect.
import sys
import json
import asyncio
import mimi
from mimi import limits, log, bus, net, channels
from mimi.net import wsproto as wp
from mimi.net.reader import Reader
from mimi.channels.websocket import gateway as gw
from mimi.channels.websocket.gateway import CHANNEL, clients, _conns, text, _forget
from micropython import const

_ID_OK = const("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


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


async def _upgraded(rd, sw, me):
    """upgrade.py's part: admitted and upgraded -> True. Its code (and the HTTP parser's)
    goes once no connection is before its upgrade."""
    up = channels.load("websocket.upgrade")
    try:
        return await up.run(rd, sw, me)
    finally:
        up = None
        if all(c[2] or c is me for c in _conns):
            mimi.drop("channels.websocket.upgrade")
            if "mimi.services.portal" not in sys.modules:
                mimi.drop("net.httpserver")


async def serve(sr, sw):
    rd = Reader(sr)
    me = [None, asyncio.current_task(), False, rd]  # address (upgrade.run()), task, upgraded, reader
    _conns.append(me)
    client = None
    net.nodelay(sw.s)  # the "working" frame and the reply must not wait on delayed ACKs
    try:
        if not await _upgraded(rd, sw, me):
            return
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
