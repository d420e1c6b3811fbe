# Buffered reads of a connection to one of the board's servers (the WebSocket gateway,
# the portal): its own module, as a WebSocket client reads through it long after its
# HTTP part (net/httpserver.py, with the request head's read, dropped once upgraded) is done.
import time


class Reader:
    """Buffered reads over an asyncio stream. Nothing is lost when a read is
    cancelled (wait_for timeouts): data goes into the buffer as it arrives."""

    def __init__(self, stream):
        self.s = stream
        self.buf = b""
        self.got = 0  # bytes received: 0 = the client has not begun its request
        self.first = None  # ticks_ms of the first

    async def more(self, n):
        d = await self.s.read(n)
        if not d:
            raise EOFError
        if not self.got:
            self.first = time.ticks_ms()
        self.got += len(d)
        self.buf += d

    async def fill(self, n=1):
        while len(self.buf) < n:
            await self.more(512)

    async def readexactly(self, n):
        while len(self.buf) < n:
            await self.more(n - len(self.buf))
        out = self.buf[:n]
        self.buf = self.buf[n:]
        return out

    async def skip(self, n):
        while n > 0:
            if not self.buf:
                await self.more(min(n, 1024))
            k = min(n, len(self.buf))
            self.buf = self.buf[k:]
            n -= k
