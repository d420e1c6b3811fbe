# JSON request bodies written into one reusable bytearray. A 30 KB body built as a
# str needs 30 KB of contiguous heap on every LLM call, which a fragmented heap
# often no longer has; this buffer is allocated once and then reused, and long
# strings (the 16 KB system prompt) are escaped in small pieces.
import gc
import json
from mimi import limits
from mimi.utf8 import clean


class JsonBuf:
    def __init__(self, size=limits.LLM_BODY_BUF):
        self.size = size
        self.buf = None
        self.n = 0

    def encode(self, obj):
        """obj as JSON: a memoryview valid until the next encode()."""
        need = self.size
        while True:
            if self.buf is None or len(self.buf) < need:
                self.buf = None
                gc.collect()
                self.buf = bytearray(need)
            elif len(self.buf) > self.size and self.n and self.n < self.size // 2:
                # the last body was small again: give a grown buffer back
                self.buf = None
                gc.collect()
                self.buf = bytearray(self.size)
            self.n = 0
            self.over = False
            self._put(obj)
            if not self.over:
                return memoryview(self.buf)[: self.n]
            # Too small: the pass went on counting, so the size is exact. Round up to
            # whole KB so small growth doesn't mean a new buffer every call.
            need = (self.n + 1023) // 1024 * 1024

    def _w(self, data):
        mv = memoryview(data)  # a str's view is its UTF-8 bytes
        end = self.n + len(mv)
        if end > len(self.buf):
            self.over = True  # keep counting; encode() retries with the exact size
        if not self.over:
            self.buf[self.n:end] = mv
        self.n = end

    def _put(self, o):
        if isinstance(o, str):
            self._str(o)
        elif isinstance(o, dict):
            self._w(b"{")
            first = True
            for k, v in o.items():
                if not first:
                    self._w(b", ")
                first = False
                self._str(k)
                self._w(b": ")
                self._put(v)
            self._w(b"}")
        elif isinstance(o, (list, tuple)):
            self._w(b"[")
            for i, v in enumerate(o):
                if i:
                    self._w(b", ")
                self._put(v)
            self._w(b"]")
        else:
            self._w(json.dumps(o))

    def _str(self, s):
        # Text that is not valid UTF-8 (a file or session line stored before it was
        # checked) would make the server refuse every request that carries it.
        s = clean(s)
        step = limits.LLM_JSON_CHUNK
        if len(s) <= step:
            self._w(json.dumps(s))
            return
        self._w(b'"')
        for i in range(0, len(s), step):
            self._w(memoryview(json.dumps(s[i:i + step]))[1:-1])
        self._w(b'"')
