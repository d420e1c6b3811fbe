"""tools/sim --pty: the simulator's serial console on a pseudo-terminal (CPython).

The firmware (MicroPython unix port) runs with its stdin/stdout on pipes; this
module relays them to the master side of a pty whose slave (/dev/pts/N, printed,
optionally symlinked with --pty-link) plays the board's USB serial port:

    mpremote connect /dev/pts/N resume exec "memory_read()"

The slave is raw (no echo, no line editing, Ctrl-C is a byte), as a USB CDC port
is, so mimi.console sees exactly what mpremote sends. Everything the firmware
prints also goes to this terminal. The pty outlives board resets (restart()), like
a USB port that stays plugged in.
"""
import errno
import os
import select
import signal
import subprocess
import sys
import tty

RESET_EXIT = 75  # limits.SIM_RESET_EXIT
PENDING_MAX = 256 * 1024  # output kept for a slow or absent reader, oldest dropped


def open_pty(link=None):
    master, slave = os.openpty()
    tty.setraw(slave)
    path = os.ttyname(slave)
    os.set_blocking(master, False)
    if link:
        try:
            os.unlink(link)
        except FileNotFoundError:
            pass
        os.symlink(path, link)
    # The slave stays open here, so the master never sees a hang-up between clients.
    return master, slave, path


def _relay(child, master):
    """Pump bytes until the child exits. Returns its exit code."""
    out_fd = child.stdout.fileno()
    in_fd = child.stdin.fileno()
    pending = bytearray()
    term = sys.stdout.buffer
    quiet = False  # a raw REPL session (Ctrl-A .. Ctrl-B): keep mpremote's framing off the terminal
    while True:
        rlist = [out_fd, master]
        wlist = [master] if pending else []
        try:
            r, w, _ = select.select(rlist, wlist, [], 0.5)
        except InterruptedError:
            continue
        if out_fd in r:
            data = os.read(out_fd, 4096)
            if not data:
                return child.wait()
            pending += data
            if len(pending) > PENDING_MAX:
                del pending[: len(pending) - PENDING_MAX]
            if not quiet:
                try:
                    term.write(data)
                    term.flush()
                except (OSError, ValueError):
                    pass
        if pending and (master in w or out_fd in r):
            try:
                n = os.write(master, pending)
                del pending[:n]
            except BlockingIOError:
                pass
            except OSError as e:
                if e.errno != errno.EIO:
                    raise
        if master in r:
            try:
                data = os.read(master, 4096)
            except BlockingIOError:
                data = b""
            except OSError as e:
                if e.errno != errno.EIO:
                    raise
                data = b""
            if data:
                if b"\x01" in data or b"\x02" in data:
                    quiet = data.rfind(b"\x01") > data.rfind(b"\x02")
                try:
                    os.write(in_fd, data)
                except BrokenPipeError:
                    pass


def run(cmd, link=None):
    master, slave, path = open_pty(link)
    print("sim: serial console on %s%s" % (path, " (%s)" % link if link else ""), file=sys.stderr)
    print("sim: mpremote connect %s resume exec \"help()\"" % (link or path), file=sys.stderr)
    sys.stderr.flush()
    env = dict(os.environ, MIMI_CONSOLE="1")
    child = None

    def on_term(signum, frame):
        if child and child.poll() is None:
            child.send_signal(signal.SIGINT)

    signal.signal(signal.SIGTERM, on_term)
    try:
        while True:
            child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, env=env, bufsize=0)
            while True:
                try:
                    rc = _relay(child, master)
                    break
                except KeyboardInterrupt:
                    continue  # the child got the same Ctrl-C and is shutting down
            if rc == RESET_EXIT:
                print("sim: board reset, booting again", file=sys.stderr)
                continue
            return 0 if rc in (0, -signal.SIGINT, 130) else rc
    finally:
        if link:
            try:
                os.unlink(link)
            except OSError:
                pass
        os.close(master)
        os.close(slave)
