#!/usr/bin/env python3
"""Copy this repo's code to a running board with mpremote, keeping the user's data.

  tools/deploy.py --port PORT [--mip] [--force] [--no-reset] [--dry-run]

Installs /boot.py, /main.py, /lib/mimi/** (compiled .mpy), /defaults/** (spiffs_data/)
and /certs/roots.pem the way an OTA update does (lib/mimi/update/), so a reset or a
pulled cable mid-copy never leaves a half-written version: the board first copies
its installed files to /ota/new, mpremote sends the files that differ and the
manifest (sizes, SHA-256) there, the board checks every staged file against it,
drops files the build no longer has, and only then swaps the directories (the old
version kept in /ota/prev, the new one on trial: rolled back if it fails to boot
twice). Then the board is reset. /spiffs/** (memory, sessions, skills, cron, the
user's edits of the default files), /config.json (settings and secrets) and other
packages in /lib are never written. --mip also installs the optional
micropython-lib packages (logging, aiorepl). Every mpremote command starts with
`resume`: the running firmware is not soft-reset (mimi.console answers mpremote
while the loop runs).
"""
import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "lib"))
import bundle  # noqa: E402  (the manifest format of OTA bundles)
import flash  # noqa: E402  (port check, Fail)
import mkimage  # noqa: E402
from mimi import limits  # noqa: E402

NEVER = (limits.SPIFFS + "/", limits.CONFIG_PATH)
MIP_PACKAGES = ("logging", "aiorepl")
# The board's own staging code runs the deploy: lib/mimi/update/staging.py, or on a
# board still running a version from before lib/mimi/update/, lib/mimi/staging.py.
STAGING_PKGS = ("mimi.update", "mimi")
STAGE = "from %s import staging\nstaging.begin_deploy()"
INSTALL = "from %s import staging\nstaging.finish_deploy()"
MANIFEST = "manifest.json"
STAGING = limits.OTA_DIR + "/new"  # ota.NEW

RESET = ("import sys\nif sys.platform == 'esp32':\n    import machine\n    machine.reset()\n"
         "else:\n    from mimi import board\n    board.reset()\n")


def deploy_files(sim=False):
    """{device path: bytes} of what deploy writes; never user data. sim: to the
    simulator, with its host-only modules (the swap replaces /lib/mimi whole)."""
    files = mkimage.image_files(ROOT / "build", sim=sim)
    files.pop(limits.CONFIG_PATH, None)
    for path in files:
        assert not path.startswith(NEVER[0]) and path != NEVER[1], path
    return files


def is_simulator(port):
    """A pseudo-terminal is the simulator's console (tools/sim --pty): a board is a USB
    serial port (or rfc2217:/socket:). Wrong the safe way: a board reached over a pty
    gets the host-only modules too (~38 KB of flash), never imports them."""
    path = os.path.realpath(port)
    return path.startswith("/dev/pts/") or path[:9] == "/dev/ttys" and path[9:].isdigit()  # Linux, macOS


def stage(files, where):
    """The files under `where` as the board's /ota/new will hold them, with the
    manifest; -> the top-level names to copy."""
    for path, data in files.items():
        out = where / path.lstrip("/")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
    (where / MANIFEST).write_bytes(bundle.manifest_bytes(files, bundle.app_version()))
    return sorted({p.lstrip("/").split("/", 1)[0] for p in files}) + [MANIFEST]


def mpremote_cmd():
    exe = Path(sys.executable).parent / "mpremote"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "mpremote"]


class OlderLayout(Exception):
    """The board's version has no lib/mimi/update/ (nothing was changed on it)."""


def run(port, args, dry, cwd=None):
    cmd = mpremote_cmd() + ["connect", port, "resume"] + args
    shown = " ".join(a if len(a) < 60 else a[:57] + "..." for a in cmd[1:])
    print("+ mpremote " + shown.replace("\n", "; "), flush=True)
    if dry:
        return
    # Shown as it comes (progress) and kept, to explain a failure.
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         env=dict(os.environ, PYTHONUNBUFFERED="1"))
    seen = bytearray()
    for chunk in iter(lambda: p.stdout.read1(4096), b""):
        sys.stdout.buffer.write(chunk)
        sys.stdout.flush()
        seen += chunk
    out = seen.decode(errors="replace")
    if p.wait():
        if "no module named 'mimi.update'" in out:
            raise OlderLayout()
        if "no module named 'mimi.staging'" in out:
            raise flash.Fail("the firmware on %s predates safe deploys (no mimi.staging): "
                             "update it once with `make flash` (this erases the board's data)" % port)
        if "OTAError" in out:
            raise flash.Fail("the board refused the copy (nothing was installed, the running version "
                             "stays): see the error above; run make deploy again")
        raise flash.Fail("mpremote failed on %s (exit %d): is the board connected and running? "
                         "Try `mpremote connect %s resume exec \"help()\"`. Unless the output says "
                         "\"OK: version ... installed\", nothing was installed: the board runs its "
                         "version as before (a partial copy in %s is discarded); run make deploy again"
                         % (port, p.returncode, port, STAGING))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", default="")
    ap.add_argument("--mip", action="store_true", help="also mip install %s" % ", ".join(MIP_PACKAGES))
    ap.add_argument("--force", action="store_true",
                    help="send every file, also those the board already has unchanged")
    ap.add_argument("--no-reset", action="store_true")
    ap.add_argument("--dry-run", action="store_true", help="print the mpremote commands only")
    a = ap.parse_args(argv)
    try:
        if not a.port:
            raise flash.Fail("PORT is required, e.g. make deploy PORT=/dev/ttyACM0")
        if not a.dry_run:
            flash.check_port(a.port)
        files = deploy_files(sim=is_simulator(a.port))
        if a.mip:  # /lib/<package>: outside what the swap replaces
            run(a.port, ["mip", "install"] + list(MIP_PACKAGES), a.dry_run)
        with tempfile.TemporaryDirectory(prefix="mimi-deploy-") as tmp:
            staging = Path(tmp)
            tops = stage(files, staging)
            # One connection: stage the installed version, send what differs (mpremote
            # skips files whose SHA-256 matches), verify and swap on the board, reset.
            # The reset must not wait for another connection: after the swap the
            # running version's own files are gone from the flash, and a part of it
            # loaded when used (its console's raw REPL, which a new connection needs)
            # may be gone with them.
            for pkg in STAGING_PKGS:
                args = ["exec", STAGE % pkg, "+", "fs", "cp", "-r"] + (["--force"] if a.force else [])
                args += tops + [":%s/" % STAGING]
                args += ["+", "exec", INSTALL % pkg]
                if not a.no_reset:
                    args += ["+", "exec", "--no-follow", RESET]
                try:
                    run(a.port, args, a.dry_run, cwd=str(staging))
                    break
                except OlderLayout:
                    print("(the board runs a version from before lib/mimi/update/: its staging is "
                          "mimi.staging)", flush=True)
        print("deployed %d files to %s%s" % (len(files), a.port, "; board reset" if not a.no_reset else
                                             "; reset the board now: it still runs the version it had"))
    except flash.Fail as e:
        print("error: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
