# The WebSocket client (lib/mimi/net/wsclient.py) under MicroPython: frames it
# reads and writes on a stand-in stream. Against a real server (the `websockets`
# library behind the fake Feishu): tests/mp/test_feishu.py.
from mimi.net import wsproto as wp, wsread as wr


class Stream:
    """An asyncio-stream stand-in: reads from `data`, collects writes."""

    def __init__(self, data=b""):
        self.data = data
        self.out = bytearray()
        self.closed = False
        self.s = self  # the socket under the stream

    async def readexactly(self, n):
        if len(self.data) < n:
            raise EOFError
        b, self.data = self.data[:n], self.data[n:]
        return b

    def write(self, b):
        self.out.extend(b)

    async def drain(self):
        pass

    def close(self):
        self.closed = True


async def _written(stream):
    """The client's frames, checked to be masked."""
    from test_net import reader

    r = reader(bytes(stream.out))
    out = []
    while True:
        try:
            out.append(await wr.read_frame(r, 1 << 20, True))  # need_mask: a client masks
        except EOFError:
            return out


async def test_client_answers_pings_joins_fragments_and_masks():
    from mimi.net.wsclient import Conn, Closed

    server = (wp.frame(wp.PING, b"p1") + wp.frame(wp.BINARY, b"ab", fin=False) + wp.frame(wp.PING, b"p2")
              + wp.frame(wp.CONT, b"cd") + wp.frame(wp.CLOSE, b"\x03\xe8bye"))
    s = Stream(server[3:])
    c = Conn(s, server[:3], 100)  # the first bytes came in with the 101 answer
    assert await c.recv() == (wp.BINARY, b"abcd")
    await c.send(b"\x00\x01")
    e = None
    try:
        await c.recv()
    except Closed as x:
        e = x
    assert e is not None and e.code == 1000
    sent = await _written(s)
    assert sent == [(True, wp.PONG, b"p1"), (True, wp.PONG, b"p2"), (True, wp.BINARY, b"\x00\x01"),
                    (True, wp.CLOSE, b"\x03\xe8")]
    assert s.closed and c.closed
    try:
        await c.send(b"late")
        raise AssertionError("sent on a closed connection")
    except Closed:
        pass


async def test_client_refuses_oversized_and_broken_frames():
    from mimi.net.wsclient import Conn, Closed

    for data, code in ((wp.frame(wp.BINARY, b"x" * 101), wp.TOO_BIG),
                       (wp.frame(wp.CONT, b"x"), wp.PROTOCOL),
                       (bytes([0x8F, 0]), wp.PROTOCOL),
                       (b"\x82", 1006)):  # cut short: the connection just went away
        s = Stream(data)
        try:
            await Conn(s, b"", 100).recv()
            raise AssertionError("no Closed for %r" % data)
        except Closed as e:
            assert e.code == code, (data, e.code)
        assert s.closed
        if code != 1006:
            assert (await _written(s))[-1][1] == wp.CLOSE


async def test_a_frame_over_the_limit_can_be_taken_in_pieces():
    # Issue 25, item 10: Feishu's long events. Asked to, the client hands a frame over
    # its limit to the caller in bounded pieces and stays connected; the next frame and
    # a ping after it are read as usual; an error of the taker comes once the frame is
    # read to its end (still in step). Unmasked (a server's) and masked alike.
    from mimi import limits
    from mimi.net.wsclient import Conn

    big = bytes(range(256)) * 40  # 10,240 bytes
    for key in (None, b"\x01\x02\x03\x04"):
        s = Stream(wp.frame(wp.BINARY, big, mask_key=key) + wp.frame(wp.PING, b"p")
                   + wp.frame(wp.TEXT, b"next"))
        c = Conn(s, b"", 100)
        pieces = []
        seen = []

        def take(op, n):
            seen.append((op, n))
            return pieces.append

        assert await c.recv(take) == (wp.BINARY, None)
        assert seen == [(wp.BINARY, len(big))] and b"".join(pieces) == big
        assert max(len(p) for p in pieces) <= limits.WS_BIG_PIECE
        assert await c.recv(take) == (wp.TEXT, b"next") and not s.closed
    s = Stream(wp.frame(wp.BINARY, big) + wp.frame(wp.TEXT, b"next"))
    c = Conn(s, b"", 100)

    def broken(op, n):
        def sink(piece):
            raise ValueError("not a frame I know")
        return sink

    try:
        await c.recv(broken)
        raise AssertionError("no ValueError")
    except ValueError:
        pass
    assert await c.recv() == (wp.TEXT, b"next")
