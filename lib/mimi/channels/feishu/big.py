# A Feishu event too long to take whole (a message of 9,000 CJK characters is 27 KB,
# over FEISHU_FRAME_MAX), read in pieces as it arrives so the long connection stays:
# the pbbp2 frame decoded as it streams (Reader, the fields of frame.py), its JSON
# payload kept without its long strings (Strings: each string over FEISHU_LONG_STRING
# bytes becomes ""), so the event's type, ids and sender stay readable while its text
# is too long to take. An event joined from several frames (header sum > 1) that
# grows past FEISHU_PAYLOAD_MAX goes through Strings too. Loaded for such an event
# and dropped after (channels/feishu/longconn.py).
from mimi import limits
from mimi.channels.feishu.frame import Frame, _set, _whole


class Strings:
    """JSON bytes given in pieces -> .result(): the same JSON with every string longer
    than FEISHU_LONG_STRING bytes emptied; .size: the longest of those (as written in
    the JSON). ValueError when even that is over FEISHU_LONG_KEPT, or the text ends
    inside a string."""

    def __init__(self):
        self.out = bytearray()
        self.size = 0
        self.ins = False  # inside a string
        self.esc = False  # ... right after a backslash
        self.keep = True  # ... which is kept (not over the limit so far)
        self.start = 0  # where its contents begin in out
        self.n = 0  # its bytes so far

    def __call__(self, piece):
        b = bytes(piece)
        i, end = 0, len(b)
        while i < end:
            if not self.ins:
                j = b.find(b'"', i)
                k = end if j < 0 else j + 1
                self._put(b, i, k)
                i = k
                if j >= 0:
                    self.ins, self.keep, self.n, self.start = True, True, 0, len(self.out)
                continue
            if self.esc:  # the escaped byte
                self.esc = False
                self._take(b, i, i + 1)
                i += 1
                continue
            q = b.find(b'"', i)
            s = b.find(b"\\", i)
            k = end if q < 0 and s < 0 else q if s < 0 else s if q < 0 else min(q, s)
            self._take(b, i, k)
            if k == end:
                break
            if b[k] == 92:  # a backslash: the next byte is escaped
                self._take(b, k, k + 1)
                self.esc = True
            else:  # the closing quote
                self.ins = False
                if not self.keep:
                    self.size = max(self.size, self.n)
                self._put(b, k, k + 1)
            i = k + 1

    def _take(self, b, i, j):
        """String contents b[i:j]: kept while the string is short enough."""
        self.n += j - i
        if not self.keep:
            return
        if self.n > limits.FEISHU_LONG_STRING:
            self.keep = False
            self.out[self.start:] = b""
            return
        self._put(b, i, j)

    def _put(self, b, i, j):
        if len(self.out) + j - i > limits.FEISHU_LONG_KEPT:
            raise ValueError("over %d bytes even without its long texts" % limits.FEISHU_LONG_KEPT)
        self.out.extend(memoryview(b)[i:j])

    def result(self):
        if self.ins:
            raise ValueError("the JSON ends inside a string")
        return bytes(self.out)


class Reader:
    """A frame's bytes given in pieces (wsclient's recv(big=...)) -> .frame(): a Frame
    whose payload went to `payload` (a Strings, by default) instead of being kept.
    ValueError as frame.decode() raises it."""

    def __init__(self, payload=None):
        self.f = Frame()
        self.payload = payload if payload is not None else Strings()
        self.seen = 0
        self.key = None  # the field being read: (number, wire type)
        self.v = self.shift = 0  # a varint being read
        self.left = 0  # bytes of a length-delimited or fixed-width field still to come
        self.buf = None  # a kept field's bytes

    def __call__(self, piece):
        i, end = 0, len(piece)
        while i < end:
            if self.left:
                k = min(self.left, end - i)
                if self.key[0] == 8 and self.key[1] == 2:
                    self.payload(piece[i:i + k])
                elif self.buf is not None:
                    if len(self.buf) + k > limits.FEISHU_HEADERS_MAX:
                        raise ValueError("field %d over %d bytes" % (self.key[0], limits.FEISHU_HEADERS_MAX))
                    self.buf.extend(piece[i:i + k])
                self.left -= k
                i += k
                if not self.left:
                    self._value(self.buf)
                continue
            c = piece[i]
            i += 1
            self.v |= (c & 0x7F) << self.shift
            self.shift += 7
            if self.shift > 70:
                raise ValueError("overlong varint")
            if c & 0x80:
                continue
            v, self.v, self.shift = self.v, 0, 0
            if self.key is None:
                self._field(v >> 3, v & 7)
            elif self.key[1] == 0:
                self._value(v)
            else:  # a length
                self.left = v
                self.buf = bytearray() if self.key[0] != 8 else None
                if not v:
                    self._value(self.buf)

    def _field(self, num, wt):
        if wt not in (0, 1, 2, 5):
            raise ValueError("unsupported wire type %d" % wt)
        self.key = (num, wt)
        if wt in (1, 5):  # fixed width: skipped
            self.left = 8 if wt == 1 else 4
            self.buf = None

    def _value(self, v):
        num, wt = self.key
        self.key = None
        if wt in (1, 5):
            return
        self.seen |= 1 << num
        if num != 8 or wt != 2:  # (the payload went to its taker)
            _set(self.f, num, wt, v)

    def frame(self):
        """The frame, its payload what `payload` made of it."""
        if self.key is not None or self.left or self.shift:
            raise ValueError("the frame ends inside a field")
        self.f.payload = self.payload.result()
        return _whole(self.f, self.seen)
