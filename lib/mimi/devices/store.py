# Reading /devices.json (limits.DEVICES_PATH), for the table and for the boot pass that
# sets the actuators' off levels: a file that cannot be read is moved aside
# (limits.DEVICES_BAD) with a log line, the firmware runs without its devices, and the
# REPL's devices() says what happened (mimi.devices.problem).
from mimi import limits, log, fs
import mimi.devices as pkg


def read():
    """The file's entries ([] without a file, or after moving a bad one aside)."""
    path = limits.DEVICES_PATH
    if not fs.exists(path):
        pkg.saved(False)
        return []
    try:
        if fs.size(path) > limits.DEVICES_FILE_MAX:
            raise ValueError("bigger than %d bytes" % limits.DEVICES_FILE_MAX)
        from mimi import jsonutil

        data = jsonutil.loads(fs.read_head(path, limits.DEVICES_FILE_MAX))
        entries = data.get("devices") if isinstance(data, dict) else None
        if not isinstance(entries, list) or any(not isinstance(e, dict) for e in entries):
            raise ValueError('not {"devices": [{...}, ...]}')
        pkg.saved(True)
        return entries
    except OSError as e:
        why = "unreadable (%s)" % e
    except ValueError as e:
        why = "corrupt (%s)" % (str(e)[:80] or "not JSON")
    try:
        fs.rename(path, limits.DEVICES_BAD)
        where = "moved to %s" % limits.DEVICES_BAD
    except OSError as e:
        where = "could not be moved aside (%s)" % fs.why(e)
    pkg.problem = "%s was %s: %s; running without its devices" % (path, why, where)
    log.warning("devices", pkg.problem)
    pkg.saved(fs.exists(path))
    return []
