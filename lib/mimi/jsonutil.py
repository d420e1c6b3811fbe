# JSON decoding that MicroPython gets wrong on its own: its json module leaves a
# UTF-16 surrogate pair escape ("\\ud83d\\ude00", how many servers send emoji) as two
# lone surrogates, which are invalid UTF-8 and break every later request that
# carries the text (session history, Telegram replies).
import json


def fix_surrogates(s):
    """MicroPython's json leaves "\\ud83d\\ude00" as two lone surrogates (invalid
    UTF-8 that Telegram refuses): join pairs into one character, lone ones -> U+FFFD."""
    b = s.encode()
    i = b.find(b"\xed")
    while i >= 0 and not (i + 1 < len(b) and 0xA0 <= b[i + 1] <= 0xBF):
        i = b.find(b"\xed", i + 1)
    if i < 0:
        return s
    out = []
    hi = None
    for c in s:
        o = ord(c)
        if 0xD800 <= o <= 0xDBFF:
            if hi is not None:
                out.append("\ufffd")
            hi = o
            continue
        if 0xDC00 <= o <= 0xDFFF:
            if hi is not None:
                out.append(chr(0x10000 + ((hi - 0xD800) << 10) + (o - 0xDC00)))
                hi = None
            else:
                out.append("\ufffd")
            continue
        if hi is not None:
            out.append("\ufffd")
            hi = None
        out.append(c)
    if hi is not None:
        out.append("\ufffd")
    return "".join(out)


def _fix_tree(o):
    if isinstance(o, str):
        return fix_surrogates(o)
    if isinstance(o, list):
        return [_fix_tree(x) for x in o]
    if isinstance(o, dict):
        return {k: _fix_tree(v) for k, v in o.items()}
    return o


def loads(body):
    """JSON text/bytes -> object, with surrogate-pair escapes joined into characters."""
    obj = json.loads(body)
    if isinstance(body, str):
        has = "\\ud" in body or "\\uD" in body
    else:
        has = b"\\ud" in body or b"\\uD" in body
    return _fix_tree(obj) if has else obj
