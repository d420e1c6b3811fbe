# Making the client SSLContext of net/tls.py: the roots of the shipped bundle and of
# the `ca_file` setting parsed into it, each one loaded or skipped with the reason
# logged. Loaded by tls.context() only while it makes one (mimi.run), then dropped;
# config_set('ca_file', ...) loads it for check().
# What ca_file holds never costs the shipped roots: a certificate that does not
# decode or parse is skipped and named (its position, its subject when readable);
# a file over limits.CA_FILE_MAX, or a certificate over CA_CERT_MAX, is not read
# into memory at all.
import gc
import os
import tls
from mimi import limits, log, board, fs


def _tlv(d, i):
    """(tag, start of the content, end) of the DER element at d[i]."""
    tag, n = d[i], d[i + 1]
    i += 2
    if n & 0x80:
        k = n & 0x7F
        if not 0 < k <= 3:
            raise ValueError
        n = int.from_bytes(d[i:i + k], "big")
        i += k
    return tag, i, i + n


def subject(der):
    """'CN=...' (else 'O=...') of a certificate's subject, or None when unreadable
    (also from a certificate cut short, as long as the subject is whole)."""
    try:
        i = _tlv(der, _tlv(der, 0)[1])[1]  # Certificate, tbsCertificate
        if der[i] == 0xA0:  # [0] version
            i = _tlv(der, i)[2]
        for _ in range(4):  # serial, signature algorithm, issuer, validity
            i = _tlv(der, i)[2]
        _, i, end = _tlv(der, i)
        found = {}
        while i < end:
            _, j, i = _tlv(der, i)  # a RelativeDistinguishedName (SET)
            _, j, _ = _tlv(der, j)  # its first AttributeTypeAndValue (SEQUENCE)
            _, a, b = _tlv(der, j)  # the attribute's OID
            _, c, e = _tlv(der, b)  # its value
            if e <= len(der) and der[a:b] in (b"\x55\x04\x03", b"\x55\x04\x0a"):
                found[der[b - 1]] = fs.decode(der[c:e])[:60]
        v = found.get(3)
        return "CN=" + v if v else "O=" + found[10] if found.get(10) else None
    except (IndexError, ValueError):
        return None


def _pem(readline):
    """((number, line, name), DER or None, why) of every certificate in PEM text, read
    line by line (readline(limit) -> bytes, b"" at the end); the name is the '# ...'
    line before it."""
    import binascii

    most = (limits.CA_CERT_MAX + 2) // 3 * 4  # base64 characters of the largest certificate
    name, block, size, n, line, start, whole = None, None, 0, 0, 0, 0, True
    while True:
        ln = readline(limits.CA_LINE_MAX)
        if not ln:
            break
        line += whole  # a longer line comes in pieces
        whole = ln[-1:] == b"\n"
        ln = ln.strip()
        if ln == b"-----BEGIN CERTIFICATE-----":
            if block is not None:
                n += 1
                yield (n, start, name), None, "no END line (cut short?)"
                name = None
            block, size, start = [], 0, line
        elif ln == b"-----END CERTIFICATE-----" and block is not None:
            n += 1
            der, why = None, None
            if size > most:
                why = "over %d bytes" % limits.CA_CERT_MAX
            else:
                try:
                    der = binascii.a2b_base64(b"".join(block))
                except ValueError as e:
                    why = "not valid base64 (%s)" % e
            yield (n, start, name), der, why
            block = name = None
        elif block is not None:
            size += len(ln)
            if size <= most:  # past that the block is only counted, never kept
                block.append(ln)
        elif ln.startswith(b"#"):
            name = fs.decode(ln[1:].strip())[:60]
    if block is not None:
        yield (n + 1, start, name), None, "no END line (cut short?)"


def _where(pos, der):
    """A skipped certificate for a person: its number, line, the '# ...' line before it
    (tools/cabundle.py writes one) and its subject when readable."""
    n, line, name = pos
    words = [w for w in (name, der and subject(der)) if w]
    return "certificate %d%s%s" % (n, " at line %d" % line if line else "",
                                   " (%s)" % "; ".join(words) if words else "")


def _sources(ca, cap=0):
    """(label, iterator of (position, DER or None, why): _pem()) for a file path or PEM/DER bytes;
    (label, None) when the path names no file. ValueError when it cannot be read as
    roots at all (a folder, over `cap` bytes)."""
    if isinstance(ca, str) and ca.startswith("-----"):
        ca = ca.encode()
    if not isinstance(ca, str):
        ca = bytes(ca)
        if ca[:1] == b"\x30":  # an ASN.1 SEQUENCE: one DER certificate
            return "(bytes)", iter((((1, 0, None), ca, None),))
        lines = iter(ca.splitlines(True))
        return "(bytes)", _pem(lambda limit: next(lines, b""))
    try:
        st = os.stat(ca)
    except OSError:
        return ca, None
    if st[0] & 0x4000:
        raise ValueError("a folder, not a file")
    if cap and st[6] > cap:
        raise ValueError("%d bytes, over the %d KB a CA file may have" % (st[6], cap // 1024))

    def read():
        with open(ca, "rb") as f:
            if f.read(1) == b"\x30":
                if st[6] > limits.CA_CERT_MAX:
                    yield (1, 0, "DER"), None, "over %d bytes" % limits.CA_CERT_MAX
                    return
                f.seek(0)
                der = f.read()
                yield (1, 0, None), der, None
                return
            f.seek(0)
            yield from _pem(f.readline)  # line by line: no copy of the file

    return ca, read()


def _short():
    """Is the C heap (where mbedTLS keeps roots and buffers) nearly full?"""
    room = board.c_heap_largest()
    return room is not None and room < limits.TLS_ROOT_ROOM


def load(ctx, ca, cap=0):
    """Add the roots of `ca` (path, PEM or DER bytes) to ctx -> (loaded, [skipped:
    "where: why"]); None when `ca` is a path with no file. ValueError when it cannot
    be read as roots (_sources); MemoryError when memory ran out (roots would be lost)."""
    label, certs = _sources(ca, cap)
    if certs is None:
        return None
    n, skipped = 0, []
    try:
        for pos, der, why in certs:
            for attempt in (0, 1):
                if der is None:
                    break
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
                        why = "mbedTLS cannot parse it"
            if why:
                skipped.append("%s: %s" % (_where(pos, der), why))
            der = None
    finally:  # a file's reader stopped midway: its file closed now, not by the GC
        if hasattr(certs, "close"):
            certs.close()
    return n, skipped


def _report(label, n, skipped):
    for why in skipped[:limits.CA_SKIPPED_NAMED]:  # a file of junk must not flood the log
        log.warning("tls", "%s: skipped %s", label, why)
    if skipped:
        log.warning("tls", "%s: %d roots loaded, %d skipped", label, n, len(skipped))
    elif n:
        log.info("tls", "%s: %d roots loaded", label, n)
    else:
        log.warning("tls", "%s: no certificate in it", label)


def make(ca):
    """A new client context with the roots of `ca` (None: the shipped bundle and the
    `ca_file` setting). TLSFailure when there are none or no memory for them; whatever
    ca_file holds, the shipped roots stay."""
    from mimi.net.http import _err  # (net/httperr.py: loaded by the first error, not here)

    ctx = tls.SSLContext(tls.PROTOCOL_TLS_CLIENT)
    ctx.verify_mode = tls.CERT_REQUIRED
    try:
        got = load(ctx, limits.CA_BUNDLE if ca is None else ca)
    except ValueError as e:
        got = e
    except MemoryError as e:
        raise _err("TLSFailure", str(e))
    label = limits.CA_BUNDLE if ca is None else ca if isinstance(ca, str) else "(bytes)"
    if not isinstance(got, tuple):
        raise _err("TLSFailure", "no CA bundle at %s (%s): refusing HTTPS without certificate "
                   "verification (build the image with tools/mkimage.py)" % (label, got or "no such file"))
    _report(label, *got)
    total = got[0]
    if ca is None:
        from mimi.config.settings import cfg

        path = cfg.get("ca_file")
        if path:
            try:
                mine = load(ctx, path, limits.CA_FILE_MAX)
            except MemoryError as e:
                raise _err("TLSFailure", str(e))
            except (ValueError, OSError) as e:  # OSError: the file could not be read
                mine = "not loaded: %s" % e
            if mine is None:
                mine = "no such file"
            if isinstance(mine, tuple):
                _report("ca_file " + path, *mine)
                if not mine[0]:
                    log.warning("tls", "ca_file %s: only the shipped roots are trusted", path)
                total += mine[0]
            else:
                log.error("tls", "ca_file %s: %s; only the shipped roots are trusted", path, mine)
    if not total:
        raise _err("TLSFailure", "CA bundle %s holds no usable certificate" % label)
    return ctx


def check(path):
    """config_set's look at a new `ca_file`: ValueError unless it is a file within
    the cap holding at least one root mbedTLS can parse -> its (loaded, skipped)."""
    ctx = tls.SSLContext(tls.PROTOCOL_TLS_CLIENT)
    try:
        got = load(ctx, path, limits.CA_FILE_MAX)
    except MemoryError:
        raise ValueError("no memory to check its roots now; try again")
    except OSError as e:
        raise ValueError("cannot read it (%s)" % e)
    finally:
        ctx = None
        gc.collect()
    if got is None:
        raise ValueError("no such file (copy it to the board first, e.g. mpremote cp "
                         "mine.pem :%s)" % path)
    if not got[0]:
        raise ValueError("holds no certificate mbedTLS can parse%s"
                         % (" (%s)" % "; ".join(got[1][:limits.CA_SKIPPED_NAMED]) if got[1] else
                            " (a PEM file has -----BEGIN CERTIFICATE----- blocks)"))
    if got[1]:
        _report("ca_file " + path, *got)
    return got
