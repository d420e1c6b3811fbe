# A PNG streamed row by row: an indexed-colour image whose rows come from a function
# and go out as pieces, never the whole image in RAM, with its length known before
# the first byte (a multipart upload's Content-Length).
#
# The pixels are one zlib stream in one IDAT chunk. MicroPython's `deflate` compresses
# only where the firmware was built with MICROPY_PY_DEFLATE_COMPRESS: off in v1.28's
# ESP32 builds and unix ports (their ROM level is below "full features"). Without it the
# rows go in stored deflate blocks (the length is arithmetic); with it they are
# compressed twice, once only to count the bytes and once to send them, so nothing
# waits in RAM. binascii.crc32 makes the chunks' CRCs; the zlib trailer's Adler-32 is
# computed here (stored blocks only: the compressor writes its own).
import binascii
import struct

SIGNATURE = b"\x89PNG\r\n\x1a\n"
_BLOCK = 65535  # a stored block's most bytes
_WBITS = 8  # the compressor's window: 256 bytes, more than a row of the 480-pixel chart (its
# search is brute force over the window: a bigger one costs time, not much room)


def adler32(data, s1=1, s2=0):
    """-> (s1, s2) after `data` (Adler-32 = s2 << 16 | s1); pieces of 2 KB keep both
    small ints on a 32-bit board between reductions."""
    mv = memoryview(data)
    for k in range(0, len(mv), 2048):
        for b in mv[k:k + 2048]:
            s1 += b
            s2 += s1
        s1 %= 65521
        s2 %= 65521
    return s1, s2


def chunk(kind, data):
    """A whole PNG chunk (for the small ones)."""
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", binascii.crc32(data, binascii.crc32(kind)))


def compressor():
    """MicroPython's `deflate` module when it can compress, else None."""
    try:
        import deflate
    except ImportError:
        return None
    return deflate if hasattr(deflate.DeflateIO, "write") else None


class Encoder:
    """An indexed-colour PNG of width x height pixels of `depth` bits (1, 2, 4 or 8)
    with `palette` [(r, g, b)]; `row(y)` gives row y as a bytes-like of 1 + rowbytes
    bytes: filter type 0, then the packed pixels (it may hand back the same buffer
    each time: it is used before the next call). `deflate`: a callable(stream) ->
    object with write(b) and close() writing a zlib stream to stream.write (MicroPython's
    DeflateIO), False for stored blocks, None for the firmware's compressor if it has one.
    size() is the PNG's length; pieces() yields it (each piece is valid until the next)."""

    def __init__(self, width, height, depth, palette, row, deflate=None):
        if deflate is None:
            mod = compressor()
            deflate = (lambda s: mod.DeflateIO(s, mod.ZLIB, _WBITS)) if mod else False
        self.w = width
        self.h = height
        self.row = row
        self.deflate = deflate
        self.rowlen = 1 + (width * depth + 7) // 8
        pal = bytearray()
        for c in palette:
            pal += bytes(c)
        self.head = SIGNATURE + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, 3, 0, 0, 0)) + chunk(
            b"PLTE", bytes(pal))
        self._idat = None

    def idat_len(self):
        """Bytes of the zlib stream (counted by compressing once when compressed)."""
        if self._idat is None:
            if self.deflate:
                n = 0
                for piece in self._zlib():
                    n += len(piece)
                self._idat = n
            else:
                per = _BLOCK // self.rowlen
                self._idat = 2 + 5 * ((self.h + per - 1) // per) + self.h * self.rowlen + 4
        return self._idat

    def size(self):
        return len(self.head) + 12 + self.idat_len() + 12

    def pieces(self):
        n = self.idat_len()
        yield self.head
        kind = b"IDAT"
        crc = binascii.crc32(kind)
        yield struct.pack(">I", n) + kind
        sent = 0
        for piece in self._zlib():
            crc = binascii.crc32(piece, crc)
            sent += len(piece)
            yield piece
        if sent != n:
            raise ValueError("the image changed between its two passes (%d, then %d bytes)" % (n, sent))
        yield struct.pack(">I", crc) + chunk(b"IEND", b"")

    def write(self, out):
        """Send the PNG to out.write (a file, a socket); -> bytes written."""
        n = 0
        for piece in self.pieces():
            out.write(piece)
            n += len(piece)
        return n

    def _zlib(self):
        return self._compressed() if self.deflate else self._stored()

    def _stored(self):
        yield b"\x78\x01"  # deflate, 32 KB window, no compression level claimed
        per = _BLOCK // self.rowlen
        s1, s2 = 1, 0
        for y in range(self.h):
            if y % per == 0:
                n = min(per, self.h - y) * self.rowlen
                yield struct.pack("<BHH", 1 if y + per >= self.h else 0, n, n ^ 0xFFFF)
            r = self.row(y)
            s1, s2 = adler32(r, s1, s2)
            yield r
        yield struct.pack(">HH", s2, s1)

    def _compressed(self):
        sink = _Sink()
        z = self.deflate(sink)
        for y in range(self.h):
            z.write(self.row(y))
            if sink.buf:
                yield sink.take()
        z.close()
        if sink.buf:
            yield sink.take()


try:
    from io import IOBase
except ImportError:  # a port without it has no compressor to feed either
    IOBase = object


class _Sink(IOBase):
    """Where the compressor writes (a byte at a time): collected between rows."""

    def __init__(self):
        self.buf = bytearray()

    def write(self, b):
        self.buf += b
        return len(b)

    def take(self):
        out = bytes(self.buf)
        self.buf[:] = b""
        return out
