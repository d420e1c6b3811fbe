# Tuple bodies of the HTTP client (net/http.py): parts written one after the other,
# never joined (the LLM request), Regions of files read as they are sent, and Pieces
# made as they are sent (a chart's PNG: telegram/photo.py). Loaded
# by the first request with such a body: Telegram's and Feishu's bytes bodies never
# need it.
from mimi import limits
from mimi.net.http import _W
from micropython import const

_SEP = const(b",")


class Region:
    """A body part read from a file as it is sent: bytes [start, start + n) of path
    (stored text that needs no copy in RAM, e.g. session history)."""

    def __init__(self, path, start, n):
        self.path = path
        self.start = start
        self.n = n


class Pieces:
    """A body part made as it is sent: fn() yields its bytes in pieces (each used before
    the next is asked for), n bytes in all. fn is called again if the request is."""

    def __init__(self, n, fn):
        self.n = n
        self.fn = fn


def escapes(text, dump):
    """A text as one JSON string's content: views of its bytes escaped by dump()
    (json.dumps or alike: quotes included) limits.ESCAPE_STEP characters at a time, one
    copy at a time (~300-byte blocks, never the whole text, nor a 1 KB piece, escaped
    beside itself). text: a str, or a tuple or list of str (its pieces)."""
    step = limits.ESCAPE_STEP
    for t in (text,) if isinstance(text, str) else text:
        if len(t) <= step:
            yield memoryview(dump(t))[1:-1]
            continue
        for i in range(0, len(t), step):
            yield memoryview(dump(t[i:i + step]))[1:-1]


def escaped(text, dump):
    """escapes(text, dump) as a Pieces: escaped when it is counted and each time it is sent."""
    n = 0
    for q in escapes(text, dump):
        n += len(q)
    return Pieces(n, lambda: escapes(text, dump))


# A part is told by what it has (a Region its path, a Pieces its fn), not by its class: a
# body made before this code was let go (the agent does after a turn on a short heap)
# and sent by the code loaded again holds the first copy's.

def atoms(pieces):
    """leaves() with each Pieces' bytes made in its place."""
    for p in pieces:
        if hasattr(p, "fn"):  # a Pieces
            k = 0
            for q in p.fn():
                k += len(q)
                yield q
            if k != p.n:
                raise ValueError("a body part made %d bytes, not the %d announced" % (k, p.n))
        else:
            yield p


def leaves(body):
    """A tuple body's pieces in order, walked as they are sent: the items of a tuple one
    after the other, those of a list separated by commas (a JSON array's or object's
    members). Never listed: the reference turn's request has ~400 pieces, whose list
    (2 KB, grown a step at a time) was what a short heap lacked."""
    seqs, at = [body], [0]
    while seqs:
        s, k = seqs[-1], at[-1]
        if k == len(s):
            seqs.pop()
            at.pop()
            continue
        at[-1] = k + 1
        if k and isinstance(s, list):
            yield _SEP
        p = s[k]
        if isinstance(p, tuple) or isinstance(p, list):
            seqs.append(p)
            at.append(0)
        else:
            yield p


def spill(body, path, add=False):
    """body's bytes written to the file at path (after what it holds: add) -> a Region
    of them, sent from the flash instead of held in RAM (the agent's tool messages and
    tool table on a short heap); OSError when the flash says no."""
    from mimi import fs

    with fs.lock, open(path, "ab" if add else "wb") as f:
        at = f.seek(0, 2)
        for p in atoms(leaves(body)):
            f.write(p)
        return Region(path, at, f.tell() - at)


def flat(body):
    """The pieces of a tuple body as a list, Pieces made (tests; the self-test's counted
    request)."""
    return list(atoms(leaves(body)))


def length(body):
    n = 0
    for p in leaves(body):
        if hasattr(p, "n"):  # a Region or a Pieces
            n += p.n
        else:
            n += len(memoryview(p)) if isinstance(p, str) else len(p)
    return n


def send_parts(buf, body):
    """Write a tuple body: small pieces gathered in the (still unused) receive buffer,
    pieces as big as the buffer written from where they are, Regions read into it."""
    mv = buf.mv
    size = len(mv)
    n = 0
    f = name = None  # the file of the last Region, open until the body is sent
    try:
        for p in atoms(leaves(body)):
            if hasattr(p, "path"):  # a Region
                if p.path != name:
                    if f:
                        f.close()
                    f, name = open(p.path, "rb"), p.path
                f.seek(p.start)
                left = p.n
                while left:
                    if n == size:
                        yield (_W, mv)
                        n = 0
                    k = f.readinto(mv[n:n + min(left, size - n)])
                    if not k:
                        raise OSError("%s changed while it was being sent" % name)
                    n += k
                    left -= k
                continue
            if isinstance(p, str):  # (an isinstance with a tuple of types allocates the tuple)
                p = memoryview(p)
            k = len(p)
            if n and n + k > size:
                yield (_W, mv[:n])
                n = 0
            if k >= size:
                yield (_W, p)
            else:
                mv[n:n + k] = p
                n += k
        if n:
            yield (_W, mv[:n])
    finally:
        if f:
            f.close()


def form(fields, name, filename, ctype, part):
    """A multipart/form-data body (RFC 7578): text fields [(name, value)], then one file
    `name` (filename, its Content-Type, part: bytes or Pieces) -> (Content-Type, tuple body)."""
    from mimi.net import random_id

    b = "mimi" + random_id(12)
    head = "".join('--%s\r\nContent-Disposition: form-data; name="%s"\r\n\r\n%s\r\n' % (b, k, v) for k, v in fields)
    head += '--%s\r\nContent-Disposition: form-data; name="%s"; filename="%s"\r\nContent-Type: %s\r\n\r\n' % (
        b, name, filename, ctype)
    return "multipart/form-data; boundary=" + b, (head, part, "\r\n--%s--\r\n" % b)
