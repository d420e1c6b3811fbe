# Updates at boot, and the way back: finish a swap or a rollback that a reset
# interrupted, count a trial version's boots and roll it back when it keeps failing
# (on a trial boot the state it will have once confirmed is written beside it:
# safemode.confirm() renames it in once the version passed its check, update/check.py),
# and ota_status() / ota_rollback(). The small part of the update machinery every boot
# needs (mimi/safemode.py runs it and drops it again); downloads, installs and
# make deploy are in update/ota.py, which imports these. The way back lives here, not
# in ota.py: a version whose ota.py does not load can still be rolled back, and when
# this module itself does not load, safemode.update() runs the previous version's copy.
import os
import json
from mimi import limits, log, fs, board

NEW = limits.OTA_DIR + "/new"
PREV = limits.OTA_DIR + "/prev"
STATE = limits.OTA_STATE
CONFIRM = limits.OTA_CONFIRM
GONE = limits.OTA_DIR + "/gone"  # what a rollback takes out, until it is done
_DIR = 0x4000


class OTAError(Exception):
    pass


def rmtree(path):
    try:
        mode = os.stat(path)[0]
    except OSError:
        return
    if mode & _DIR:
        for e in list(os.ilistdir(path)):
            rmtree(path + "/" + e[0])
        os.rmdir(path)
    else:
        os.remove(path)


def _state():
    try:
        with open(STATE) as f:
            st = json.load(f)
        return st if isinstance(st, dict) else None
    except (OSError, ValueError):
        return None


def _save_state(st):
    fs.write_atomic(STATE, json.dumps(st))


def _finish_swap(st):
    fs.remove(CONFIRM)  # another version's
    for t in st["tops"]:
        src = NEW + "/" + t
        if fs.exists(src):
            if fs.exists("/" + t):
                fs.makedirs(fs.parent(PREV + "/" + t))
                os.rename("/" + t, PREV + "/" + t)
            fs.makedirs(fs.parent("/" + t))
            os.rename(src, "/" + t)
    st["state"] = "trial"
    st["boots"] = 0
    _save_state(st)
    rmtree(NEW)


def _finish_rollback(st):
    st["state"] = "rollback"
    _save_state(st)
    fs.remove(CONFIRM)
    for t in st["tops"]:
        created = t in st.get("created", ())
        if not created and not fs.exists(PREV + "/" + t):
            continue
        # Renamed away whole and removed after: removed in place, a power cut left
        # lib/mimi without its __init__ but with safemode, and every boot failed.
        if fs.exists("/" + t):
            rmtree(GONE + "/" + t)
            fs.makedirs(fs.parent(GONE + "/" + t))
            os.rename("/" + t, GONE + "/" + t)
        if not created:
            fs.makedirs(fs.parent("/" + t))
            os.rename(PREV + "/" + t, "/" + t)
    rmtree(GONE)
    fs.write_atomic(limits.OTA_DIR + "/last.json", json.dumps(
        {"rolled_back": st.get("version"), "back_to": st.get("prev"), "boots": st.get("boots")}))
    fs.remove(STATE)


def boot_check(reboot=True):
    """Boot guard (called first at boot): finish a swap or rollback a power cut
    interrupted, count a trial version's boots and roll it back when it has
    failed OTA_TRIAL_BOOTS times. Returns what it did (None: nothing)."""
    st = _state()
    if not st or st.get("state") != "swap":
        rmtree(NEW)  # staging a reset interrupted (download or deploy): the old version runs
    if not st:
        return None
    what = st.get("state")
    if what == "swap":
        _finish_swap(st)
        done = "swapped"
    elif what == "rollback":
        _finish_rollback(st)
        done = "rolled back"
    elif what == "trial":
        st["boots"] = st.get("boots", 0) + 1
        if st["boots"] <= limits.OTA_TRIAL_BOOTS:
            _save_state(st)
            ok = dict(st)
            ok["state"] = "ok"
            fs.write_atomic(CONFIRM, json.dumps(ok))
            print("OTA: trying version %s (boot %d of %d before rollback)" % (
                st.get("version"), st["boots"], limits.OTA_TRIAL_BOOTS))
            return "trial"
        log.error("ota", "version %s failed to come up %d times: rolling back to %s",
                  st.get("version"), st["boots"] - 1, st.get("prev"))
        print("OTA: version %s failed %d boots; restoring %s" % (
            st.get("version"), st["boots"] - 1, st.get("prev")))
        _finish_rollback(st)
        done = "rolled back"
    else:
        return None
    if reboot:  # the modules in RAM are the other version's
        board.reset()
    return done


def rollback(reboot=True):
    """Put the previous version back (one on trial, or confirmed)."""
    st = _state()
    if not st or st.get("state") not in ("ok", "trial") or not fs.isdir(PREV):
        raise OTAError("no previous version to go back to")
    _finish_rollback(st)
    if reboot:
        board.reset()


# --- REPL commands ----------------------------------------------------------
def ota_status():
    import mimi

    st = _state() or {}
    print("version %s; update state: %s" % (mimi.VERSION, st.get("state", "none")))
    d = getattr(mimi, "downloading", None)  # (update/download.py)
    if d is not None:
        print("downloading %s: %s so far" % (d.url, d.text()))
    if st.get("prev"):
        print("previous version %s kept in %s" % (st["prev"], PREV))
    try:
        with open(limits.OTA_DIR + "/last.json") as f:
            print("last rollback:", f.read())
    except OSError:
        pass


def ota_rollback():
    try:
        rollback(reboot=False)
    except OTAError as e:
        print("Error:", e)
        return
    print("OK: previous version restored; restarting.")
    board.reset()
