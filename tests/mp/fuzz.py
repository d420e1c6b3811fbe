# Seeded, reproducible fuzzing for the MicroPython tests (tests/mp/test_fuzz_*.py):
# a PRNG that gives the same numbers on the 64-bit and the 32-bit interpreter, and
# mutators for JSON values, JSON text and raw bytes. Every case gets its own Rand
# from (seed, case number), so one failing case runs again alone:
#   FUZZ_SEED=<seed> FUZZ_CASE=<n> .venv/bin/python -m pytest tests/mp/test_fuzz_x.py -p no:xdist
# FUZZ_CASES=<n> sets the number of cases of each fuzz test (`make fuzz`); without it
# each test runs its own few (`make test`). FUZZ_SEED defaults to a fixed seed.
import os
import json

SEED = 20261203
_M = 0xFFFFFFFF


class Rand:
    """xorshift32: plain integer arithmetic, the same sequence on every interpreter."""

    def __init__(self, seed, case=0):
        x = (seed * 2654435761 + case * 40503 + 0x9E3779B9) & _M
        self.x = x or 1
        for _ in range(4):
            self.next()

    def next(self):
        x = self.x
        x ^= (x << 13) & _M
        x ^= x >> 17
        x ^= (x << 5) & _M
        self.x = x
        return x

    def below(self, n):
        return self.next() % n if n > 0 else 0

    def chance(self, k, n=100):
        return self.below(n) < k

    def pick(self, seq):
        return seq[self.below(len(seq))]

    def bytes(self, n):
        return bytes(self.next() & 0xFF for _ in range(n))


def seed():
    return int(os.getenv("FUZZ_SEED") or SEED)


def count(default):
    """Cases for a test: FUZZ_CASES when set (make fuzz), else `default`."""
    return int(os.getenv("FUZZ_CASES") or default)


def cases(default, what):
    """(case number, Rand) for each case of this run; FUZZ_CASE=<n> runs only that one."""
    s = seed()
    only = os.getenv("FUZZ_CASE")
    nums = [int(only)] if only else range(count(default))
    print("fuzz %s: seed %d, %d cases" % (what, s, len(nums)))
    for n in nums:
        yield n, Rand(s, n)


class Failed(AssertionError):
    pass


def fail(what, n, why, data=None):
    """An AssertionError naming the seed and case (how to run it again) and the input."""
    raise Failed("fuzz %s case %d failed (FUZZ_SEED=%d FUZZ_CASE=%d): %s\ninput: %s"
                 % (what, n, seed(), n, short(why), short(repr(data))))


def crash(what, n, e, data=None):
    """fail() for an exception that escaped, its traceback printed first."""
    import sys

    sys.print_exception(e)
    fail(what, n, "raised %s: %s" % (type(e).__name__, e), data)


def short(text, most=600):
    return text if len(text) <= most else text[:most] + "... (%d chars)" % len(text)


# ---- values ---------------------------------------------------------------

BAD_BYTES = (b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xed\xb0\x80", b"\xf4\x90\x80\x80",
             b"\xe4\xb8", b"\x80", b"\xf8\x88\x80\x80\x80", b"\xed\xa0\xbd\xed\xb8\x80")
BAD_ESCAPES = (b"\\ud800", b"\\udc00", b"\\ud83d\\ude00", b"\\ud83d", b"\\u0000", b"\\uZZZZ",
               b"\\", b"\\x41", b"\\ud83d\\u0041")
WORDS = ("", " ", "x", "hello", "\u4e2d\u6587", "\U0001f389", "null", "/reset", "/start@other_bot",
         "<think>", "</think>", "\n", "\r\n", "\x00", "\"", "\\", "%s%d", "../../etc/passwd")


def big_string(r, most=4096):
    n = r.below(most) + 1
    piece = r.pick(("a", "\u4e2d", "\U0001f389", "\\", "\"", "<think>", " "))
    return (piece * (n // len(piece.encode()) + 1))[:n]


def junk(r, depth=0, huge=False):
    """A JSON value of any type: what a field holds when it holds the wrong thing."""
    k = r.below(16)
    if k == 0:
        return None
    if k == 1:
        return r.pick((True, False))
    if k == 2:
        return r.pick((0, -1, 1, 7, 2 ** 31 - 1, 2 ** 31, -2 ** 31 - 1, 2 ** 63, -2 ** 63, 10 ** 30))
    if k == 3:
        return r.pick((0.5, -1.5, 1e308, -1e308, 1e-308, 3.0))
    if k <= 6:
        return r.pick(WORDS)
    if k == 7:
        return big_string(r, 70000 if huge else 4096)
    if k == 8:
        return nested(r, r.below(40) + 1)
    if k <= 10 and depth < 3:
        return [junk(r, depth + 1) for _ in range(r.below(4))]
    if k <= 12 and depth < 3:
        return {r.pick(("type", "text", "id", "name", "x", "")): junk(r, depth + 1)
                for _ in range(r.below(4))}
    return str(r.next())


def nested(r, n):
    v = r.pick(([], {}, "x", 1))
    for _ in range(n):
        v = [v] if r.chance(50) else {"a": v}
    return v


def mutate(r, obj, huge=False):
    """A copy of obj (decoded JSON) with 1-3 changes: a key dropped, a value of the
    wrong type, a huge or strange string, extra nesting, extra keys."""
    obj = _copy(obj)
    for _ in range(r.below(3) + 1):
        obj = _mutate_once(r, obj, huge)
    return obj


def _copy(o):
    if isinstance(o, dict):
        return {k: _copy(v) for k, v in o.items()}
    if isinstance(o, list):
        return [_copy(v) for v in o]
    return o


def _nodes(obj, out, parent=None, key=None):
    out.append((parent, key, obj))
    if isinstance(obj, dict):
        for k in list(obj):
            _nodes(obj[k], out, obj, k)
    elif isinstance(obj, list):
        for i in range(len(obj)):
            _nodes(obj[i], out, obj, i)
    return out


def _mutate_once(r, obj, huge):
    nodes = _nodes(obj, [])
    parent, key, node = nodes[r.below(len(nodes))]
    k = r.below(10)
    if k <= 1 and isinstance(parent, dict):
        del parent[key]
        return obj
    if k == 2 and isinstance(node, (dict, list)):
        if isinstance(node, dict):
            node[r.pick(("type", "id", "text", "extra", "\u4e2d"))] = junk(r, 1, huge)
        else:
            node.append(junk(r, 1, huge))
        return obj
    if k == 3 and isinstance(node, str):
        new = node + r.pick(WORDS) if r.chance(50) else big_string(r, 70000 if huge else 2000)
    elif k == 4:
        new = nested(r, r.below(30) + 1)
    else:
        new = junk(r, 0, huge)
    if parent is None:
        return new
    parent[key] = new
    return obj


def dumps(obj):
    return json.dumps(obj).encode()


def garble(r, data):
    """JSON text (bytes) with 1-2 byte-level faults: invalid UTF-8 or a bad escape inside
    a string, cut short, bytes changed, a deeply nested prefix, a key not a string."""
    for _ in range(r.below(2) + 1):
        data = _garble_once(r, data)
    return data


def _in_string(r, data):
    """A position just inside some string of data (after a quote), else anywhere."""
    q = []
    i = data.find(b'"')
    while i >= 0 and len(q) < 64:
        q.append(i + 1)
        i = data.find(b'"', i + 1)
    return r.pick(q) if q else r.below(len(data) + 1)


def _garble_once(r, data):
    k = r.below(9)
    if k == 8:  # what MicroPython's json takes and JSON does not: keys that are not strings
        i = data.find(b"{")
        return data if i < 0 else data[:i + 1] + r.pick((b"0: 1, ", b"null: 1, ", b'1"x": 2, ')) + data[i + 1:]
    if k <= 1:
        i = _in_string(r, data)
        return data[:i] + r.pick(BAD_BYTES) + data[i:]
    if k <= 3:
        i = _in_string(r, data)
        return data[:i] + r.pick(BAD_ESCAPES) + data[i:]
    if k == 4:
        return data[:r.below(len(data) + 1)]
    if k == 5 and data:
        b = bytearray(data)
        for _ in range(r.below(4) + 1):
            b[r.below(len(b))] = r.pick(b'{}[]",:\\0\x00 \xff')
        return bytes(b)
    if k == 6:
        n = r.below(2000) + 1
        return b"[" * n + data + b"]" * r.below(n + 1)
    return data + r.pick((b"}", b"]", b",", b" garbage", b"\x00"))


def chunked(r, body, most):
    """body in HTTP/1.1 chunked encoding, pieces of 1..most bytes (random)."""
    out = []
    i = 0
    while i < len(body):
        k = r.below(most) + 1
        out.append(b"%x\r\n%s\r\n" % (len(body[i:i + k]), body[i:i + k]))
        i += k
    return b"".join(out) + b"0\r\n\r\n"
