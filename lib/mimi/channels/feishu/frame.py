# Feishu's long-connection frames: protobuf `pbbp2.Frame`, encoded and decoded by
# hand for exactly its fields (there is no protobuf library on the board):
#   1 SeqID uint64   2 LogID uint64   3 service int32   4 method int32
#   5 headers: repeated Header {1 key string, 2 value string}
#   6 payload_encoding string   7 payload_type string   8 payload bytes
#   9 LogIDNew string
# Fields 1-4 are proto2 `required`: always written. Unknown fields are skipped; a
# truncated or malformed frame is a ValueError.

CONTROL = 0  # method of ping/pong frames (header type=ping|pong)
DATA = 1  # method of event/card frames (header type=event|card)

_STR = {6: "encoding", 7: "ptype", 9: "log_new"}


class Frame:
    __slots__ = ("seq", "log", "service", "method", "headers", "encoding", "ptype", "payload", "log_new")

    def __init__(self, method=CONTROL, service=0, headers=None, payload=b"", seq=0, log=0):
        self.seq = seq
        self.log = log
        self.service = service
        self.method = method
        self.headers = headers or []  # [[key, value], ...] in order
        self.encoding = self.ptype = self.log_new = ""
        self.payload = payload

    def get(self, key, default=None):
        for k, v in self.headers:
            if k == key:
                return v
        return default


def _varint(b, i):
    v = shift = 0
    while True:
        if i >= len(b) or shift > 63:
            raise ValueError("truncated or overlong varint")
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if c < 0x80:
            return v, i
        shift += 7


def _int32(v):
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def _fields(b):
    """(field number, wire type, value) for each field of a message in b; value is
    an int (varint) or a memoryview (length-delimited). Fixed-width fields are skipped."""
    b = memoryview(b)
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 2:
            n, i = _varint(b, i)
            if i + n > len(b):
                raise ValueError("field %d runs past the end" % num)
            v, i = b[i:i + n], i + n
        elif wt in (1, 5):
            i += 8 if wt == 1 else 4
            if i > len(b):
                raise ValueError("field %d runs past the end" % num)
            continue
        else:
            raise ValueError("unsupported wire type %d" % wt)
        yield num, wt, v


def _text(v):
    try:
        return str(bytes(v), "utf-8")
    except UnicodeError:
        raise ValueError("a string field is not UTF-8")


def decode(b):
    """bytes -> Frame."""
    f = Frame()
    seen = 0
    for num, wt, v in _fields(b):
        _set(f, num, wt, v)
        seen |= 1 << num
    return _whole(f, seen)


def _set(f, num, wt, v):
    """Field `num` (wire type wt, value v: an int, or bytes) into Frame f."""
    if num <= 9 and (wt == 0) != (num <= 4):
        raise ValueError("field %d has the wrong wire type" % num)
    if num == 1:
        f.seq = v
    elif num == 2:
        f.log = v
    elif num == 3:
        f.service = _int32(v)
    elif num == 4:
        f.method = _int32(v)
    elif num == 5:
        kv = ["", ""]
        for n, w, x in _fields(v):
            if n in (1, 2) and w == 2:
                kv[n - 1] = _text(x)
        f.headers.append(kv)
    elif num == 8:
        f.payload = bytes(v)
    elif num in _STR:
        setattr(f, _STR[num], _text(v))


def _whole(f, seen):
    """f, once the fields seen (a bit per number) hold the required ones."""
    if seen & 0x1E != 0x1E:
        raise ValueError("a required field (SeqID, LogID, service, method) is missing")
    return f


def _put_varint(out, v):
    if v < 0:
        v += 1 << 64  # int32/int64 negatives take ten bytes, as protobuf writes them
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _put_bytes(out, num, data):
    if isinstance(data, str):
        data = data.encode()
    _put_varint(out, num << 3 | 2)
    _put_varint(out, len(data))
    out.extend(data)


def encode(f):
    """Frame -> bytes."""
    out = bytearray()
    for num, v in ((1, f.seq), (2, f.log), (3, f.service), (4, f.method)):
        _put_varint(out, num << 3)
        _put_varint(out, v)
    for k, v in f.headers:
        h = bytearray()
        _put_bytes(h, 1, k)
        _put_bytes(h, 2, v)
        _put_bytes(out, 5, h)
    for num, name in ((6, "encoding"), (7, "ptype")):
        if getattr(f, name):
            _put_bytes(out, num, getattr(f, name))
    if f.payload:
        _put_bytes(out, 8, f.payload)
    if f.log_new:
        _put_bytes(out, 9, f.log_new)
    return bytes(out)
