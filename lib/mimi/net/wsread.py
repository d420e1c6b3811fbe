# Reading RFC 6455 frames (net/wsproto.py has the codes, the protocol error and the
# writing): a frame's head and payload (unmasked), a close frame's code and a message
# in fragments joined. Loaded with a frame that comes in; the gateway drops it again
# (channels/websocket/connection.py) while its client waits.
import struct
from mimi import limits
from mimi.net.wsproto import ProtocolError, mask, CONT, TEXT, BINARY, CLOSE, PING, PONG, PROTOCOL, TOO_BIG


def close_code(payload):
    """The code of a received close frame (1005: none given); ProtocolError if malformed."""
    if not payload:
        return 1005
    if len(payload) == 1:
        raise ProtocolError(PROTOCOL, "bad close frame")
    code = struct.unpack(">H", payload[:2])[0]
    if code < 1000 or code in (1004, 1005, 1006, 1015) or 1016 <= code < 3000 or code > 4999:
        raise ProtocolError(PROTOCOL, "bad close code")
    return code


async def read_frame(r, limit, need_mask=True):
    """-> (fin, opcode, payload) from a stream with readexactly(). The declared length
    is checked against `limit` before any payload is read."""
    fin, op, n, key = await read_head(r, need_mask)
    if n > limit:
        raise ProtocolError(TOO_BIG, "frame too big", n)
    payload = await r.readexactly(n) if n else b""
    if key:
        payload = mask(payload, key)
    return fin, op, payload


async def read_head(r, need_mask=True):
    """-> (fin, opcode, payload length, mask key or None) of the next frame, its payload
    still to read; ProtocolError when the head breaks the protocol."""
    h = await r.readexactly(2)
    b0, b1 = h[0], h[1]
    fin = bool(b0 & 0x80)
    op = b0 & 0x0F
    n = b1 & 0x7F
    if n == 126:
        n = struct.unpack(">H", await r.readexactly(2))[0]
    elif n == 127:
        n = struct.unpack(">Q", await r.readexactly(8))[0]
    masked = b1 & 0x80
    key = await r.readexactly(4) if masked else None
    if b0 & 0x70:
        raise ProtocolError(PROTOCOL, "reserved bits set", n)
    if op not in (CONT, TEXT, BINARY, CLOSE, PING, PONG):
        raise ProtocolError(PROTOCOL, "unknown opcode %d" % op, n)
    if op >= CLOSE and (not fin or n > 125):
        raise ProtocolError(PROTOCOL, "bad control frame", n)
    if need_mask and not masked:
        raise ProtocolError(PROTOCOL, "client frames must be masked", n)
    return fin, op, n, key


class Assembler:
    """Joins fragmented data frames; the whole message is capped at `limit` bytes and
    limits.WS_FRAGMENTS_MAX frames (empty ones are not kept, but they count)."""

    def __init__(self, limit):
        self.limit = limit
        self.op = None
        self.parts = []
        self.size = 0
        self.n = 0

    def feed(self, fin, op, payload):
        """A data frame in; (opcode, bytes) when a message is complete, else None."""
        if op == CONT:
            if self.op is None:
                raise ProtocolError(PROTOCOL, "continuation without a start")
        elif self.op is not None:
            raise ProtocolError(PROTOCOL, "new message inside a fragmented one")
        else:
            if fin:
                return op, payload
            self.op = op
        self.size += len(payload)
        self.n += 1
        if self.size > self.limit:
            raise ProtocolError(TOO_BIG, "message too big")
        if self.n > limits.WS_FRAGMENTS_MAX:
            raise ProtocolError(TOO_BIG, "message in too many frames")
        if payload:
            self.parts.append(payload)
        if not fin:
            return None
        out = (self.op, b"".join(self.parts))
        self.op = None
        self.parts = []
        self.size = self.n = 0
        return out
