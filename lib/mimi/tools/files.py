# File tools (MimiClaw's read_file, write_file, edit_file, list_dir), confined to
# /spiffs/. A path is refused unless it is a plain /spiffs/a/b/c name: no '..',
# empty or dot-only segments, backslashes or control characters, so /config.json
# and everything outside /spiffs stay out of reach. Writes are atomic.
from mimi import limits, fs, log

ROOT = limits.SPIFFS + "/"
PATH_ERR = "Error: path must start with /spiffs/ and must not contain '..'"
DOTS = ".\u2024\u2025\u2026\u2027\u3002\ufe52\uff0e\uff61"  # '.' and look-alikes
HIDDEN = (limits.DEFAULTS_RECORD,)
READ_CAP = min(limits.FILE_READ_MAX, limits.TOOL_OUTPUT_MAX - 200)

def _bad_char(c):
    o = ord(c)
    return o < 32 or 127 <= o < 160 or o in (0x2028, 0x2029, 0xFEFF)


def _utf8(what, text):
    """(bytes, None), or (None, "Error: ...") for text that is not valid UTF-8: stored,
    it would make every later request that carries it fail."""
    try:
        return fs.encode(text), None
    except ValueError as e:
        return None, "Error: %s is %s" % (what, e)


def check_path(path):
    """(path, None) when `path` is an allowed file path, else (None, "Error: ...")."""
    if not isinstance(path, str) or not path:
        return None, "Error: 'path' required (string)"
    if len(path.encode()) > limits.PATH_MAX:
        return None, "Error: path too long (max %d bytes)" % limits.PATH_MAX
    err = _utf8("path", path)[1]
    if err:
        return None, err
    for c in path:
        if _bad_char(c):
            return None, "Error: path must not contain control characters"
    if "\\" in path:
        return None, "Error: path must not contain backslashes"
    if not path.startswith(ROOT) or ".." in path:
        return None, PATH_ERR
    for seg in path[len(ROOT):].split("/"):
        if not seg:
            return None, "Error: path must name a file under /spiffs/ (no empty '//' parts or trailing '/')"
        if all(c in DOTS for c in seg):
            return None, PATH_ERR
        if seg != seg.strip():
            return None, "Error: path parts must not start or end with spaces"
    if path in HIDDEN or path.endswith(".tmp"):
        return None, "Error: %s is reserved for the firmware" % path
    return path, None


def read_file(args, ctx):
    p, err = check_path(args.get("path"))
    if err:
        return err
    if fs.isdir(p):
        return "Error: %s is a directory (use list_dir)" % p
    size = fs.size(p)
    if size < 0:
        return "Error: file not found: %s" % p
    try:
        text = fs.read_text(p, READ_CAP)
    except OSError as e:
        return "Error: cannot read %s (%s)" % (p, e)
    if size > READ_CAP:
        text += "\n[cut: %s is %d bytes; showed the first %d]" % (p, size, len(text.encode()))
    return text if text else "(empty file)"


def _write(p, data):
    if fs.isdir(p):
        return "Error: %s is a directory" % p
    if len(data) > limits.FILE_WRITE_MAX:
        return "Error: content too large (%d bytes; max %d)" % (len(data), limits.FILE_WRITE_MAX)
    par = fs.parent(p)
    while len(par) > len(limits.SPIFFS):
        if fs.exists(par) and not fs.isdir(par):
            return "Error: %s is a file, not a directory" % par
        par = fs.parent(par)
    try:
        fs.write_atomic(p, data)
    except OSError as e:
        log.exception("files", "write " + p, e)
        return "Error: cannot write %s (%s)" % (p, e)
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
    if fs.isdir(p):
        return "Error: %s is a directory" % p
    size = fs.size(p)
    if size < 0:
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


def visible(path):
    return path not in HIDDEN and not path.endswith(".tmp")


def list_dir(args, ctx):
    prefix = args.get("prefix") or ""
    if not isinstance(prefix, str):
        return "Error: 'prefix' must be a string"
    if prefix and not prefix.startswith("/"):
        prefix = ROOT + prefix  # "memory/" means /spiffs/memory/
    names = [p for p in fs.walk_files(limits.SPIFFS) if visible(p) and p.startswith(prefix)]
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

