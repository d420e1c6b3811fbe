# Small filesystem helpers: atomic rewrites (temp file + rename, which LittleFS
# makes power-cut safe), capped reads, directory creation and walking.
import os

_DIR = 0x4000


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
    try:
        return os.stat(path)[6]
    except OSError:
        return -1


def makedirs(path):
    cur = ""
    for part in path.split("/"):
        if not part:
            continue
        cur += "/" + part
        if not isdir(cur):
            try:
                os.mkdir(cur)
            except OSError:
                if not isdir(cur):
                    raise


def parent(path):
    i = path.rfind("/")
    return path[:i] if i > 0 else "/"


def write_atomic(path, data):
    """Write all of `data` (str or bytes) to `path`; a power cut leaves old or new."""
    tmp = path + ".tmp"
    makedirs(parent(path))
    with open(tmp, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)
    os.rename(tmp, path)


def read_head(path, limit):
    """The first `limit` bytes of a file (all of a shorter one). OSError if missing.
    MicroPython's read(n) allocates n bytes up front: asking for the 12 KB a cap allows
    to read a 300-byte file costs a 12 KB block, which a fragmented heap may not have."""
    with open(path, "rb") as f:
        size = f.seek(0, 2)
        f.seek(0)
        return f.read(min(limit, size))


def read_text(path, limit=None):
    """The file's text, at most `limit` bytes (cut on a UTF-8 boundary). OSError if missing."""
    if limit:
        return decode(utf8_cut(read_head(path, limit), limit))
    with open(path, "rb") as f:
        return decode(f.read())


def decode(data):
    """bytes -> str; invalid UTF-8 becomes U+FFFD instead of an exception."""
    try:
        return data.decode()
    except UnicodeError:
        pass
    out = []
    i = start = 0
    n = len(data)
    while i < n:
        b = data[i]
        if b < 0x80:
            i += 1
            continue
        need = 1 if 0xC2 <= b <= 0xDF else 2 if 0xE0 <= b <= 0xEF else 3 if 0xF0 <= b <= 0xF4 else 0
        j = i + 1
        while need and j < n and j < i + 1 + need and (data[j] & 0xC0) == 0x80:
            j += 1
        if need and j == i + 1 + need:
            try:
                bytes(data[i:j]).decode()
                i = j
                continue
            except UnicodeError:
                pass
        out.append(bytes(data[start:i]).decode())
        out.append("\ufffd")
        i += 1
        start = i
    out.append(bytes(data[start:]).decode())
    return "".join(out)


def utf8_cut(data, limit):
    """At most `limit` bytes of `data`, not ending inside a UTF-8 character."""
    data = data[:limit]
    n = len(data)
    i = n - 1
    while i >= 0 and i > n - 4 and (data[i] & 0xC0) == 0x80:
        i -= 1
    if i >= 0 and data[i] >= 0xC0:
        need = 2 if data[i] < 0xE0 else 3 if data[i] < 0xF0 else 4
        if n - i < need:
            return data[:i]
    return data


def pump(fi, fo, buf):
    """Copy the rest of open file fi into fo through buf (bounded memory)."""
    while True:
        n = fi.readinto(buf)
        if not n:
            return
        fo.write(buf[:n] if n < len(buf) else buf)


def copy_atomic(src, dst, bufsize=512):
    """src's bytes to dst, through a temp file and a rename."""
    makedirs(parent(dst))
    tmp = dst + ".tmp"
    with open(src, "rb") as fi, open(tmp, "wb") as fo:
        pump(fi, fo, bytearray(bufsize))
    os.rename(tmp, dst)


def remove(path):
    try:
        os.remove(path)
        return True
    except OSError:
        return False


def walk_files(top):
    """Every file below `top`, as full paths, depth first in name order."""
    out = []
    try:
        entries = sorted(os.ilistdir(top))
    except OSError:
        return out
    for e in entries:
        full = (top.rstrip("/") + "/" + e[0])
        if e[1] & _DIR:
            out.extend(walk_files(full))
        else:
            out.append(full)
    return out
