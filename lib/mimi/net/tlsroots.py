# Making the client SSLContext of net/tls.py: the roots of the shipped bundle and of
# the `ca_file` setting parsed into it, each one loaded or skipped with the reason
# logged. Loaded by tls.context() only while it makes one (mimi.run), then dropped.
import gc
import tls
from mimi import limits, log, board


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


def make(ca):
    """A new client context with the roots of `ca` (None: the shipped bundle and the
    `ca_file` setting). TLSFailure when there are none or no memory for them."""
    from mimi.net.http import TLSFailure

    ctx = tls.SSLContext(tls.PROTOCOL_TLS_CLIENT)
    ctx.verify_mode = tls.CERT_REQUIRED
    srcs = [ca] if ca is not None else [limits.CA_BUNDLE]
    if ca is None:
        from mimi.config.settings import cfg

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
    return ctx
