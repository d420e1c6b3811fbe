# TLS for every HTTPS client of the firmware (LLM, Telegram, web search, OTA):
# - ONE client SSLContext per process: the shipped roots (limits.CA_BUNDLE) and the
#   user's own (setting `ca_file`) are parsed once and shared; mbedTLS keeps each
#   parsed root in C memory (~54 KB for a whole bundle on the board), so a context
#   per client cost that again and again.
# - Roots loaded and skipped are logged with the reason. On the board a root that
#   fails to parse for lack of memory raises the same ValueError as a bad one: a
#   failed root is tried again after gc.collect(), and when memory is short the whole
#   context fails (and is built again next time) instead of silently losing roots.
# - At most one TLS connection where the board cannot afford two: while the agent's
#   LLM call is in flight (`priority()`), a client on the loop (Telegram's long poll)
#   asks `must_yield()` and closes or does not open its connection. Decided by the C
#   heap's largest free block at that moment (board.c_heap_largest()), so a board with
#   PSRAM never waits.
import gc
import os
import time
import _thread
import tls
from mimi import limits, log, board

_lock = _thread.allocate_lock()
_contexts = {}  # key (None: the shipped roots + ca_file) -> SSLContext
_watchers = []  # fn() called when an LLM call starts or ends
made = 0  # SSLContexts made (roots parsed)
handshakes = 0
open_now = 0  # TLS connections open
open_peak = 0
busy = 0  # LLM calls in flight (priority())


def _pem(lines):
    """(name, DER) of every certificate in PEM lines; the name is the '# ...' comment
    line before it (tools/cabundle.py writes one), else its number."""
    import binascii

    name, block, n = None, None, 0
    for ln in lines:
        ln = ln.strip()
        if ln.startswith(b"#"):
            name = ln[1:].strip().decode()
        elif ln == b"-----BEGIN CERTIFICATE-----":
            block = []
        elif ln == b"-----END CERTIFICATE-----" and block is not None:
            n += 1
            yield name or "certificate %d" % n, binascii.a2b_base64(b"".join(block))
            block = name = None
        elif block is not None:
            block.append(ln)


def _sources(ca):
    """(label, iterator of (name, DER)) for a file path or PEM/DER bytes."""
    if isinstance(ca, str) and ca.startswith("-----"):
        ca = ca.encode()
    if not isinstance(ca, str):
        ca = bytes(ca)
        if ca[:1] == b"\x30":  # an ASN.1 SEQUENCE: one DER certificate
            return "(bytes)", iter((("certificate 1", ca),))
        return "(bytes)", _pem(ca.split(b"\n"))
    try:
        f = open(ca, "rb")
    except OSError:
        return ca, None

    def read():
        with f:
            if f.read(1) == b"\x30":
                f.seek(0)
                yield "certificate 1", f.read()
                return
            f.seek(0)
            yield from _pem(f)  # line by line: no copy of the file

    return ca, read()


def _short():
    """Is the C heap (where mbedTLS keeps roots and buffers) nearly full?"""
    room = board.c_heap_largest()
    return room is not None and room < limits.TLS_ROOT_ROOM


def load(ctx, ca):
    """Add the roots of `ca` (path, PEM or DER bytes) to ctx -> how many; None when `ca`
    is a path with no file. MemoryError when memory ran out (roots would be lost)."""
    label, certs = _sources(ca)
    if certs is None:
        return None
    n, skipped = 0, []
    for name, der in certs:
        for attempt in (0, 1):
            try:
                ctx.load_verify_locations(der)
                n += 1
                break
            except ValueError:
                if attempt == 0:
                    gc.collect()  # perhaps memory, not the root: once more
                elif _short():
                    raise MemoryError("no memory for the CA roots of %s (%d loaded)" % (label, n))
                else:
                    skipped.append(name)
    if skipped:
        log.warning("tls", "%s: %d roots loaded, %d skipped (mbedTLS cannot parse them): %s",
                    label, n, len(skipped), ", ".join(skipped))
    else:
        log.info("tls", "%s: %d roots loaded", label, n)
    return n


def _make(ca):
    from mimi.net.http import TLSFailure

    global made
    ctx = tls.SSLContext(tls.PROTOCOL_TLS_CLIENT)
    ctx.verify_mode = tls.CERT_REQUIRED
    srcs = [ca] if ca is not None else [limits.CA_BUNDLE]
    if ca is None:
        from mimi.config import cfg

        if cfg.get("ca_file"):
            srcs.append(cfg.get("ca_file"))
    total = 0
    for src in srcs:
        try:
            n = load(ctx, src)
        except MemoryError as e:
            raise TLSFailure(str(e))
        if n is None:
            if src is ca or src == limits.CA_BUNDLE:
                raise TLSFailure("no CA bundle at %s: refusing HTTPS without certificate "
                                 "verification (build the image with tools/mkimage.py)" % src)
            log.error("tls", "ca_file %s: no such file; only the shipped roots are trusted", src)
        total += n or 0
    if not total:
        raise TLSFailure("CA bundle %s holds no usable certificate"
                         % (ca if isinstance(ca, str) else "(bytes)"))
    made += 1
    return ctx


def _stamp(path):
    try:
        st = os.stat(path)
        return st[6], st[8]  # size, mtime
    except (OSError, TypeError):
        return None


def context(ca=None):
    """The shared client context (None: the shipped roots and the `ca_file` setting), or
    one for a given root file or PEM/DER bytes (tests, a server with its own CA); made
    once and kept. TLSFailure when there are no roots or no memory for them."""
    key = ca if ca is None or isinstance(ca, str) else bytes(ca)
    if ca is None:  # a changed setting or root file (OTA, the user's) makes a new one
        from mimi.config import cfg

        key = (None, cfg.get("ca_file"), _stamp(limits.CA_BUNDLE), _stamp(cfg.get("ca_file")))
    with _lock:
        ctx = _contexts.get(key)
        if ctx is None:
            if ca is None:  # the old shared context goes with the old setting
                for k in [k for k in _contexts if isinstance(k, tuple)]:
                    del _contexts[k]
            ctx = _contexts[key] = _make(ca)
        return ctx


def wrap(sock, host, ca=None):
    """sock wrapped for a verified connection to host (the handshake runs on the first
    read or write); counted until closed()."""
    global handshakes, open_now, open_peak
    s = context(ca).wrap_socket(sock, server_hostname=host, do_handshake_on_connect=False)
    with _lock:
        handshakes += 1
        open_now += 1
        open_peak = max(open_peak, open_now)
    return s


def closed():
    global open_now
    with _lock:
        open_now -= 1


def stats():
    return {"contexts": made, "handshakes": handshakes, "open": open_now, "open_peak": open_peak}


def tight():
    """True when the board cannot afford one more TLS connection now."""
    room = board.c_heap_largest()
    return room is not None and room < limits.TLS_CONN_ROOM


def must_yield():
    """For clients on the loop: close (or don't open) a TLS connection now, the agent's
    LLM call needs the memory."""
    return busy > 0 and tight()


def watch(fn):
    """fn() is called (from the agent thread) when an LLM call starts or ends."""
    if fn not in _watchers:
        _watchers.append(fn)


class priority:
    """`with tls.priority(client):` around an LLM request: clients on the loop yield
    while it runs (when memory is tight), and it waits a little for their connections
    to close (not for `client`'s own)."""

    def __init__(self, client=None):
        self.mine = 1 if getattr(client, "_wrapped", False) else 0

    def __enter__(self):
        global busy
        with _lock:
            busy += 1
        for fn in _watchers:
            fn()
        waited = 0
        while open_now > self.mine and tight() and waited < limits.TLS_YIELD_WAIT_MS:
            time.sleep_ms(limits.TLS_YIELD_POLL_MS)
            waited += limits.TLS_YIELD_POLL_MS
        return self

    def __exit__(self, *exc):
        global busy
        with _lock:
            busy -= 1
        for fn in _watchers:
            fn()
