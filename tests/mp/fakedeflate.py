# A stand-in for MicroPython's deflate.DeflateIO writer (which the unix ports and the
# ESP32 builds of v1.28 leave out): a valid zlib stream of stored blocks, one per
# write, handed to stream.write a byte at a time as the real one does. It lets the
# chart's compressed path (two passes, the length counted first) run on every
# interpreter; CPython's zlib reads what it makes.
import struct


class FakeDeflate:
    def __init__(self, stream):
        self.stream = stream
        self.s1, self.s2 = 1, 0
        self.out(b"\x78\x01")

    def out(self, data):
        for b in data:
            self.stream.write(bytes((b,)))

    def write(self, data):
        for b in data:
            self.s1 = (self.s1 + b) % 65521
            self.s2 = (self.s2 + self.s1) % 65521
        self.out(struct.pack("<BHH", 0, len(data), len(data) ^ 0xFFFF))
        self.out(data)
        return len(data)

    def close(self):
        self.out(b"\x01\x00\x00\xff\xff" + struct.pack(">HH", self.s2, self.s1))
