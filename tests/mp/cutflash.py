# A flash chip in RAM that loses power at a chosen moment, for MicroPython's VfsLfs2
# (tests/mp/powercut.py, tests/mp/test_cutflash.py).
BS = 4096


class CutFlash:
    """A flash chip in RAM for VfsLfs2 (MicroPython's block protocol with offsets).
    While `sampling`, every program and erase is a moment power may go: one of them,
    each equally likely (reservoir sampling), is kept in `snap` as the chip's bytes at
    that moment, the operation itself not done or, torn, done only part way."""

    def __init__(self, data, rng=None):
        self.data = data
        self.mv = memoryview(data)
        self.rng = rng
        self.arm(False)

    def arm(self, sampling, at=None, tear=None):
        """Count from 0 again; with `at`, the cut is that program or erase (torn to
        `tear` bytes, or not done when None) instead of a random one."""
        self.sampling = sampling
        self.ops = 0
        self.snap = None
        self.at = at
        self.tear = tear

    def _moment(self, addr, buf, n):
        self.ops += 1
        if not self.sampling:
            return
        if self.at:
            if self.ops != self.at:
                return
            k = self.tear
        else:
            if self.rng.randint(1, self.ops) != 1:
                return
            k = self.rng.randint(0, n - 1) if self.rng.getrandbits(1) else None
        self.snap = None  # (the last pick's copy goes first: two never need to fit at once)
        snap = bytearray(self.data)
        torn = None
        if k is not None:  # the first k bytes made it
            k = min(k, n - 1)
            snap[addr:addr + k] = b"\xff" * k if buf is None else buf[:k]
            torn = ("erase" if buf is None else "program", k, n)
        self.snap = (snap, self.ops, torn)

    def readblocks(self, block, buf, off=0):
        a = block * BS + off
        buf[:] = self.mv[a:a + len(buf)]

    def writeblocks(self, block, buf, off=0):
        a = block * BS + off
        self._moment(a, buf, len(buf))
        self.mv[a:a + len(buf)] = buf

    def ioctl(self, op, arg):
        if op == 4:
            return len(self.data) // BS
        if op == 5:
            return BS
        if op == 6:  # erase
            a = arg * BS
            self._moment(a, None, BS)
            self.mv[a:a + BS] = b"\xff" * BS
        return 0
