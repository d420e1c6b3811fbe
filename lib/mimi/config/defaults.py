# First-boot install of the default data files (spiffs_data/, shipped in /defaults)
# into /spiffs. A file the user or the agent changed is never overwritten; a file
# still exactly as we installed it is upgraded when a new default ships; a default
# the user deleted stays deleted. The record of what was installed is a JSON map of
# relative path -> SHA-256.
import json
import hashlib
import binascii
from mimi import limits, fs, log

DIRS = ("config", "memory", "sessions", "skills")


def file_hash(path):
    h = hashlib.sha256()
    buf = bytearray(512)
    with open(path, "rb") as f:
        while True:
            n = f.readinto(buf)
            if not n:
                break
            h.update(buf[:n] if n < len(buf) else buf)
    return binascii.hexlify(h.digest()).decode()


def install(src=limits.DEFAULTS_DIR, dst=limits.SPIFFS, record=limits.DEFAULTS_RECORD):
    """Returns {'installed': [...], 'upgraded': [...], 'kept': [...]} of relative paths."""
    for d in DIRS:
        fs.makedirs(dst + "/" + d)
    try:
        with open(record) as f:
            rec = json.load(f)
        if not isinstance(rec, dict):
            rec = {}
    except (OSError, ValueError):
        rec = {}
    result = {"installed": [], "upgraded": [], "kept": []}
    changed = False
    for path in fs.walk_files(src):
        rel = path[len(src):]
        target = dst + rel
        new = file_hash(path)
        if not fs.exists(target):
            if rel in rec:
                continue  # the user deleted it: respect that
            fs.copy_atomic(path, target)
            rec[rel] = new
            result["installed"].append(rel)
            changed = True
            continue
        cur = file_hash(target)
        if cur == new:
            if rec.get(rel) != new:
                rec[rel] = new
                changed = True
        elif rec.get(rel) == cur:
            fs.copy_atomic(path, target)
            rec[rel] = new
            result["upgraded"].append(rel)
            changed = True
        else:
            result["kept"].append(rel)
    if changed:
        fs.write_atomic(record, json.dumps(rec))
    if result["installed"] or result["upgraded"]:
        log.info("defaults", "installed %d, upgraded %d default files",
                 len(result["installed"]), len(result["upgraded"]))
    return result
