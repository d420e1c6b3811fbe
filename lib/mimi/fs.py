# Small filesystem helpers: atomic rewrites (temp file + rename, or in place over an
# existing file, which LittleFS makes power-cut safe), appends, capped reads, directory
# creation and walking.
# Every flash write goes through here, under `lock`.
import os
import _thread

_DIR = 0x4000
_ENOENT = 2


class _Lock:
    """The filesystem lock. LittleFS is not thread-safe and the agent thread and the
    loop both write: each change (temp file + rename, an append, a compaction) holds
    this lock, so no two interleave. On the board the GIL already makes one LittleFS
    call whole; on the host (no GIL) board/host_vfs.py takes this lock around every
    call too. Reentrant: a sequence that holds it calls helpers that take it again.
    Never held across an await or a network wait."""

    def __init__(self):
        self._lock = _thread.allocate_lock()
        self._owner = None
        self._depth = 0

    # No branch (if, and, or, loops) in __enter__/__exit__ and the helpers below: on
    # the board the VM raises a Ctrl-C (KeyboardInterrupt) at the next branch, and one
    # between acquire and its bookkeeping, or between the last exit and the release,
    # would leave the lock held, and every file call at the REPL hanging.
    def __enter__(self):
        (_take, _again)[self._owner == _thread.get_ident()](self)
        return self

    def __exit__(self, *exc):
        self._depth -= 1
        (_nested, _release)[self._depth == 0](self)


def _take(lk):
    lk._lock.acquire()
    lk._owner = _thread.get_ident()
    lk._depth = 1


def _again(lk):
    lk._depth += 1


def _nested(lk):
    pass


def _release(lk):
    lk._owner = None
    lk._lock.release()


lock = _Lock()


def exists(path):
    try:
        os.stat(path)
        return True
    except OSError:
        return False


def isdir(path):
    try:
        return os.stat(path)[0] & _DIR != 0
    except OSError:
        return False


def size(path):
    """A file's size in bytes; -1 when it is missing or a folder. Found by opening it:
    LittleFS looks the path up once, where os.stat() looks it up twice (the entry, then
    its mtime attribute), each a walk of every folder's metadata log on the way: in a
    folder written to often (/spiffs/memory) ~130 flash reads a look-up."""
    try:
        with open(path, "rb") as f:
            return f.seek(0, 2)
    except OSError:
        return -1


def makedirs(path):
    cur = ""
    with lock:
        if isdir(path):  # (the usual case: one look-up, not one for each folder on the way)
            return
        for part in path.split("/"):
            if not part:
                continue
            cur += "/" + part
            if not isdir(cur):
                os.mkdir(cur)


def parent(path):
    i = path.rfind("/")
    return path[:i] if i > 0 else "/"


def encode(text):
    """str -> UTF-8 bytes for the flash; ValueError when the text is not valid UTF-8
    (a lone surrogate, an overlong form): such text is never stored."""
    data = text.encode()
    if len(data) != len(text):  # not ASCII: check strictly
        from mimi import utf8

        if not utf8.valid(data):
            raise ValueError(utf8.ERROR)
    return data


def write_atomic(path, data, dirs=True, replace=False):
    """Write all of `data` (str, checked by encode(), or bytes; or a list of them, or of
    iterables of bytes made as they are written, one after the other) to `path`; a
    power cut leaves old or new. A failed write leaves no temporary file. dirs=False: the caller knows its folder is there
    (each look-up reads the flash).
    replace=True: the caller found the file there (size() >= 0, under `lock`); one
    piece is then written over it in place, not to a temporary file renamed over it
    (three changes to the folder's metadata log, which every look-up in the folder
    reads, instead of one). Still old or new: LittleFS commits an existing file's new
    contents when it is closed, and not at all after a failed write (a full flash)."""
    parts = data if isinstance(data, list) else [data]
    parts = [encode(p) if isinstance(p, str) else p for p in parts]
    if replace and len(parts) == 1 and isinstance(parts[0], (bytes, bytearray, memoryview)):
        data = parts[0]
        with lock:
            # (a Ctrl-C comes at a branch: none between the open, which truncates
            # nothing on the flash yet, and the one write)
            with open(path, "wb") as f:
                f.write(data)
        return
    tmp = path + ".tmp"
    with lock:
        if dirs:
            makedirs(parent(path))
        try:
            with open(tmp, "wb") as f:
                for p in parts:
                    _put(f, p)
            os.rename(tmp, path)
        except BaseException:  # a full flash, or a Ctrl-C: no temporary file stays
            remove(tmp)
            raise


def _put(f, p):
    if isinstance(p, (bytes, bytearray, memoryview)):
        f.write(p)
    else:  # a part made as it is written: its bytes in pieces (sessions' long lines)
        for q in p:
            f.write(q)


def append(path, parts):
    """Add each of `parts` (str, checked by encode(), bytes, or an iterable of bytes made
    as it is written) to the end of `path`, made with its folders when missing, as one
    change. Returns the file's size after."""
    parts = [encode(p) if isinstance(p, str) else p for p in parts]
    with lock:
        try:  # (an existing file opened without creating: one look-up of the path)
            f = open(path, "r+b")
        except OSError as e:
            if e.args[0] != _ENOENT:
                raise
            # LittleFS commits a new file empty first: a cut then left a note without
            # its header; renamed in whole
            write_atomic(path, parts)
            return size(path)
        with f:
            f.seek(0, 2)
            for p in parts:
                _put(f, p)
            return f.tell()


def rename(src, dst):
    with lock:
        os.rename(src, dst)


def read_head(path, limit):
    """The first `limit` bytes of a file (all of a shorter one). OSError if missing.
    MicroPython's read(n) allocates n bytes up front: asking for the 12 KB a cap allows
    to read a 300-byte file costs a 12 KB block, which a fragmented heap may not have."""
    with lock, open(path, "rb") as f:
        size = f.seek(0, 2)
        f.seek(0)
        return f.read(min(limit, size))


def read_text(path, limit=None):
    """The file's text, at most `limit` bytes (cut on a UTF-8 boundary). OSError if missing."""
    return read_sized_text(path, limit)[0]


def read_sized_text(path, limit=None, piece=1024, pieces=False):
    """(read_text(path, limit), the file's size), from one look-up of the path. Read and
    decoded `piece` bytes at a time: the only block as big as the text is the text
    itself (bytes then str needed two, and a 5 KB file's second one was what a short
    heap lacked, bench/longrun.py). pieces: a longer text stays a tuple of those pieces
    (bus.pieces()), never one block its size."""
    with lock, open(path, "rb") as f:
        size = f.seek(0, 2)
        f.seek(0)
        left = size if limit is None else min(limit, size)
        out, carry = [], b""
        while left > 0:
            raw = f.read(min(piece, left))
            if not raw:
                break
            left -= len(raw)
            if carry:
                raw = carry + raw
            # a character split by the read waits for the next piece; at the cap, it goes
            text = utf8_cut(raw, len(raw)) if left > 0 or limit is not None else raw
            carry = raw[len(text):] if left > 0 else b""
            out.append(decode(text))
            raw = text = None
    if len(out) < 2:
        return (out[0] if out else ""), size
    return (tuple(out) if pieces else "".join(out)), size


def decode(data):
    """bytes -> str, strictly: what is not valid UTF-8 (stray bytes, CESU-8
    surrogates, overlong forms) becomes U+FFFD instead of an exception."""
    try:
        s = str(data, "utf-8")
        if len(s) == len(data):
            return s  # ASCII
    except UnicodeError:
        pass
    from mimi import utf8

    return utf8.repair(data)


def utf8_cut(data, limit):
    """At most `limit` bytes of `data`, not ending inside a UTF-8 character (data
    itself when nothing is cut: no copy)."""
    n = len(data)
    if limit < n:  # (as data[:limit] counts)
        n = limit if limit >= 0 else max(0, n + limit)
    i = n - 1
    while i >= 0 and i > n - 4 and (data[i] & 0xC0) == 0x80:
        i -= 1
    if i >= 0 and data[i] >= 0xC0:
        need = 2 if data[i] < 0xE0 else 3 if data[i] < 0xF0 else 4
        if n - i < need:
            n = i
    return data if n == len(data) else data[:n]


def pump(fi, fo, buf):
    """Copy the rest of open file fi into fo through buf (bounded memory)."""
    while True:
        n = fi.readinto(buf)
        if not n:
            return
        fo.write(buf[:n] if n < len(buf) else buf)


def copy_atomic(src, dst, bufsize=512):
    """src's bytes to dst, through a temp file and a rename."""
    tmp = dst + ".tmp"
    with lock:
        makedirs(parent(dst))
        try:
            with open(src, "rb") as fi, open(tmp, "wb") as fo:
                pump(fi, fo, bytearray(bufsize))
            os.rename(tmp, dst)
        except BaseException:
            remove(tmp)
            raise


def remove(path):
    try:
        with lock:
            os.remove(path)
        return True
    except OSError:
        return False


def walk_files(top):
    """Every file below `top`, as full paths, depth first in name order."""
    return [e[0] for e in entries(top) if not e[1]]


def entries(top, skip=()):
    """(path, is_dir, size) of everything below `top`, depth first in name order, a
    folder before its contents; folders named in `skip` are left out whole."""
    try:
        found = sorted(os.ilistdir(top))
    except OSError:
        return
    for e in found:
        if top == "/" and len(e) < 4:
            continue  # another filesystem mounted there (the simulator's /host)
        full = top.rstrip("/") + "/" + e[0]
        d = e[1] & _DIR != 0
        if d and full in skip:
            continue
        yield full, d, 0 if d else e[3] if len(e) > 3 else size(full)
        if d:
            yield from entries(full, skip)


def info(dirs=None):
    """{"block_size", "blocks", "free", "total"} of the flash, free and total in bytes.
    MicroPython's statvfs counts with lfs_fs_traverse, which visits every folder's
    two metadata blocks twice, and reports blocks minus that count unsigned: free
    space shrinks by 8 KB a folder and, past zero, wraps (2**32 - n; -n on 32-bit).
    Corrected with the number of folders (`dirs`, counted when not given)."""
    with lock:
        st = os.statvfs("/")
        if dirs is None:
            dirs = 0
            for e in entries("/"):
                dirs += e[1]
    total = st[2]
    free = st[3] - (1 << 32 if st[3] > total else 0) + 2 * dirs
    free = min(max(free, 0), total)
    return {"block_size": st[0], "blocks": total, "free": free * st[0], "total": total * st[0]}


def why(e):
    """An OSError from a write, in words the model and a person can act on."""
    return "the flash is full" if e.args and e.args[0] == 28 else str(e)  # ENOSPC
