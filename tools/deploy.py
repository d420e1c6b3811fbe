#!/usr/bin/env python3
"""Copy this repo's code to a running board with mpremote, keeping the user's data.

  tools/deploy.py --port PORT [--mip] [--no-reset] [--dry-run]

Writes /boot.py, /main.py, /lib/mimi/** (compiled .mpy), /defaults/** (spiffs_data/)
and /certs/roots.pem; removes .mpy files of the app that no longer exist; then
resets the board. /spiffs/** (memory, sessions, skills, cron, the user's edits of
the default files) and /config.json (settings and secrets) are never written.
--mip also installs the optional micropython-lib packages (logging, aiorepl).
Every mpremote command starts with `resume`: the running firmware is not soft-reset
(mimi.console answers mpremote while the loop runs).
"""
import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "lib"))
import flash  # noqa: E402  (port check, Fail)
import mkimage  # noqa: E402
from mimi import limits  # noqa: E402

APP_DIRS = ("/lib/mimi", limits.DEFAULTS_DIR)  # only these trees are pruned
NEVER = (limits.SPIFFS + "/", limits.CONFIG_PATH)
MIP_PACKAGES = ("logging", "aiorepl")

# Runs on the board: delete files under the app trees that the new build lacks.
PRUNE = r"""
import os
def _prune(top, keep):
    n = 0
    try:
        names = os.listdir(top)
    except OSError:
        return 0
    for name in names:
        p = top + '/' + name
        if os.stat(p)[0] & 0x4000:
            n += _prune(p, keep)
            try:
                if not os.listdir(p):
                    os.rmdir(p)
            except OSError:
                pass
        elif p not in keep:
            os.remove(p)
            print('removed', p)
            n += 1
    return n
_keep = set(%r)
_n = sum(_prune(t, _keep) for t in %r)
print('stale files removed:', _n)
del _prune, _keep, _n
"""

RESET = ("import sys\nif sys.platform == 'esp32':\n    import machine\n    machine.reset()\n"
         "else:\n    from mimi import board\n    board.reset()\n")


def deploy_files():
    """{device path: bytes} of what deploy writes; never user data."""
    files = mkimage.image_files(ROOT / "build")
    files.pop(limits.CONFIG_PATH, None)
    for path in files:
        assert not path.startswith(NEVER[0]) and path != NEVER[1], path
    return files


def stage(files, where):
    for path, data in files.items():
        out = where / path.lstrip("/")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
    return sorted({p.lstrip("/").split("/", 1)[0] for p in files})


def mpremote_cmd():
    exe = Path(sys.executable).parent / "mpremote"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "mpremote"]


def run(port, args, dry, cwd=None):
    cmd = mpremote_cmd() + ["connect", port, "resume"] + args
    shown = " ".join(a if len(a) < 60 else a[:57] + "..." for a in cmd[1:])
    print("+ mpremote " + shown, flush=True)
    if dry:
        return
    r = subprocess.run(cmd, cwd=cwd)
    if r.returncode:
        raise flash.Fail("mpremote failed on %s (exit %d): is the board connected and running? "
                         "Try `mpremote connect %s resume exec \"help()\"`" % (port, r.returncode, port))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", default="")
    ap.add_argument("--mip", action="store_true", help="also mip install %s" % ", ".join(MIP_PACKAGES))
    ap.add_argument("--no-reset", action="store_true")
    ap.add_argument("--dry-run", action="store_true", help="print the mpremote commands only")
    a = ap.parse_args(argv)
    try:
        if not a.port:
            raise flash.Fail("PORT is required, e.g. make deploy PORT=/dev/ttyACM0")
        if not a.dry_run:
            flash.check_port(a.port)
        files = deploy_files()
        with tempfile.TemporaryDirectory(prefix="mimi-deploy-") as tmp:
            staging = Path(tmp)
            tops = stage(files, staging)
            # One connection: copy everything, then prune what the build no longer has.
            args = ["fs", "cp", "-r"] + tops + [":"]
            args += ["+", "exec", PRUNE % (sorted(files), APP_DIRS)]
            run(a.port, args, a.dry_run, cwd=str(staging))
        if a.mip:
            run(a.port, ["mip", "install"] + list(MIP_PACKAGES), a.dry_run)
        if not a.no_reset:
            run(a.port, ["exec", "--no-follow", RESET], a.dry_run)
        print("deployed %d files to %s%s" % (len(files), a.port, "" if a.no_reset else "; board reset"))
    except flash.Fail as e:
        print("error: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
