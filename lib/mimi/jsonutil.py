# JSON off the network, decoded so that every string in it is valid UTF-8.
# MicroPython's json turns a surrogate-pair escape ("\ud83d\ude00", how many servers
# send emoji) into two lone surrogates and lets raw CESU-8 or overlong bytes through;
# such text is refused by every later request that carries it (session history,
# MEMORY.md in the system prompt), so one emoji could break a chat for good.
import json
from mimi.utf8 import valid, clean as _text  # loaded with this module, not mid-parse next to a big body


_NESTED = (list, dict)  # made once: a tuple of types written in a call is made per call


def loads(body):
    """JSON text/bytes -> object; in every string (keys too) a surrogate pair becomes
    its character and anything else that is not valid UTF-8 becomes U+FFFD."""
    return clean(json.loads(body))


def clean(obj):
    """obj (decoded JSON) with every string valid UTF-8 as loads() makes them; lists
    and dicts are changed in place. ValueError for a key that is not a string."""
    if isinstance(obj, str):
        return _text(obj)
    stack = [obj]
    while stack:  # no recursion: deep nesting from a server must not overflow the stack
        o = stack.pop()
        if isinstance(o, list):
            for i in range(len(o)):
                v = o[i]
                if isinstance(v, str):
                    o[i] = _text(v)
                elif isinstance(v, _NESTED):
                    stack.append(v)
        elif isinstance(o, dict):
            bad = []
            for k, v in o.items():
                if isinstance(v, _NESTED):
                    stack.append(v)
                if not isinstance(k, str):  # MicroPython's json takes {0: 1} and {null: 1}
                    raise ValueError("not JSON: an object key that is not a string")
                if not valid(k) or isinstance(v, str) and not valid(v):
                    bad.append(k)
            for k in bad:
                v = o.pop(k)
                o[_text(k)] = _text(v) if isinstance(v, str) else v
    return obj
