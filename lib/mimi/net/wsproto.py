# RFC 6455 pieces with no connection state, shared by the gateway
# (channels/websocket/, server side) and the WebSocket client (net/wsclient.py):
# the handshake key, frame reading and writing with masking, close codes, message
# reassembly, and the gateway's auth/origin checks (the HTTP request itself is
# parsed by mimi/net/httpserver.py). One module: the gateway always has it loaded,
# so the client costs nothing more for it.
import struct
import binascii
import hashlib
from mimi import limits
from mimi.net import split_url, secrets_equal

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
CONT = 0
TEXT = 1
BINARY = 2
CLOSE = 8
PING = 9
PONG = 10

# Close codes
NORMAL = 1000
GOING_AWAY = 1001
PROTOCOL = 1002
INVALID_DATA = 1007  # a text message that is not valid UTF-8
TOO_BIG = 1009
TRY_LATER = 1013


class ProtocolError(Exception):
    """The peer broke the protocol; close with `code`. `skip`: payload bytes of the
    offending frame still unread on the stream."""

    def __init__(self, code, reason, skip=0):
        super().__init__(reason)
        self.code = code
        self.reason = reason
        self.skip = skip


def accept_key(key):
    if isinstance(key, str):
        key = key.encode()
    digest = hashlib.sha1(key.strip() + GUID).digest()
    return binascii.b2a_base64(digest).strip().decode()


def key_ok(key):
    """Sec-WebSocket-Key must be base64 of 16 bytes."""
    try:
        return len(binascii.a2b_base64(key)) == 16
    except (ValueError, TypeError):
        return False


def mask(data, key):
    """XOR with the 4-byte key (masking and unmasking are the same operation)."""
    n = len(data)
    if not n:
        return b""
    # One big-integer XOR is done in C; a per-byte Python loop is slow on the board.
    k = (key * (n // 4 + 1))[:n]
    x = int.from_bytes(data, "big") ^ int.from_bytes(k, "big")
    return x.to_bytes(n, "big")


def header(opcode, n, fin=True, masked=False):
    """The head of a frame with n payload bytes (a masked one's key follows it)."""
    b0 = (0x80 if fin else 0) | opcode
    m = 0x80 if masked else 0
    if n < 126:
        return struct.pack(">BB", b0, m | n)
    if n < 65536:
        return struct.pack(">BBH", b0, m | 126, n)
    return struct.pack(">BBQ", b0, m | 127, n)


def frame(opcode, payload=b"", fin=True, mask_key=None):
    """One frame; server frames are unmasked, a client passes mask_key."""
    if isinstance(payload, str):
        payload = payload.encode()
    head = header(opcode, len(payload), fin, mask_key)
    if mask_key:
        return head + mask_key + mask(payload, mask_key)
    return head + payload


def close_payload(code, reason=""):
    return struct.pack(">H", code) + reason.encode()[:120]


def close_frame(code, reason=""):
    return frame(CLOSE, close_payload(code, reason))


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


def presented_token(query, headers):
    t = query.get("token")
    if t:
        return t
    auth = headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip()
    return None


def token_ok(expected, query, headers):
    got = presented_token(query, headers)
    return bool(expected) and got is not None and secrets_equal(got, expected)


def origin_ok(origin, hosts, port):
    """A browser's Origin must be this board itself (http://<one of hosts>:<port>).
    No Origin header (non-browser clients) passes; "null" and other sites do not."""
    if origin is None:
        return True
    try:
        scheme, host, p, path = split_url(origin.strip().lower().rstrip("/"))
    except ValueError:
        return False
    return scheme == "http" and not path and host in hosts and (80 if p is None else p) == port


def upgrade_response(key):
    return ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n" % accept_key(key)).encode()
