# Strict UTF-8 (RFC 3629). MicroPython only checks that lead and continuation bytes
# line up: bytes.decode() and json accept CESU-8 surrogates (ED A0 80), overlong
# forms (C0 80) and code points past U+10FFFF, and json makes "\ud83c\udf89" escapes
# two lone surrogates. Every JSON API refuses such text in a request, so once stored
# it breaks each later turn that carries it. valid() is the check (its slow part
# runs only on non-ASCII text, in C), clean()/repair() turn bad text into good.
import re

# What the structural check leaves: overlong leads, surrogates, above U+10FFFF.
_BAD = re.compile(b"[\xc0\xc1\xf5-\xff]|\xe0[\x80-\x9f]|\xed[\xa0-\xbf]|\xf0[\x80-\x8f]|\xf4[\x90-\xbf]")
ERROR = "not valid UTF-8 text (a lone surrogate, an overlong form or a stray byte)"


def valid(data):
    """Is `data` (bytes, or str as MicroPython holds it) well-formed UTF-8?"""
    if isinstance(data, str):
        n = len(data)
        data = data.encode()  # a str always has sound lead/continuation bytes
    else:
        try:
            n = len(str(data, "utf-8"))
        except UnicodeError:
            return False
    if n == len(data):
        return True  # ASCII
    return _BAD.search(data if isinstance(data, bytes) else bytes(data)) is None


def clean(s):
    """`s` itself when valid, else repaired (see repair)."""
    return s if valid(s) else repair(s.encode())


def repair(data):
    """bytes -> valid str: a CESU-8 surrogate pair becomes its character, any other
    ill-formed sequence one U+FFFD (a whole bad character, or each stray byte)."""
    if valid(data):
        return str(data, "utf-8")
    out = []
    n = len(data)
    i = start = 0
    while i < n:
        b = data[i]
        if b < 0x80:
            i += 1
            continue
        need = 1 if b < 0xE0 else 2 if b < 0xF0 else 3
        end = i + 1 + need
        if b < 0xC0 or b > 0xF7 or end > n or not _tail(data, i + 1, end):
            end = i + 1  # stray or cut short: this byte alone
        elif b == 0xED and 0xA0 <= data[i + 1] <= 0xAF and end + 3 <= n and data[end] == 0xED \
                and 0xB0 <= data[end + 1] <= 0xBF and _tail(data, end + 2, end + 3):
            out.append(str(data[start:i], "utf-8"))
            hi = ((data[i + 1] & 0x0F) << 6) | (data[i + 2] & 0x3F)
            lo = ((data[end + 1] & 0x0F) << 6) | (data[end + 2] & 0x3F)
            out.append(chr(0x10000 + (hi << 10) + lo))
            i = start = end + 3
            continue
        elif _BAD.match(bytes(data[i:i + 2])) is None:
            i = end
            continue
        out.append(str(data[start:i], "utf-8"))
        out.append("\ufffd")
        i = start = end
    out.append(str(data[start:], "utf-8"))
    return "".join(out)


def _tail(data, i, end):
    while i < end:
        if data[i] & 0xC0 != 0x80:
            return False
        i += 1
    return True
