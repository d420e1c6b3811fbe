# Chat history: /spiffs/sessions/<key>.jsonl, one {"role","content","ts"} a line.
# load() reads only the file's tail, backwards in blocks, so its cost does not grow
# with the file. append() buffers in RAM and flush() writes each file once per turn
# (every LittleFS append rewrites the partial last block). A file past
# SESSION_FILE_MAX is compacted to its tail with an atomic rewrite.
import os
import json
import _thread
from mimi import limits, fs, log, board
from mimi.utf8 import valid
from micropython import const

DIR = limits.SPIFFS + "/sessions"
_EXT = const(".jsonl")
_ROLES = const(("user", "assistant"))
_CONTENT = (str, list)
_ROLE_JSON = {"user": b'{"role":"user","content":', "assistant": b'{"role":"assistant","content":'}
_OK = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
_CUT = const(b"\\n[cut: message too long]")
_WS = const(b" \t\n\r\x0b\x0c")  # what bytes.strip() strips

_lock = _thread.allocate_lock()
_pending = {}  # key -> [encoded line, ...]
_pending_bytes = 0


def file_name(key):
    """A session key as a safe file name: [A-Za-z0-9_-], capped; a key that had to be
    changed gets a short hash of the original so two keys never share a file."""
    key = str(key)
    safe = "".join(c if c in _OK else "_" for c in key)
    if safe != key or len(safe) > limits.SESSION_NAME_MAX or not safe:
        import hashlib
        import binascii

        h = binascii.hexlify(hashlib.sha256(key.encode()).digest()[:4]).decode()
        safe = safe[: limits.SESSION_NAME_MAX - 9] + "-" + h
    return safe + _EXT


def path(key):
    return DIR + "/" + file_name(key)


def _line(role, content, ts):
    if isinstance(content, tuple):  # a text in pieces (bus.pieces()): written in them
        return _Pieces(role, content, ts)
    rec = {"role": role, "content": content, "ts": ts}
    data = fs.encode(json.dumps(rec))
    if len(data) <= limits.SESSION_LINE_MAX or not isinstance(content, str):
        return data if len(data) <= limits.SESSION_LINE_MAX else None
    # Too long: keep the start of the text so the line stays loadable.
    raw = content.encode()
    keep = len(raw) - (len(data) - limits.SESSION_LINE_MAX) - 64
    while True:
        cut = fs.utf8_cut(raw, max(0, keep)).decode() + "\n[cut: message too long]"
        rec["content"] = cut
        data = fs.encode(json.dumps(rec))
        if len(data) <= limits.SESSION_LINE_MAX or keep <= 0:
            return data
        keep -= len(data) - limits.SESSION_LINE_MAX + 64


def _escaped(piece):
    """One piece of a text as JSON string content: views of it escaped
    limits.ESCAPE_STEP characters at a time (a 512-byte piece escaped whole was the
    block the long answer's save lacked on a short heap); ValueError when it is not
    valid UTF-8."""
    step = limits.ESCAPE_STEP
    for i in range(0, len(piece), step):
        e = json.dumps(piece[i:i + step] if len(piece) > step else piece)
        if len(memoryview(e)) != len(e):  # not ASCII: checked strictly
            e = fs.encode(e)
        yield memoryview(e)[1:-1]


class _Pieces:
    """The line of a text in pieces (bus.pieces(): a long answer), escaped piece by
    piece as it is written: it holds the reply's own pieces, never an escaped copy
    of them (a 10 KB answer's copy was what a short heap lacked at its save). A text
    too long for a line keeps the pieces that fit, and says so. Iterating it gives
    the line's bytes in pieces; n is their length."""

    def __init__(self, role, content, ts):
        self.role = role
        self.end = ('","ts":%d}' % ts).encode()
        n = len(_ROLE_JSON[role]) + 1 + len(self.end)
        keep = 0
        for p in content:
            k = 0
            for q in _escaped(p):  # (ValueError: not valid UTF-8)
                k += len(q)
            if n + k > limits.SESSION_LINE_MAX - 32:
                n += len(_CUT)
                break
            n += k
            keep += 1
        self.pieces = content if keep == len(content) else content[:keep]
        self.cut = keep < len(content)
        self.n = n

    def __iter__(self):
        yield _ROLE_JSON[self.role]
        yield b'"'
        for p in self.pieces:
            yield from _escaped(p)
        if self.cut:
            yield _CUT
        yield self.end


def _bytes(data):
    """Bytes of a line (bytes, or _Pieces)."""
    return data.n if isinstance(data, _Pieces) else len(data)


def append(key, role, content):
    """Buffer one message; written by flush() (or when the buffer grows large)."""
    global _pending_bytes
    try:
        data = _line(role, content, board.clock.unix())
    except ValueError as e:  # text that is not valid UTF-8 would break every later turn
        log.warning("session", "%s: %s message not stored: %s", key, role, e)
        return
    if data is None:
        log.warning("session", "%s: %s message not storable, dropped", key, role)
        return
    with _lock:
        _pending.setdefault(key, []).append(data)
        _pending_bytes += _bytes(data) + 1
        big = _pending_bytes >= limits.SESSION_PENDING_MAX
    if big:
        flush()


def flush():
    """Write every buffered message to its file; compact files grown past the cap.
    None, or what could not be saved: those messages stay buffered (the newest, up to
    SESSION_PENDING_MAX a chat) and are written by a later flush."""
    err = None
    with _lock:
        for key in tuple(_pending):
            err = _flush_key(key) or err
    return err


def _take_pending(key):
    """Remove and return key's buffered lines (caller holds _lock)."""
    global _pending_bytes
    lines = _pending.pop(key, None)
    for data in lines or ():
        _pending_bytes -= _bytes(data) + 1
    return lines


def _flush_key(key):
    global _pending_bytes
    lines = _take_pending(key)
    if not lines:
        return None
    p = path(key)
    with fs.lock:  # the append and a compaction it triggers are one change
        try:
            size = fs.append(p, [x for data in lines for x in (data, b"\n")])
        except OSError as e:  # LittleFS commits nothing of a failed append
            log.exception("session", "write " + p, e)
            keep = []
            for data in reversed(lines):  # the newest lines, bounded, for the next flush
                if keep and _pending_bytes + _bytes(data) + 1 > limits.SESSION_PENDING_MAX:
                    break
                keep.insert(0, data)
                _pending_bytes += _bytes(data) + 1
            _pending[key] = keep
            return "(This conversation was not saved: %s. It is kept in memory until a restart.)" % fs.why(e)
        if size > limits.SESSION_FILE_MAX:
            _compact(p)
    return None


def _compact(p, keep=limits.SESSION_KEEP):
    """Rewrite p as its last `keep` bytes, starting at a line boundary (atomically)."""
    tmp = p + ".tmp"
    buf = bytearray(limits.SESSION_READ_BLOCK)
    try:
        with fs.lock:
            with open(p, "rb") as fi:
                size = fi.seek(0, 2)
                fi.seek(max(0, size - keep))
                if size > keep:
                    fi.readline()  # skip the partial first line
                with open(tmp, "wb") as fo:
                    fs.pump(fi, fo, buf)
            os.rename(tmp, p)
        log.info("session", "compacted %s to %d bytes", p, fs.size(p))
    except OSError as e:
        log.exception("session", "compact " + p, e)
        fs.remove(tmp)


def _tail(p, want, spans=False, far_ok=False):
    """Up to `want` valid messages from the end of file p, oldest first; with spans,
    each plain one also says where its text sits in the file ("at"); with far_ok (or
    spans), a line longer than a block is never held: it is read from the file in
    blocks (_take_far), sent from there (also one that two reads happen to hold
    whole). The blocks are read into one 1.25 KB buffer, made once per call, the end
    part of a line cut by a block's edge kept at its end and the file before it read in
    front: no new block of heap per read (a read, then the read joined to that part,
    were 1-2 KB blocks wanted at a short heap's turn)."""
    out = []
    try:
        f = open(p, "rb")
    except OSError:
        return out
    block = limits.SESSION_READ_BLOCK
    line_max = limits.SESSION_LINE_MAX
    buf = bytearray(block + block // 4)  # (a line's end part up to a block, and a read)
    size = len(buf)
    try:
        pos = f.seek(0, 2)
        c = 0  # buf[size - c:] is the end part of a line whose start is further back
        skipping = False  # the current line is over line_max: drop it
        far = -1  # spans: where a long line ends whose bytes are not kept
        while pos > 0 and len(out) < want:
            n = block if pos > block else pos
            if c + n > size:  # a shorter read, in front of the line's end part
                n = size - c
                if n < block // 4:  # (without far_ok a line up to line_max is held whole)
                    n = block if pos > block else pos
                    b2 = bytearray(c + n + block)
                    b2[len(b2) - c:] = memoryview(buf)[size - c:]
                    buf, b2 = b2, None
                    size = len(buf)
            pos -= n
            s = size - c - n  # the block and the line's end part: buf[s:]
            f.seek(pos)
            f.readinto(memoryview(buf)[s:size - c])
            end = size  # lines are taken from the end, by index: no copies of the rest
            while len(out) < want:
                i = buf.rfind(b"\n", s, end)
                if i < 0:
                    break
                if far >= 0:
                    _take_far(f, pos + i + 1 - s, far, out, p)
                    far = -1
                elif skipping:
                    skipping = False
                elif (spans or far_ok) and end - i - 1 > block:  # (as one found in blocks)
                    _take_far(f, pos + i + 1 - s, pos + end - s, out, p)
                elif end > i + 1:
                    _take(buf, i + 1, end, out, p, pos + i + 1 - s if spans else -1)
                end = i
            if far >= 0:
                continue
            c = end - s
            if end < size:
                buf[size - c:] = memoryview(buf)[s:end]
            if c > line_max:
                if not skipping:
                    log.warning("session", "%s: line over %d bytes skipped", p, line_max)
                c = 0
                skipping = True
            elif (spans or far_ok) and c > block and not skipping:
                far = pos + c
                c = 0
        if pos == 0 and len(out) < want:
            if far >= 0:
                _take_far(f, 0, far, out, p)
            elif c and not skipping:
                _take(buf, size - c, size, out, p, 0 if spans else -1)
    finally:
        f.close()
    out.reverse()
    return out


def _take_far(f, a, b, out, p):
    """The line [a, b) of file f, longer than a block, on a short heap: its role read
    around its text, whose place is found by reading it in blocks and checked as _take
    checks it (valid UTF-8, no \\ud escape); the text is sent from the file (load()).
    A text that fails the check is decoded after all (and cleaned when sent)."""
    if b - a > limits.SESSION_LINE_MAX:
        log.warning("session", "%s: line over %d bytes skipped", p, limits.SESSION_LINE_MAX)
        return
    f.seek(a)
    head = f.read(64)
    k = head.find(b'"content"')
    v = k + 9
    while 0 <= k and v < len(head) and head[v] in b" :\t":
        v += 1
    e = -1
    if k > 0 and v < len(head) and head[v] == 34:
        e = _string_end(f, a + v, b)  # -> where the closing quote is, or -1 (not as sent)
    if e == -2:  # text that must be decoded (and cleaned) to be sent
        f.seek(a)
        raw = f.read(b - a)
        _take(raw, 0, len(raw), out, p, -1)
        return
    try:
        if e < 0:
            raise ValueError
        f.seek(e + 1)
        rec = json.loads(head[:k] + b'"content":0' + f.read(min(b - e - 1, 256)))
        role = rec["role"]
    except (ValueError, KeyError, TypeError):
        log.warning("session", "%s: corrupt line skipped (%d bytes)", p, b - a)
        return
    if role not in _ROLES:
        log.warning("session", "%s: line with bad role/content skipped", p)
        return
    out.append({"role": role, "content": None, "at": (a + v, e + 1 - a - v)})


def _string_end(f, q, b):
    """File f holds a JSON string from its quote at q (the line ending at b): -> the
    position of its closing quote; -1 when there is none, -2 when its text is not sent
    as stored (a \\ud escape, invalid UTF-8). Read a block at a time into one buffer,
    after the start of a character the block before cut in two (not held once the
    line is found: the messages loaded after it need the room)."""
    block = limits.SESSION_READ_BLOCK
    buf = bytearray(block + 4)
    mv = memoryview(buf)
    pos = q + 1
    slashes = 0  # backslashes at the end of what was read: the first quote may be escaped
    kn = 0  # buf[:kn]: a character cut in two at the end of the block before
    edge = b""  # the last bytes before: an escape cut in two
    while pos < b:
        f.seek(pos)
        m = f.readinto(mv[kn:kn + min(block, b - pos)])
        if not m:
            return -1
        top = kn + m  # the block: buf[kn:top]
        i = kn
        while True:
            j = buf.find(b'"', i, top)
            if j < 0:
                break
            k = j - 1
            while k >= kn and buf[k] == 92:
                k -= 1
            if (j - 1 - k + (slashes if k < kn else 0)) % 2 == 0:
                break  # not escaped: the end
            i = j + 1
        end = top if j < 0 else j  # the text read so far: buf[:end]
        w = edge + mv[:3 if end > 3 else end]
        if buf.find(b"\\ud", 0, end) >= 0 or buf.find(b"\\uD", 0, end) >= 0 or b"\\ud" in w \
                or b"\\uD" in w:
            return -2
        cut = end
        if j < 0:  # up to the last whole character
            for c in range(cut - 1, max(cut - 4, -1), -1):
                if buf[c] < 0x80:
                    break
                if buf[c] >= 0xC0:
                    if cut - c < (2 if buf[c] < 0xE0 else 3 if buf[c] < 0xF0 else 4):
                        cut = c
                    break
        if cut and max(mv[:cut]) >= 0x80 and not valid(mv[:cut]):  # (ASCII: valid, no copy)
            return -2
        if j >= 0:
            return pos + j - kn
        edge = bytes(mv[end - 2 if end > 2 else 0:end])
        buf[:end - cut] = mv[cut:end]
        kn = end - cut
        n = 0
        while n < m and buf[top - 1 - n] == 92:
            n += 1
        slashes = n if n < m else slashes + n
        pos += m
    return -1


def _take(raw, a, b, out, p, at):
    """The line raw[a:b] (bytes, or the reading buffer: no copy of it is made) as a
    message added to out; at: where raw[a] is in the file, or -1."""
    a0 = a
    while a < b and raw[a] in _WS:
        a += 1
    while b > a and raw[b - 1] in _WS:
        b -= 1
    if a == b:
        return
    line = memoryview(raw)[a:b]
    try:
        rec = json.loads(line)
        role = rec["role"]
        content = rec["content"]
    except (ValueError, KeyError, TypeError, IndexError):
        log.warning("session", "%s: corrupt line skipped (%d bytes)", p, b - a)
        return
    if role not in _ROLES or not isinstance(content, _CONTENT) or not content:
        log.warning("session", "%s: line with bad role/content skipped", p)
        return
    m = {"role": role, "content": content}
    # Where the text's JSON string sits in the file: sent from there as it is stored.
    # Not for text that is not valid UTF-8 or holds a \ud800-\udfff escape (it is
    # decoded and cleaned instead).
    if at >= 0 and isinstance(content, str) and raw.find(b"\\ud", a, b) < 0 \
            and raw.find(b"\\uD", a, b) < 0 \
            and (len(memoryview(content)) == len(content) or valid(line)):  # (ASCII: valid)
        from mimi.jsonscan import member, skip_string

        v = member(raw, a, b"content")
        # its text is not held while the rest loads (20 of them were ~11 KB at a short
        # heap's turn start): the file has it, and _size() its length
        m["at"] = (at + v - a0, skip_string(raw, v) - v, len(content))
        m["content"] = None
    out.append(m)


def _text(p, at):
    """The text of a message whose JSON string is at[1] bytes at at[0] of file p."""
    with open(p, "rb") as f:
        f.seek(at[0])
        return json.loads(f.read(at[1]))


def _size(m):
    c = m["content"]
    if c is None:  # a text sent from the file: (start, bytes) of a long one (_take_far)
        at = m["at"]  # or (start, bytes, characters)
        return at[2] if len(at) > 2 else at[1]
    return len(c) if isinstance(c, str) else len(json.dumps(c))


def repair(msgs, budget=limits.HISTORY_BYTES_MAX):
    """Make history valid for the providers: starts with user, roles alternate (a run
    of one role is merged), ends with assistant, and fits the byte budget (oldest
    pairs dropped first)."""
    merged = []
    for m in msgs:
        if merged and merged[-1]["role"] == m["role"]:
            a, b = merged[-1]["content"], m["content"]
            if isinstance(a, str) and isinstance(b, str):
                merged[-1] = {"role": m["role"], "content": a + "\n\n" + b}  # no "at"
            else:
                merged[-1] = m
        else:
            merged.append(m)
    while merged and merged[0]["role"] != "user":
        merged.pop(0)
    while merged and merged[-1]["role"] != "assistant":
        merged.pop()
    total = 0
    for m in merged:
        total += _size(m)
    while total > budget and len(merged) >= 2:
        total -= _size(merged.pop(0)) + _size(merged.pop(0))
    return merged


def load(key, encode=None, n=limits.HISTORY_MAX):
    """The last `n` messages of a session as [{"role","content"}], valid alternation.
    With encode (a provider's message()), ready for a request instead: encode(message)
    each; when the heap is short (mimi.short()), a message whose text is stored as it
    goes out becomes parts that read it from the file when sent (net/http.py Region:
    no copy in RAM, a read of the flash per call); on any heap, one longer than
    limits.SESSION_READ_BLOCK does."""
    from mimi import short

    p = path(key)
    with _lock:
        _flush_key(key)
        # a long message (a 10 KB answer) is sent from the file on any heap: held, it
        # would need a block its size, which a busy heap may not have even with room
        msgs = _tail(p, n, encode is not None and short(), encode is not None)
        for data in _pending.get(key, ()):  # could not be written (flash full): still this chat's
            if isinstance(data, _Pieces):
                b = bytearray()
                for q in data:
                    b += q
                data = bytes(b)
            _take(data, 0, len(data), msgs, p, -1)
        msgs = msgs[-n:]
        for i in range(1, len(msgs)):  # a run of one role is merged (repair()): its texts
            if msgs[i - 1]["role"] == msgs[i]["role"]:  # read back (not a long one's)
                for m in (msgs[i - 1], msgs[i]):
                    if m["content"] is None and len(m["at"]) > 2:
                        m["content"] = _text(p, m["at"])
    msgs = repair(msgs)
    if encode:
        import gc
        from mimi.net.http import Region

        if short():  # the reads' garbage first: what stays for the turn fills its holes
            gc.collect()
        for i in range(len(msgs)):
            m = msgs[i]
            at = m.pop("at", None)
            msgs[i] = (_ROLE_JSON[m["role"]], Region(p, at[0], at[1]), b"}") if at else encode(m)
    return msgs


def clear(key):
    """Forget a session (its buffered messages and its file). True if there was one."""
    with _lock:
        had = _take_pending(key) is not None
        return fs.remove(path(key)) or had


def list():
    """[(key, bytes)] of every stored session, by name."""
    flush()
    out = []
    try:
        names = sorted(e[0] for e in os.ilistdir(DIR))
    except OSError:
        return out
    for name in names:
        if name.endswith(_EXT):
            out.append((name[: -len(_EXT)], fs.size(DIR + "/" + name)))
    return out
