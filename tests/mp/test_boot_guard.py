# main.py's boot guard: an app that crashes while main.py imports it (a bad
# update) is counted like any crash-boot, a trial update is rolled back, and the
# host never loops: safe mode leaves the REPL. Each "boot" runs the repo's real
# main.py with the package's submodules taken from the test's flash (/lib/mimi);
# a reset is the SystemExit board.reset() raises on the host.
import sys
import mimi
from support import read, write, Capture
from mimi import limits, fs, safemode, log  # noqa: F401 - loaded before the swap
from mimi.update import ota
from mimi.config import settings as config

OLD = {"/lib/mimi/app.py": "def main():\n    print('old app runs')\n",
       "/lib/mimi/repl.py": "def memory_read():\n    return 'old'\n"}
NEW = {"/lib/mimi/app.py": "raise ImportError('new app is broken')\n",
       "/lib/mimi/repl.py": "def memory_read():\n    return 'new'\n"}


def setup():
    import support

    global MAIN, REAL_PATH
    MAIN = read(support.REPO + "/main.py")
    REAL_PATH = mimi.__path__
    config.cfg.load()
    for p, text in OLD.items():
        write(p, text)


def teardown():
    mimi.__path__ = REAL_PATH


def boot():
    """One boot of main.py in fresh RAM: (reset exit code or None, printed text, namespace)."""
    safemode.boots, safemode.active = 0, False
    for m in ("mimi.app", "mimi.repl"):
        sys.modules.pop(m, None)
    mimi.__path__ = "/lib/mimi"
    ns = {"__name__": "__main__"}
    code = None
    with Capture() as c:
        try:
            exec(MAIN, ns)
        except SystemExit as e:
            code = e.args[0]
        finally:
            mimi.__path__ = REAL_PATH
    return code, c.text, ns


def install_new():
    for p, text in NEW.items():
        write(ota.NEW + p, text)
    ota.install({"tops": ["lib"], "version": "9.9.9"})
    assert read("/lib/mimi/app.py") == NEW["/lib/mimi/app.py"]


def test_update_failing_at_import_is_rolled_back():
    install_new()
    for n in (1, 2):  # trial boots: crash while importing, counted, reset
        code, text, _ = boot()
        assert code == limits.SIM_RESET_EXIT, text
        assert "boot %d of %d" % (n, limits.OTA_TRIAL_BOOTS) in text and "resetting" in text
        assert read("/lib/mimi/app.py") == NEW["/lib/mimi/app.py"]
    code, text, _ = boot()  # the third: rolled back, reset into the old version
    assert code == limits.SIM_RESET_EXIT and "restoring" in text, text
    assert read("/lib/mimi/app.py") == OLD["/lib/mimi/app.py"]
    assert ota._state() is None and "9.9.9" in read("/ota/last.json")
    assert safemode.count() == 0  # the old version does not start in safe mode
    code, text, ns = boot()
    assert code is None and "old app runs" in text and "SAFE MODE" not in text, text
    assert ns["memory_read"]() == "old"  # the REPL commands are in the REPL namespace


def test_crash_without_update_ends_in_the_repl_not_a_loop():
    write("/lib/mimi/app.py", NEW["/lib/mimi/app.py"])
    for n in range(1, limits.SAFE_MODE_BOOTS + 1):
        code, text, _ = boot()
        assert code == limits.SIM_RESET_EXIT and "%d in a row" % n in text, text
    code, text, ns = boot()
    assert code is None, text  # no reset: main.py ends, the REPL is the user's
    assert "SAFE MODE" in text and "REPL stays" in text
    assert ns["memory_read"]() == "old"  # what did import is still usable
    assert safemode.count() == limits.SAFE_MODE_BOOTS + 1


def test_broken_package_uses_the_previous_versions_guard():
    # The new package cannot even import its boot guard (e.g. .mpy files of another
    # MicroPython version): main.py imports the guard of the version kept in /ota/prev.
    install_new()
    write("/lib/mimi/safemode.py", "raise ValueError('incompatible .mpy file')\n")
    write(ota.PREV + "/lib/mimi/__init__.py", "")
    write(ota.PREV + "/lib/mimi/safemode.py",
          "def crashed():\n    open('/prev_guard_ran', 'w').close()\n")
    sys.modules.pop("mimi.safemode", None)
    del mimi.safemode  # as if the package had never loaded it
    saved = {k: v for k, v in sys.modules.items() if k == "mimi" or k.startswith("mimi.")}
    path = list(sys.path)
    try:
        code, text, _ = boot()
        assert code is None and fs.exists("/prev_guard_ran"), text
        assert sys.path[0] == ota.PREV + "/lib"
    finally:
        sys.path[:] = path
        for k in [k for k in sys.modules if k == "mimi" or k.startswith("mimi.")]:
            del sys.modules[k]
        sys.modules.update(saved)
        mimi.safemode = safemode


UPDATE_PKG = ("mimi.update", "mimi.update.boot", "mimi.update.ota", "mimi.update.staging")


def source(name):
    """A module of the repo as the flash of a version holds it (source)."""
    import support

    return read(support.REPO + "/lib/mimi/" + name)


class running_flash:
    """The update package taken from the flash's /lib/mimi while the block runs (as the
    running version's own), the test's loaded copy put back after."""

    def __enter__(self):
        self.saved = {m: sys.modules.pop(m) for m in UPDATE_PKG if m in sys.modules}
        if hasattr(mimi, "update"):
            del mimi.update
        mimi.__path__ = "/lib/mimi"

    def __exit__(self, *exc):
        mimi.__path__ = REAL_PATH
        for m in [m for m in sys.modules if m.startswith("mimi.update")]:
            del sys.modules[m]
        sys.modules.update(self.saved)
        mimi.update = self.saved["mimi.update"]


def test_update_code_that_fails_at_import_still_rolls_back():
    # Issue 25, item 4: a version whose update/ota.py raises at import was confirmed,
    # and then ota_status(), ota_rollback(), ota_update() and make deploy all failed:
    # only a re-flash was left. The way back must not depend on that code.
    from mimi import repl

    new = dict(NEW, **{"/lib/mimi/app.py": "def main():\n    print('new app runs')\n",
                       "/lib/mimi/update/__init__.py": "",
                       "/lib/mimi/update/boot.py": source("update/boot.py"),
                       "/lib/mimi/update/ota.py": "raise ImportError('this ota.py is broken')\n"})
    for p, text in new.items():
        write(ota.NEW + p, text)
    ota.install({"tops": ["lib"], "version": "9.9.9"})
    for state in ("trial", "ok"):  # on trial, and confirmed (by a version without the check)
        st = ota._state()
        st["state"] = state
        ota._save_state(st)
        with running_flash():
            with Capture() as c:
                repl.ota_status()
        assert "version %s; update state: %s" % (mimi.VERSION, state) in c.text, c.text
    with running_flash():
        with Capture() as c:
            try:
                repl.ota_rollback()
                code = None
            except SystemExit as e:
                code = e.args[0]
    assert code == limits.SIM_RESET_EXIT and "OK: previous version restored" in c.text, c.text
    assert read("/lib/mimi/app.py") == OLD["/lib/mimi/app.py"]
    assert ota._state() is None


def test_boot_check_that_fails_at_import_is_the_previous_versions():
    # The new version's update/boot.py itself raises at import: the boot guard runs
    # the copy of the version kept in /ota/prev, which counts the trial boots and
    # rolls the new one back (it used to log "update check failed" and keep it).
    old = {"/lib/mimi/update/__init__.py": "", "/lib/mimi/update/boot.py": source("update/boot.py")}
    for p, text in old.items():
        write(p, text)
    new = dict(NEW, **{"/lib/mimi/update/__init__.py": "",
                       "/lib/mimi/update/boot.py": "raise ValueError('incompatible .mpy file')\n"})
    for p, text in new.items():
        write(ota.NEW + p, text)
    ota.install({"tops": ["lib"], "version": "9.9.9"})
    for n in (1, 2):
        with running_flash():
            code, text, _ = boot()
        assert code == limits.SIM_RESET_EXIT, text
        assert "boot %d of %d" % (n, limits.OTA_TRIAL_BOOTS) in text, text
    with running_flash():
        code, text, _ = boot()
    assert code == limits.SIM_RESET_EXIT and "restoring" in text, text
    assert read("/lib/mimi/app.py") == OLD["/lib/mimi/app.py"]
    assert "9.9.9" in read("/ota/last.json")
