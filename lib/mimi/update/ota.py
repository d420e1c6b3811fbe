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


# --- download (the firmware's one HTTP client: verified TLS, proxy, redirects) ---
def _open(url):
    """GET url, following redirects: an http.Stream of a 200 answer."""
    from mimi.net import http, httpstream

    try:
        st = httpstream.open_url(url, {"User-Agent": "MimiClaw-OTA"}, proxy=http.proxy_from_config(config.cfg),
                                 timeout_s=limits.OTA_DEADLINE_S, idle_s=limits.OTA_IDLE_S)
    except ValueError as e:  # not an http(s) URL
        raise OTAError(str(e))
    except (http.ConnectFailure, http.TLSFailure) as e:
        raise OTAError("cannot connect (%s)" % e)
    except http.HTTPError as e:
        raise OTAError("download failed: %s" % e)
    if st.status != 200:
        st.close()
        raise OTAError("download failed: HTTP %d" % st.status)
    return st


def _exactly(body, n):
    out = bytearray()
    while len(out) < n:
        data = body.read(min(n - len(out), limits.OTA_CHUNK))
        if not data:
            raise OTAError("bundle truncated")
        out.extend(data)
    return bytes(out)


def _line(body, limit):
    out = bytearray()
    while not out.endswith(b"\n"):
        c = body.read(1)
        if not c or len(out) >= limit:
            raise OTAError("bad bundle header")
        out.extend(c)
    return bytes(out)


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
def fetch(url):
    """Download and verify a bundle into /ota/new; the manifest. Nothing of the
    running version changes; on any error /ota/new is removed."""
    from mimi.net.http import HTTPError

    rmtree(NEW)
    body = _open(url)
    try:
        if _exactly(body, len(MAGIC)) != MAGIC:
            raise OTAError("not a MimiClaw update bundle")
        head = _line(body, 200).decode().split()
        if len(head) != 2 or not head[0].isdigit():
            raise OTAError("bad bundle header")
        mlen = int(head[0])
        if mlen > limits.OTA_MANIFEST_MAX:
            raise OTAError("manifest too large")
        raw = _exactly(body, mlen)
        key = _key()
        if key:
            mac = HMAC(key)
            mac.update(raw)
            if head[1] == "-":
                raise OTAError("bundle is not signed, but ota_key is set")
            if not secrets_equal(mac.hexdigest(), head[1].lower()):
                raise OTAError("bad signature (ota_key differs or the bundle was changed)")
        else:
            log.warning("ota", "ota_key not set: checking SHA-256 only, not who made the bundle")
        m = _check_manifest(raw)
        free = board.fs_info()["free"]
        if m["total"] + 16 * limits.BLOCK_SIZE > free:
            raise OTAError("not enough flash: need %d bytes, %d free" % (m["total"], free))
        buf = memoryview(bytearray(limits.OTA_CHUNK))
        for f in m["files"]:
            dest = NEW + f["path"]
            fs.makedirs(fs.parent(dest))
            h = hashlib.sha256()
            left = f["size"]
            with open(dest, "wb") as out:
                while left:
                    n = body.readinto(buf[:min(left, len(buf))])
                    if not n:
                        raise OTAError("bundle truncated in %s" % f["path"])
                    h.update(buf[:n])
                    out.write(buf[:n])
                    left -= n
                    watchdog.poke()  # run from the REPL, this holds the loop
            if binascii.hexlify(h.digest()).decode() != f["sha256"].lower():
                raise OTAError("SHA-256 mismatch for %s" % f["path"])
        fs.write_atomic(MANIFEST, raw)
        return verify()  # re-read from the flash, as a deploy's is
    except (OSError, HTTPError) as e:
        rmtree(NEW)
        raise OTAError("download failed: %s" % e)
    except BaseException:
        rmtree(NEW)
        raise
    finally:
        body.close()


def verify():
    """Check /ota/new against its manifest.json as it is on the flash (a download's or
    a deploy's: the one check before install()): every file with the manifest's size
    and SHA-256; files the manifest does not list are removed. -> the manifest;
    OTAError naming the first bad file."""
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
        watchdog.poke()  # run from the REPL, this holds the loop
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
def update_firmware(url, sha256=None, reboot=True):
    """Write the MicroPython app image at url to the next OTA slot and boot it.
    The slot is only made bootable after the whole image checked out."""
    P = getattr(board, "Partition", None)
    if P is None:
        raise OTAError("this firmware has no esp32.Partition")
    try:
        target = P(P.RUNNING).get_next_update()
    except OSError:
        raise OTAError("no OTA slots: flash a firmware built with firmware/'s partition table")
    bs = target.ioctl(5, 0)
    capacity = target.ioctl(4, 0) * bs
    key = _key()
    sig = None
    from mimi.net.http import HTTPError

    if key:
        sigbody = _open(url + ".sig")
        try:
            sig = _exactly(sigbody, 64).decode().lower()
        except HTTPError as e:
            raise OTAError("download failed: %s" % e)
        finally:
            sigbody.close()
    body = _open(url)
    h = hashlib.sha256()
    mac = HMAC(key) if key else None
    buf = bytearray(bs)
    mv = memoryview(buf)
    block = total = 0
    try:
        if body.length is not None and body.length > capacity:
            raise OTAError("image (%d bytes) larger than the slot (%d)" % (body.length, capacity))
        while True:
            n = 0
            while n < bs:
                k = body.readinto(mv[n:])
                if not k:
                    break
                n += k
            if n == 0:
                break
            if block == 0 and buf[0] != 0xE9:
                raise OTAError("not an ESP32 app image")
            if (block + 1) * bs > capacity:
                raise OTAError("image larger than the slot (%d)" % capacity)
            view = mv[:n]
            h.update(view)
            if mac:
                mac.update(view)
            for i in range(n, bs):
                buf[i] = 0xFF
            target.writeblocks(block, buf)
            watchdog.poke()
            block += 1
            total += n
            if n < bs:
                break
    except (OSError, HTTPError) as e:
        raise OTAError("download failed: %s" % e)
    finally:
        body.close()
    if total == 0:
        raise OTAError("empty image")
    raw = h.digest()
    digest = binascii.hexlify(raw).decode()
    if sha256 and digest != sha256.lower():
        raise OTAError("SHA-256 mismatch: got %s" % digest)
    if mac and not secrets_equal(mac.hexdigest(), sig):
        raise OTAError("bad signature (ota_key differs or the image was changed)")
    back = hashlib.sha256()
    for i in range(block):
        target.readblocks(i, buf)
        back.update(memoryview(buf)[:min(bs, total - i * bs)])
    if back.digest() != raw:
        raise OTAError("flash read-back differs; the slot is not used")
    target.set_boot()
    log.info("ota", "firmware %d bytes written to %s (sha256 %s)", total, target.info()[4], digest)
    if reboot:
        board.reset()
    return digest


# --- REPL commands ----------------------------------------------------------
def ota_update(url):
    """Download, verify and install an application bundle, then restart."""
    try:
        m = fetch(url)
        install(m)
    except OTAError as e:
        print("Error:", e)
        print("Nothing changed; the running version stays.")
        return
    print("OK: version %s installed (%d files); restarting. If it fails to come up %d times,"
          " the previous version comes back." % (m.get("version"), len(m["files"]), limits.OTA_TRIAL_BOOTS))
    board.reset()


def ota_firmware(url, sha256=None):
    """Optional: update the MicroPython firmware itself (needs OTA slots)."""
    try:
        update_firmware(url, sha256, reboot=False)
    except OTAError as e:
        print("Error:", e)
        return
    print("OK: firmware written; restarting into it.")
    board.reset()

