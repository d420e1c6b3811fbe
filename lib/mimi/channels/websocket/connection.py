# One connection to the WebSocket gateway (gateway.py, which loads this
# module when a connection arrives and drops it after the last one): the client, with
# a reader (this connection's task) and a sender task with a bounded outbox, so one
# slow client holds up nobody. The HTTP part before it (upgrade, token with its
# back-off, Origin, the chat page: upgrade.py) is loaded for it and dropped once no
# connection is waiting for its upgrade: a client's hours connected hold only this.
# What a frame that came in runs (its reading, a message's JSON, the close) is
# incoming.py, loaded when bytes arrive and, on a short heap, dropped once they are
# handled: a client idle or waiting for its turn's reply holds the sender and the wait.
# Guards the C gateway lacked: token auth with a per-address back-off after wrong
# tokens (shared by every other address once WS_AUTH_PEERS have one), a browser
# Origin check (a web page the user visits must not drive the board), frame and
# message caps, client masking, a connection cap where sockets not upgraded yet (an
# upgrade deadline, at most WS_PEER_PENDING per address) are shed, from the address
# holding the most, never one sending its request, and slots freed on every kind of
# disconnect.
import sys
import asyncio
import mimi
from mimi import limits, log, bus, net, channels
from mimi.net import wsproto as wp
from mimi.net.reader import Reader
from mimi.channels.websocket import gateway as gw
from mimi.channels.websocket.gateway import clients, _conns


def pieces(obj):
    """text() of an obj whose content is in pieces (bus.pieces()): the JSON as a
    tuple of pieces, each escaped alone (the client's sender writes them as the frames of
    one message), never one block as big as the text."""
    import json
    from mimi.utf8 import clean

    head = dict(obj)
    del head["content"]
    head = clean(json.dumps(head))
    return (head[:-1] + ', "content": "',) + \
        tuple(memoryview(clean(json.dumps(p)))[1:-1] for p in obj["content"]) + ('"}',)


def text(obj):
    """obj as the JSON of a text message, never invalid UTF-8 (RFC 6455 makes a client
    fail the connection on that): what slipped through elsewhere goes out as U+FFFD. A
    content in pieces (bus.pieces()): a tuple of pieces (connection.py)."""
    if isinstance(obj.get("content"), tuple):
        return pieces(obj)
    import json
    from mimi.utf8 import clean

    return clean(json.dumps(obj))


def _forget(client):
    if client in clients:
        clients.remove(client)
        log.info("ws", "client %s disconnected (%d left)", client.chat_id, len(clients))


async def send(msg):
    """gateway.send() while there is a client: a status or reply to every client on
    msg.chat_id (a chart the agent sends: its data, drawn by the page)."""
    if isinstance(msg.meta, dict) and "chart" in msg.meta:
        if any(c.chat_id == msg.chat_id for c in clients):
            data = chart(msg.meta["chart"])
            for c in list(clients):
                if c.chat_id == msg.chat_id and not c.dead:
                    c.push(data)
        return
    if msg.kind == bus.STATUS:
        obj = {"type": "status", "content": msg.content, "chat_id": msg.chat_id}
        if isinstance(msg.meta, dict) and "step" in msg.meta:  # the tool running, what on
            obj["step"], obj["detail"] = msg.meta["step"], msg.meta.get("detail") or ""
    else:  # a partial's content is the answer so far (README, WebSocket)
        obj = {"type": "response" if msg.kind == bus.REPLY else "partial", "content": msg.content,
               "chat_id": msg.chat_id}
    data = None
    n = 0
    for c in list(clients):  # push() may drop a client from the list
        if c.chat_id == msg.chat_id and not c.dead:
            if data is None:
                data = text(obj)
            try:
                n += c.push(data, status=msg.kind != bus.REPLY)
            except MemoryError:
                if not n:
                    raise  # no client has it: the dispatcher makes room and sends it again
                log.warning("ws", "client %s: no room; dropped", c.chat_id)
                c.drop()  # (its page reconnects) as one that cannot take a reply is, never sent twice
    if not n and msg.kind == bus.REPLY:
        if isinstance(msg.meta, dict) and "notice" in msg.meta:  # a rule's (services/rules/act.py)
            log.warning("ws", "no client on chat %s; a rule's notice is not kept: %s", msg.chat_id, msg.content)
        else:
            log.info("ws", "no client on chat %s; the reply stays in its session", msg.chat_id)


def chart(want):
    """A chart's data for the page ({"type":"chart",...}; services/history/summary.py)."""
    return mimi.run("services.history.summary services.history.query services.history.store services.history",
                    "page", want)


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
        self.asm = None  # a fragmented message coming in (wsread.Assembler), else None

    # --- sending (any task on the loop) ------------------------------------
    def push(self, data, op=wp.TEXT, status=False):
        """Queue one message (it goes out in frames of at most WS_FRAME_MAX). A client
        with WS_CLIENT_OUTBOX messages waiting, or WS_CLIENT_OUTBOX_BYTES behind the
        next one to go, is not reading: it is dropped (a "working" status is just
        skipped). So one message of any size fits, and what waits behind it is capped."""
        if self.dead or self.closing:
            return False
        n = 0
        for p in data if isinstance(data, tuple) else (data,):  # (pieces: text())
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

    def drop(self):
        self.dead = True
        _forget(self)
        if self.task is not asyncio.current_task():
            self.task.cancel()

    async def _send_loop(self):
        try:
            while True:
                while not self.out:
                    self.ev.clear()
                    await self.ev.wait()
                if await self._send():
                    return
        except asyncio.CancelledError:
            raise
        except Exception as e:  # timeout, reset: the connection is gone
            log.info("ws", "client %s: send failed (%s)", self.chat_id, type(e).__name__)
            self.drop()

    async def _send(self):
        """The next message out (True: it was the close). A call of its own, which takes
        the message itself, and deadlines by bus.within(): its parts go with this frame
        once sent. (The loop's slots, and asyncio.wait_for()'s tasks, held the last
        message, a long answer's pieces and their JSON, while the page stayed open.)"""
        op, data, n = self.out.pop(0)
        self.out_bytes -= n
        self.room.set()
        step = limits.WS_FRAME_MAX
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
                        await bus.within(self.w.drain(), limits.WS_WRITE_TIMEOUT_S)
                        break
                    except MemoryError:
                        wait = await _no_room(wait)
                i += k
                j += k
                if not n:
                    break
        return op == wp.CLOSE

    # --- receiving (this connection's task) ----------------------------------
    async def run(self):
        """Wait for the client's frames (a silent one pinged, then dropped); each one that
        comes is incoming.py's. -> when the connection is over."""
        self.sender = asyncio.create_task(self._send_loop())
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
            wait = 0
            while True:  # (the bytes wait in the reader while the heap is full)
                try:
                    incoming = channels.load("websocket.incoming")
                    break
                except MemoryError:
                    wait = await _no_room(wait)
            if await incoming.frame(self):
                return
            incoming = None
            if not self.rd.buf and mimi.short(True):  # nothing more here yet: its code goes till then
                _unload()


def _unload(last=False):
    """The code of the frames that come in goes (incoming.py, and net/wsread.py unless the
    WebSocket client uses it); last: the last connection is gone, the codec goes too."""
    mimi.drop("channels.websocket.incoming")
    if "mimi.net.wsclient" not in sys.modules:
        mimi.drop("net.wsread")
        if last:
            mimi.drop("net.wsproto")


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
            mimi.drop("net.wshandshake")
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
            await channels.load("websocket.incoming").close(client, wp.TRY_LATER, "too many clients")
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
