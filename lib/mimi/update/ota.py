# Over-the-air updates, and `make deploy` over USB, through one staging path.
# App updates: a bundle (format below) of the compiled lib/mimi, default files and
# CA roots is streamed to /ota/new with every file's SHA-256 checked against the
# manifest (and the manifest's HMAC-SHA256 against the `ota_key` setting when one
# is set). `make deploy` fills /ota/new with mpremote instead (a copy of the
# installed version first, so only changed files cross the cable) plus the same
# manifest (update/staging.py). Either way verify() then re-reads every staged
# file (size and SHA-256, nothing extra) and install() swaps it in by renaming directories; the
# old version waits in /ota/prev. A reset before the swap leaves the running
# version untouched; one during the swap is finished at boot. The new version is
# on trial: it is confirmed once it showed it can do its job (update/check.py); if it
# fails to OTA_TRIAL_BOOTS times, the boot guard puts the old one back (update/boot.py,
# which also holds rollback() and the REPL's ota_status() and ota_rollback()).
# Firmware updates (optional): the MicroPython app image written to the next OTA
# slot through esp32.Partition, for boards flashed with firmware/'s table.
#
# Bundle: b"MIMIOTA1\n", then "<manifest length> <hex HMAC-SHA256 of the manifest
# or ->\n", then the manifest JSON {"format":1, "version", "files":[{"path",
# "size", "sha256"}]}, then every file's bytes in manifest order.
import os
import hashlib
import binascii
from mimi import limits, log, fs, board
from mimi.config import settings as config
from mimi.services import watchdog
from mimi.net import secrets_equal
from mimi.update.boot import (NEW, PREV, STATE, OTAError, rmtree, _state, _finish_swap,  # noqa: F401
                              _finish_rollback, _save_state, boot_check, rollback)

MAGIC = b"MIMIOTA1\n"
MANIFEST = NEW + "/manifest.json"


# --- HMAC-SHA256 (MicroPython has hashlib.sha256 but no hmac module) -----------
class HMAC:
    def __init__(self, key):
        if len(key) > 64:
            key = hashlib.sha256(key).digest()
        key = key + b"\x00" * (64 - len(key))
        self._outer = bytes(b ^ 0x5C for b in key)
        self._inner = hashlib.sha256(bytes(b ^ 0x36 for b in key))

    def update(self, data):
        self._inner.update(data)

    def hexdigest(self):
        outer = hashlib.sha256(self._outer)
        outer.update(self._inner.digest())
        return binascii.hexlify(outer.digest()).decode()


def _key():
    k = config.cfg.get("ota_key")
    return k.encode() if k else None


def _check_path(p, seen):
    """-> the path's swap unit (a name of limits.OTA_TOPS)."""
    if not isinstance(p, str) or not p.startswith("/") or len(p) > 200 or p in seen:
        raise OTAError("bad path in manifest: %r" % (p,))
    parts = p[1:].split("/")
    top = "/".join(parts[:2]) if parts[0] == "lib" else parts[0]  # /lib/<other> is the user's
    if top not in limits.OTA_TOPS or (top.endswith(".py") and len(parts) > 1):
        raise OTAError("path outside the application: %r" % p)
    for part in parts:
        if part in ("", ".", "..") or any(ord(c) < 32 or c == "\\" for c in part):
            raise OTAError("bad path in manifest: %r" % p)
    seen[p] = True
    return top


def _check_manifest(raw):
    from mimi import jsonutil

    try:
        m = jsonutil.loads(raw)
        files = m["files"]
        if m.get("format") != 1 or not isinstance(files, list) or not files:
            raise ValueError("unknown format")
    except (ValueError, KeyError, TypeError) as e:
        raise OTAError("bad manifest: %s" % e)
    seen = {}
    total = 0
    tops = []
    for f in files:
        try:
            top = _check_path(f["path"], seen)
            size = f["size"]
            digest = f["sha256"]
        except (KeyError, TypeError):
            raise OTAError("bad manifest entry")
        if not isinstance(size, int) or not 0 <= size <= limits.OTA_FILE_MAX:
            raise OTAError("bad size for %s" % f["path"])
        if not isinstance(digest, str) or len(digest) != 64:
            raise OTAError("bad sha256 for %s" % f["path"])
        total += size
        if top not in tops:
            tops.append(top)
    if total > limits.OTA_BUNDLE_MAX:
        raise OTAError("bundle too large (%d bytes)" % total)
    m["tops"] = tops
    m["total"] = total
    return m


# --- app updates ------------------------------------------------------------
class _Bundle:
    """A bundle as it arrives (download.get()'s sink): its header and manifest checked,
    then each file written to /ota/new with its SHA-256 compared as its bytes come."""

    def __init__(self, pace):
        self.pace = pace
        self.head = bytearray()  # the magic, the header line and the manifest as they come
        self.mlen = self.sig = self.raw = None
        self.files = None  # the manifest's, once checked
        self.k = 0  # the file being written
        self.out = self.h = None
        self.left = 0

    def begin(self, status, headers):
        from mimi.update import download

        download.answer(status, headers, self.pace)

    def __call__(self, mv):
        self.pace.add(len(mv))
        try:
            while len(mv):
                mv = self._header(mv) if self.files is None else self._file(mv)
        except OSError as e:  # the flash: not the connection's fault
            raise OTAError("writing the update failed: %s" % fs.why(e))

    def _header(self, mv):
        h = self.head
        m = len(MAGIC)
        if len(h) < m:
            k = min(m - len(h), len(mv))
            h.extend(mv[:k])
            if len(h) == m and h != MAGIC:
                raise OTAError("not a MimiClaw update bundle")
            return mv[k:]
        if self.mlen is None:  # "<manifest length> <HMAC or ->\n"
            i = bytes(mv[:200]).find(b"\n")
            k = i + 1 if i >= 0 else len(mv)
            h.extend(mv[:k])
            if len(h) - m > 200 or (i >= 0 and not self._line(bytes(h[m:]))):
                raise OTAError("bad bundle header")
            return mv[k:]
        k = min(self.mlen - (len(h) - self.base), len(mv))
        h.extend(mv[:k])
        if len(h) - self.base == self.mlen:
            self.raw = bytes(h[self.base:])
            self.head = None
            self._manifest()
        return mv[k:]

    def _line(self, line):
        try:
            head = line.decode().split()
        except UnicodeError:
            return False
        if len(head) != 2 or not head[0].isdigit():
            return False
        self.mlen, self.sig = int(head[0]), head[1]
        if self.mlen > limits.OTA_MANIFEST_MAX:
            raise OTAError("manifest too large")
        self.base = len(MAGIC) + len(line)
        return True

    def _manifest(self):
        key = _key()
        if key:
            mac = HMAC(key)
            mac.update(self.raw)
            if self.sig == "-":
                raise OTAError("bundle is not signed, but ota_key is set")
            if not secrets_equal(mac.hexdigest(), self.sig.lower()):
                raise OTAError("bad signature (ota_key differs or the bundle was changed)")
        else:
            log.warning("ota", "ota_key not set: checking SHA-256 only, not who made the bundle")
        m = _check_manifest(self.raw)
        free = board.fs_info()["free"]
        if m["total"] + 16 * limits.BLOCK_SIZE > free:
            raise OTAError("not enough flash: need %d bytes, %d free" % (m["total"], free))
        if self.pace.total is None:
            self.pace.total = self.base + self.mlen + m["total"]
        self.files = m["files"]
        self._next()

    def _next(self):
        """Open the next file (files of 0 bytes are done at once)."""
        while self.k < len(self.files):
            f = self.files[self.k]
            dest = NEW + f["path"]
            fs.makedirs(fs.parent(dest))
            self.out = open(dest, "wb")
            self.h = hashlib.sha256()
            self.left = f["size"]
            if self.left:
                return
            self._done()

    def _file(self, mv):
        if self.out is None:
            raise OTAError("bundle longer than its manifest says")
        k = min(self.left, len(mv))
        piece = mv[:k]
        self.h.update(piece)
        self.out.write(piece)
        self.left -= k
        if not self.left:
            self._done()
            self._next()
        return mv[k:]

    def _done(self):
        f = self.files[self.k]
        self.close()
        if binascii.hexlify(self.h.digest()).decode() != f["sha256"].lower():
            raise OTAError("SHA-256 mismatch for %s" % f["path"])
        self.k += 1

    def end(self):
        """The body ended: every file must be there."""
        if self.files is None:
            raise OTAError("bundle truncated")
        if self.k < len(self.files):
            raise OTAError("bundle truncated in %s" % self.files[self.k]["path"])

    def close(self):
        if self.out is not None:
            self.out.close()
            self.out = None


async def download(url):
    """Download and verify a bundle into /ota/new, on the asyncio loop; -> the manifest.
    Nothing of the running version changes; on any error /ota/new is removed."""
    from mimi.update import download as dl

    rmtree(NEW)
    pace = dl.Pace(url)
    sink = _Bundle(pace)
    try:
        with dl.busy(pace):
            await dl.get(url, sink, pace)
            sink.end()
            fs.write_atomic(MANIFEST, sink.raw)
            return await _stepped(_verify())  # re-read from the flash, as a deploy's is
    except BaseException:
        sink.close()
        rmtree(NEW)
        raise


def fetch(url):
    """download(url) to its end, outside the firmware's loop (the board's own REPL, tests)."""
    import asyncio

    return asyncio.run(download(url))


async def _stepped(gen):
    """A step generator run on the loop (others run between its steps) -> its value."""
    import asyncio

    while True:
        try:
            next(gen)
        except StopIteration as e:
            return e.value
        await asyncio.sleep_ms(0)


def verify():
    """Check /ota/new against its manifest.json as it is on the flash (a download's or
    a deploy's: the one check before install()): every file with the manifest's size
    and SHA-256; files the manifest does not list are removed. -> the manifest;
    OTAError naming the first bad file."""
    gen = _verify()
    while True:
        try:
            next(gen)
        except StopIteration as e:
            return e.value
        watchdog.poke()  # run from the REPL, this holds the loop


def _verify():
    """verify(), a file per step."""
    from mimi.config import defaults

    try:
        with open(MANIFEST, "rb") as f:
            raw = f.read(limits.OTA_MANIFEST_MAX + 1)
    except OSError:
        raise OTAError("nothing staged: %s is missing" % MANIFEST)
    if len(raw) > limits.OTA_MANIFEST_MAX:
        raise OTAError("manifest too large")
    m = _check_manifest(raw)
    listed = {NEW + f["path"]: f for f in m["files"]}
    listed[MANIFEST] = None
    for p in fs.walk_files(NEW):
        if p not in listed:
            os.remove(p)
            print("removed", p[len(NEW):])
    for p, f in listed.items():
        if f is None:
            continue
        if fs.size(p) != f["size"]:
            raise OTAError("%s: %d bytes staged, the manifest says %d" % (f["path"], fs.size(p), f["size"]))
        if defaults.file_hash(p) != f["sha256"].lower():
            raise OTAError("SHA-256 mismatch for %s" % f["path"])
        yield
    return m


def install(m):
    """Swap the verified /ota/new in; the running version goes to /ota/prev."""
    import mimi

    rmtree(PREV)
    fs.makedirs(PREV)
    st = {"state": "swap", "version": m.get("version", "?"), "prev": mimi.VERSION,
          "tops": m["tops"], "created": [t for t in m["tops"] if not fs.exists("/" + t)]}
    _save_state(st)
    _finish_swap(st)
    log.info("ota", "version %s installed; previous %s kept in %s", st["version"], st["prev"], PREV)


# --- firmware updates (boards flashed with firmware/'s OTA partition table) -----
class _Image:
    """A firmware image as it arrives (download.get()'s sink), written block by block to
    the slot, its SHA-256 (and HMAC with ota_key) taken on the way."""

    def __init__(self, pace, target, key):
        self.pace = pace
        self.target = target
        self.bs = target.ioctl(5, 0)
        self.capacity = target.ioctl(4, 0) * self.bs
        self.buf = bytearray(self.bs)
        self.n = 0  # bytes in buf
        self.block = self.total = 0
        self.h = hashlib.sha256()
        self.mac = HMAC(key) if key else None

    def begin(self, status, headers):
        from mimi.update import download

        download.answer(status, headers, self.pace)
        if self.pace.total is not None and self.pace.total > self.capacity:
            raise OTAError("image (%d bytes) larger than the slot (%d)" % (self.pace.total, self.capacity))

    def __call__(self, mv):
        self.pace.add(len(mv))
        while len(mv):
            k = min(self.bs - self.n, len(mv))
            self.buf[self.n:self.n + k] = mv[:k]
            self.n += k
            mv = mv[k:]
            if self.n == self.bs:
                self._write()

    def _write(self):
        if self.block == 0 and self.buf[0] != 0xE9:
            raise OTAError("not an ESP32 app image")
        if (self.block + 1) * self.bs > self.capacity:
            raise OTAError("image larger than the slot (%d)" % self.capacity)
        view = memoryview(self.buf)[:self.n]
        self.h.update(view)
        if self.mac:
            self.mac.update(view)
        for i in range(self.n, self.bs):
            self.buf[i] = 0xFF
        try:
            self.target.writeblocks(self.block, self.buf)
        except OSError as e:
            raise OTAError("writing the firmware slot failed: %s" % e)
        self.block += 1
        self.total += self.n
        self.n = 0

    def end(self):
        if self.n:
            self._write()
        if self.total == 0:
            raise OTAError("empty image")

    def read_back(self, raw):
        """Every block read back from the slot: the same SHA-256 (a block per step)."""
        back = hashlib.sha256()
        for i in range(self.block):
            self.target.readblocks(i, self.buf)
            back.update(memoryview(self.buf)[:min(self.bs, self.total - i * self.bs)])
            yield
        if back.digest() != raw:
            raise OTAError("flash read-back differs; the slot is not used")


class _Small:
    """A short body (an image's .sig) -> .data."""

    def __init__(self, pace, most):
        self.pace = pace
        self.most = most
        self.data = b""

    def begin(self, status, headers):
        from mimi.update import download

        download.answer(status, headers, self.pace)

    def __call__(self, mv):
        self.pace.add(len(mv))
        if len(self.data) + len(mv) > self.most:
            raise OTAError("%s: more than %d bytes" % (self.pace.url, self.most))
        self.data += bytes(mv)


async def firmware(url, sha256=None):
    """Write the MicroPython app image at url to the next OTA slot and make it the one
    that boots, on the asyncio loop; -> its SHA-256. The slot is only made bootable after
    the whole image checked out."""
    from mimi.update import download as dl

    P = getattr(board, "Partition", None)
    if P is None:
        raise OTAError("this firmware has no esp32.Partition")
    try:
        target = P(P.RUNNING).get_next_update()
    except OSError:
        raise OTAError("no OTA slots: flash a firmware built with firmware/'s partition table")
    key = _key()
    sig = None
    if key:
        pace = dl.Pace(url + ".sig")
        small = _Small(pace, 128)
        with dl.busy(pace):
            await dl.get(url + ".sig", small, pace)
        try:
            sig = small.data.decode().strip().lower()
        except UnicodeError:
            raise OTAError("%s.sig is not a hex HMAC" % url)
    pace = dl.Pace(url)
    image = _Image(pace, target, key)
    with dl.busy(pace):
        await dl.get(url, image, pace)
        image.end()
        raw = image.h.digest()
        digest = binascii.hexlify(raw).decode()
        if sha256 and digest != sha256.lower():
            raise OTAError("SHA-256 mismatch: got %s" % digest)
        if image.mac and not secrets_equal(image.mac.hexdigest(), sig):
            raise OTAError("bad signature (ota_key differs or the image was changed)")
        await _stepped(image.read_back(raw))
    target.set_boot()
    log.info("ota", "firmware %d bytes written to %s (sha256 %s)", image.total, target.info()[4], digest)
    return digest


def update_firmware(url, sha256=None, reboot=True):
    """firmware(url, sha256) to its end, outside the firmware's loop; then boot it."""
    import asyncio

    digest = asyncio.run(firmware(url, sha256))
    if reboot:
        board.reset()
    return digest


# --- REPL commands ----------------------------------------------------------
def ota_update(url):
    """Download, verify and install an application bundle, then restart into it. While
    the firmware runs, the download is a task on its loop (nothing else waits for it):
    this returns at once, and what happens is printed and logged."""
    from mimi.update import download

    download.start(_update(url))


async def _update(url):
    try:
        m = await download(url)
        install(m)
    except OTAError as e:
        log.error("ota", "update from %s failed: %s", url, e)
        print("Error:", e)
        print("Nothing changed; the running version stays.")
        return
    print("OK: version %s installed (%d files); restarting. If it fails to come up %d times,"
          " the previous version comes back." % (m.get("version"), len(m["files"]), limits.OTA_TRIAL_BOOTS))
    board.reset()


def ota_firmware(url, sha256=None):
    """Optional: update the MicroPython firmware itself (needs OTA slots); like
    ota_update(), a task on the loop while the firmware runs."""
    from mimi.update import download

    download.start(_firmware(url, sha256))


async def _firmware(url, sha256):
    try:
        await firmware(url, sha256)
    except OTAError as e:
        log.error("ota", "firmware update from %s failed: %s", url, e)
        print("Error:", e)
        return
    print("OK: firmware written; restarting into it.")
    board.reset()
