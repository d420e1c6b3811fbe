"""multipart/form-data as RFC 7578 and RFC 2046 define it, parsed strictly for the fakes
(Telegram's sendPhoto, Feishu's image upload): the boundary from the Content-Type, the
body opening with the first delimiter and closing with the last, every part with its
Content-Disposition: form-data and name (a file with its filename and Content-Type).
"""
import re


class Malformed(ValueError):
    pass


def boundary(ctype):
    m = re.match(r'multipart/form-data;\s*boundary=("?)([^";]{1,70})\1\s*$', ctype or "")
    if not m:
        raise Malformed("Content-Type %r is not multipart/form-data with a boundary" % ctype)
    return m.group(2).encode()


def parse(ctype, body):
    """-> {name: {"value": bytes, "filename": str or None, "type": str or None}}; Malformed."""
    b = b"--" + boundary(ctype)
    if not body.startswith(b + b"\r\n"):
        raise Malformed("the body does not open with the boundary")
    end = b"\r\n" + b + b"--\r\n"
    if not body.endswith(end):
        raise Malformed("the body does not close with the last boundary (--boundary--)")
    out = {}
    for raw in body[len(b) + 2:-len(end)].split(b"\r\n" + b + b"\r\n"):
        head, sep, value = raw.partition(b"\r\n\r\n")
        if not sep:
            raise Malformed("a part without the blank line after its headers")
        headers = {}
        for line in head.decode("utf-8").split("\r\n"):
            k, sep, v = line.partition(":")
            if not sep:
                raise Malformed("header line %r" % line)
            headers[k.strip().lower()] = v.strip()
        cd = headers.get("content-disposition", "")
        m = re.match(r'form-data;\s*name="([^"]+)"(?:;\s*filename="([^"]*)")?$', cd)
        if not m:
            raise Malformed("Content-Disposition %r" % cd)
        if m.group(2) is not None and "content-type" not in headers:
            raise Malformed("file part %r without a Content-Type" % m.group(1))
        out[m.group(1)] = {"value": value, "filename": m.group(2), "type": headers.get("content-type")}
    return out


def png_size(data):
    """(width, height) of a PNG's IHDR; Malformed when data is not a PNG."""
    import struct

    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise Malformed("not a PNG")
    return struct.unpack(">II", data[16:24])
