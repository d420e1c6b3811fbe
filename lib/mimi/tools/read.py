# read_file (MimiClaw's) and the path check of every file tool (tools/files.py): a
# path is refused unless it is a plain /spiffs/a/b/c name: no '..', empty or
# dot-only segments, backslashes or control characters, so /config.json and
# everything outside /spiffs stay out of reach; so do the firmware's own files there
# (RESERVED). Apart from the writing tools: the one a turn calls most loads alone.
from mimi import limits, fs, short
from micropython import const

ROOT = limits.SPIFFS + "/"
_PATH_ERR = const("Error: path must start with /spiffs/ and must not contain '..'")
_DOTS = const(".\u2024\u2025\u2026\u2027\u3002\ufe52\uff0e\uff61")  # '.' and look-alikes
# Names right under /spiffs/ that are the firmware's, in any case and with trailing
# dots: chat histories are private to their chat (another chat's turn must not read
# or forge them) and cron.json changes only through the cron tools, which check it.
RESERVED = ("sessions", "cron.json", limits.DEFAULTS_RECORD[len(ROOT):])
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
        return None, _PATH_ERR
    for seg in path[len(ROOT):].split("/"):
        if not seg:
            return None, "Error: path must name a file under /spiffs/ (no empty '//' parts or trailing '/')"
        if all(c in _DOTS for c in seg):
            return None, _PATH_ERR
        if seg != seg.strip():
            return None, "Error: path parts must not start or end with spaces"
    if _reserved(path):
        return None, "Error: %s is reserved for the firmware" % path
    return path, None


def _reserved(path):
    top = path[len(ROOT):].split("/", 1)[0].lower().rstrip(_DOTS)
    return top in RESERVED or path.endswith(".tmp")


def read_file(args, ctx):
    p, err = check_path(args.get("path"))
    if err:
        return err
    try:  # (one look-up of the path: each reads the flash; a long text stays in pieces,
        # smaller ones on a short heap, where a turn's tool step had no 1 KB block left)
        text, size = fs.read_sized_text(p, READ_CAP, limits.READ_PIECE_SHORT if short() else 1024, True)
    except OSError as e:  # (a folder or a missing file is asked about only now)
        if fs.isdir(p):
            return "Error: %s is a directory (use list_dir)" % p
        if not fs.exists(p):
            return "Error: file not found: %s" % p
        return "Error: cannot read %s (%s)" % (p, e)
    if size > READ_CAP:
        from mimi.agent.act import text_bytes  # (loaded: it is the caller)

        shown = text_bytes(text)
        note = "\n[cut: %s is %d bytes; showed the first %d]" % (p, size, shown)
        text = text + (note,) if isinstance(text, tuple) else text + note
    return text if text else "(empty file)"
