# File tools (MimiClaw's write_file, edit_file, list_dir; read_file and the path
# check every one of them makes are tools/read.py's, loaded alone for a read), confined
# to /spiffs/ and away from the firmware's own files there. Writes are atomic and kept
# within a quota (files_quota_kb).
from mimi import limits, fs, log
from mimi.tools.read import ROOT, check_path, _reserved, _utf8, read_file  # noqa: F401 - read_file: the tools' API
from micropython import const

SKIP = (ROOT + "sessions",)  # not even walked by list_dir
DIR_COST = 2 * limits.BLOCK_SIZE  # a folder: its metadata pair
_QUOTA_ERR = const(("Error: no room: files here take %d KB and the file tools may use %d KB (%s); this "
                    "needs %d KB more (a file counts in whole 4 KB blocks, a folder 8 KB). Shorten or "
                    "empty files no longer needed."))
_used = None  # bytes the file tools' files take, in blocks (_cost); None: count at next use
_room = 0  # what the flash leaves them: free at the count, minus the reserve

def _cost(size):
    """Flash a file of `size` bytes may take: whole blocks, at least one (a small file
    lives in its folder's metadata, which grows by about that much)."""
    return (size // limits.BLOCK_SIZE + 1) * limits.BLOCK_SIZE


def recount():
    """Count again at the next use (the devices that log changed)."""
    global _used
    _used = None


def _history_room(hist):
    """Flash the history of the devices that log may still grow into: each one's cap
    (services/history/store.py: its long tier, and its short one when read more often
    than every 5 minutes, a block a segment plus the one a new segment briefly adds)
    minus what its files take already (hist: device -> bytes)."""
    import mimi

    room = 0
    for name, m in mimi.run("devices.lines", "logging"):
        segs = limits.HISTORY_SEGMENTS + 1 + (limits.HISTORY_FINE_SEGMENTS + 1 if m * 60 < limits.HISTORY_STEP_S else 0)
        room += max(0, segs * limits.BLOCK_SIZE - hist.get(name, 0))
    return room


def usage():
    """(bytes the file tools' files take, bytes they may take). Counted once (each boot,
    and when the devices that log change), then kept as a running total by the tools'
    writes; the cap is files_quota_kb, never more than the flash free at the count minus
    FILES_RESERVE, room for an OTA copy of the code and the room the history of the
    devices that log may still grow into (not the whole history cap up front)."""
    global _used, _room
    from mimi.config.settings import cfg

    with fs.lock:
        if _used is None:
            used = code = dirs = 0
            hist = {}
            top = limits.HISTORY_DIR + "/"
            for p, d, n in fs.entries("/"):
                c = DIR_COST if d else _cost(n)
                dirs += d
                if p.startswith(ROOT):
                    used += 0 if _reserved(p) else c
                elif p[1:].split("/", 1)[0] in limits.OTA_TOPS:
                    code += c  # an update stages a copy of it
                elif p.startswith(top) and not d:
                    k = p[len(top):].partition(".")[0]
                    hist[k] = hist.get(k, 0) + c
            _room = used + fs.info(dirs)["free"] - limits.FILES_RESERVE - code - _history_room(hist)
            _used = used
    q = cfg.get("files_quota_kb") * 1024
    return _used, min(q, _room) if q else _room


def _write(p, data):
    global _used
    with fs.lock:  # quota check, write and running total as one change
        size = fs.size(p)  # (-1: missing or a folder; each look-up reads the flash)
        if size < 0 and fs.isdir(p):
            return "Error: %s is a directory" % p
        if len(data) > limits.FILE_WRITE_MAX:
            return "Error: content too large (%d bytes; max %d)" % (len(data), limits.FILE_WRITE_MAX)
        used, cap = usage()
        need = _cost(len(data)) - (_cost(size) if size >= 0 else 0)
        par = fs.parent(p)
        dirs = False  # a folder to make on the way
        while len(par) > len(limits.SPIFFS):
            if fs.isdir(par):  # (the usual case first: one look-up)
                pass
            elif fs.exists(par):
                return "Error: %s is a file, not a directory" % par
            else:
                need += DIR_COST
                dirs = True
            par = fs.parent(par)
        if need > 0 and used + need > cap and cap == _room:
            _used = None  # files may have gone since the count: count again
            used, cap = usage()
        if need > 0 and used + need > cap:
            why = "files_quota_kb" if cap < _room else "what the flash leaves beside the system's files"
            return _QUOTA_ERR % (used >> 10, max(cap, 0) >> 10, why, need >> 10)
        try:
            fs.write_atomic(p, data, dirs or fs.parent(p) == limits.SPIFFS, size >= 0)
        except OSError as e:
            _used = None  # the flash changed under the count: count again
            log.exception("files", "write " + p, e)
            return "Error: %s not saved: %s" % (p, fs.why(e))
        _used += need
    return None


def write_file(args, ctx):
    p, err = check_path(args.get("path"))
    if err:
        return err
    data, err = _utf8("content", args["content"])
    err = err or _write(p, data)
    return err or "OK: wrote %d bytes to %s" % (len(data), p)


def edit_file(args, ctx):
    p, err = check_path(args.get("path"))
    if err:
        return err
    old, err = _utf8("old_string", args["old_string"])
    new, err2 = _utf8("new_string", args["new_string"])
    if err or err2:
        return err or err2
    if not old:
        return "Error: old_string must not be empty"
    with fs.lock:  # read, replace and write back as one change
        return _edit(p, old, new)


def _edit(p, old, new):
    size = fs.size(p)  # (-1: missing or a folder; each look-up reads the flash)
    if size < 0:
        if fs.isdir(p):
            return "Error: %s is a directory" % p
        return "Error: file not found: %s" % p
    if size == 0:
        return "Error: old_string not found in %s" % p
    if size > limits.FILE_READ_MAX:
        return "Error: %s is too large to edit (%d bytes; max %d)" % (p, size, limits.FILE_READ_MAX)
    with open(p, "rb") as f:
        data = f.read()
    i = data.find(old)
    if i < 0:
        return "Error: old_string not found in %s" % p
    err = _write(p, data[:i] + new + data[i + len(old):])
    return err or "OK: edited %s (replaced %d bytes with %d bytes)" % (p, len(old), len(new))


def list_dir(args, ctx):
    prefix = args.get("prefix") or ""
    if not isinstance(prefix, str):
        return "Error: 'prefix' must be a string"
    if prefix and not prefix.startswith("/"):
        prefix = ROOT + prefix  # "memory/" means /spiffs/memory/
    top = prefix[:prefix.rfind("/")]  # the folder the prefix names, when it is a plain
    if check_path(top)[1]:  # one: only it is walked (each folder read costs flash reads)
        top = limits.SPIFFS
    names = [e[0] for e in fs.entries(top, SKIP)
             if not e[1] and not _reserved(e[0]) and e[0].startswith(prefix)]
    if not names:
        return "(no files found)"
    out = []
    used = 0
    for i, p in enumerate(names):
        if used + len(p) + 1 > limits.LIST_DIR_MAX - 40:
            out.append("... (%d more)" % (len(names) - i))
            break
        out.append(p)
        used += len(p.encode()) + 1
    return "\n".join(out)

