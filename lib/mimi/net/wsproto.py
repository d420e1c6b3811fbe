# RFC 6455 pieces with no connection state, shared by the gateway (channels/websocket/,
# server side) and the WebSocket client (net/wsclient.py): the opcodes and close codes,
# the protocol error, and frames written (masked by a client). What a connection holds
# while it waits or sends; reading frames is net/wsread.py (loaded when one comes in),
# the opening handshake net/wshandshake.py (loaded for it).
import struct

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
