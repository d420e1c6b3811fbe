# WebSocket client (RFC 6455) on the asyncio loop, for Feishu's long connection.
# The connection (proxy, verified TLS with the shipped roots) is opened by
# net/http.py's AsyncClient, which also sends the upgrade request and then hands
# the connection over, so whatever governs HTTPS connections governs this one too; frames go through net/wsproto.py and
# net/wsread.py, the gateway's codec. Client frames are masked; a message is capped at `limit`, but
# one frame over it can be handed to the caller in pieces instead (recv(big=...)).
import os
import struct
import asyncio
import binascii
from mimi import limits
from mimi.net import wsproto as wp, wsread as wr, split_url


class Closed(Exception):
    """The connection ended: the close code (1006: it just went away) and why."""

    def __init__(self, code, reason=""):
        super().__init__("closed (%d) %s" % (code, reason))
        self.code = code
        self.reason = reason


class Refused(Exception):
    """The server answered the upgrade with something else than 101."""

    def __init__(self, resp):
        super().__init__("WebSocket upgrade refused: HTTP %d %s" % (resp.status, resp.reason))
        self.status = resp.status
        self.headers = resp.headers
        self.body = resp.body


class Conn:
    def __init__(self, stream, extra, limit, tls=False):
        self.s = stream
        self.tls = tls  # a TLS connection: counted by net/tls.py until closed
        self.extra = extra  # bytes the server sent right behind its 101 answer
        self.limit = limit
        self.asm = wr.Assembler(limit)
        self.lock = asyncio.Lock()  # one frame written at a time (pings, ACKs, pongs)
        self.closed = False

    async def readexactly(self, n):
        if self.extra:
            head, self.extra = self.extra[:n], self.extra[n:]
            return head if len(head) == n else head + await self.s.readexactly(n - len(head))
        return await self.s.readexactly(n)

    async def send(self, payload, op=wp.BINARY):
        data = wp.frame(op, payload, mask_key=os.urandom(4))
        async with self.lock:
            if self.closed:
                raise Closed(1006, "already closed")
            try:
                self.s.write(data)
                await self.s.drain()
            except OSError as e:
                self.abort()
                raise Closed(1006, str(e))

    async def recv(self, big=None):
        """The next data message -> (opcode, bytes). Pings are answered; Closed is
        raised when the connection ends (a close frame from the server is answered).
        big(opcode, length): for a message in one frame over the limit (up to
        limits.WS_BIG_MAX), a function its payload is handed to in pieces of at most
        limits.WS_BIG_PIECE bytes instead of ending the connection; (opcode, None)
        is returned then."""
        while True:
            try:
                fin, op, n, key = await wr.read_head(self, False)
                if n > self.limit:
                    if big is None or not fin or op not in (wp.TEXT, wp.BINARY) or \
                            self.asm.op is not None or n > limits.WS_BIG_MAX:
                        raise wp.ProtocolError(wp.TOO_BIG, "frame too big", n)
                    await self._pour(n, key, big(op, n))
                    return op, None
                payload = await self.readexactly(n) if n else b""
                if key:
                    payload = wp.mask(payload, key)
            except wp.ProtocolError as e:
                await self.close(e.code, e.reason)
                raise Closed(e.code, e.reason)
            except (EOFError, OSError) as e:
                self.abort()
                raise Closed(1006, str(e) or "connection lost")
            if op == wp.PING:
                await self.send(payload, wp.PONG)
            elif op == wp.CLOSE:
                try:
                    code = wr.close_code(payload)
                except wp.ProtocolError:
                    code = wp.PROTOCOL
                await self.close(code if code != 1005 else wp.NORMAL)
                raise Closed(code, "by the server")
            elif op != wp.PONG:
                try:
                    msg = self.asm.feed(fin, op, payload)
                except wp.ProtocolError as e:
                    await self.close(e.code, e.reason)
                    raise Closed(e.code, e.reason)
                if msg:
                    return msg

    async def _pour(self, n, key, sink):
        """n payload bytes to sink, a piece at a time (a masked frame unmasked: the key's
        phase kept across pieces). An error of the sink is raised once the frame is read
        to its end: the connection stays in step."""
        done = 0
        err = None
        while done < n:
            piece = await self.readexactly(min(n - done, limits.WS_BIG_PIECE))
            if key:
                k = done % 4
                piece = wp.mask(piece, key[k:] + key[:k])
            done += len(piece)
            if err is None:
                try:
                    sink(piece)
                except Exception as e:  # noqa: B902 - the caller's, raised below
                    err = e
        if err is not None:
            raise err

    async def close(self, code=wp.NORMAL, reason=""):
        """Send a close frame (best effort) and drop the connection."""
        if not self.closed:
            try:
                await asyncio.wait_for(self.send(struct.pack(">H", code) + reason.encode()[:120],
                                                 wp.CLOSE), 2)
            except Exception:  # noqa: B902 - the peer may be gone already
                pass
        self.abort()

    def abort(self):
        """Drop the connection now. To stop a task waiting in recv(), cancel that
        task (closing a socket does not wake a poll on every port)."""
        if self.tls:
            from mimi.net import tls

            tls.closed()
            self.tls = False
        self.closed = True
        try:
            self.s.s.close()  # an asyncio Stream's own close() does nothing
        except OSError:
            pass


async def connect(url, limit, proxy=None, ca=None, timeout_s=20):
    """Open ws:// or wss:// `url` -> Conn. Refused when the server does not switch
    protocols (its answer is on the exception); net/http.py's errors otherwise."""
    from mimi.net.http import AsyncClient, ProtocolError

    scheme, host, port, path = split_url(url)
    if scheme not in ("ws", "wss"):
        raise ValueError("not a WebSocket URL: %r" % url[:60])
    base = "%s://%s%s" % ("https" if scheme == "wss" else "http", host, ":%d" % port if port else "")
    client = AsyncClient(base, ca=ca, proxy=proxy, timeout_s=timeout_s)
    key = binascii.b2a_base64(os.urandom(16)).strip().decode()
    resp = await client.request("GET", path or "/", {
        "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Key": key,
        "Sec-WebSocket-Version": "13"})
    if resp.status != 101:
        client.close()
        raise Refused(resp)
    stream, extra, wrapped = client.detach()
    conn = Conn(stream, extra, limit, wrapped)
    import mimi

    key = mimi.run("net.wshandshake", "accept_key", key)  # (used once a connection)
    if resp.headers.get("sec-websocket-accept") != key or \
            resp.headers.get("upgrade", "").lower() != "websocket":
        conn.abort()
        raise ProtocolError("%s switched protocols without a valid WebSocket accept key" % host)
    return conn
