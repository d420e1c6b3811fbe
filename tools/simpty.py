"""tools/sim --pty: the simulator's serial console on a pseudo-terminal (CPython).

The firmware (MicroPython unix port) runs with its stdin/stdout on pipes; this
module relays them to the master side of a pty whose slave (/dev/pts/N, printed,
optionally symlinked with --pty-link) plays the board's USB serial port:

    mpremote connect /dev/pts/N resume exec "memory_read()"

The slave is raw (no echo, no line editing, Ctrl-C is a byte), as a USB CDC port
is, so mimi.console sees exactly what mpremote sends. Everything the firmware
prints also goes to this terminal, with a line end as the board sends it: the
board's text stdout (print, sys.stdout.write) turns "\n" into "\r\n", the unix
port's does not, so a "\n" not after a "\r" is sent as "\r\n" (bytes the firmware
writes with sys.stdout.buffer, which the board does not change, carry their "\r\n"
already: mimi.console's framing). mpremote needs it from code that prints its raw
REPL's banner, such as micropython-lib's aiorepl. The other way, the board's text
stdin reads a "\r" (a terminal's Enter) as "\n", and so does the firmware here:
aiorepl takes only "\n" as the end of a line. The pty outlives board resets (restart()), like
a USB port that stays plugged in.

--baud N makes it a UART console instead (the "COM" port of many S3 boards): bytes
cross at N/10 per second each way, and the board's receive ring buffer holds only
UART_RING bytes the firmware has not read yet; a byte arriving when it is full is
lost, as on the board. The count of lost bytes is printed when it grows.
"""
import errno
import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
import tty

RESET_EXIT = 75  # limits.SIM_RESET_EXIT
STOP_GRACE_S = 10  # a Ctrl-C that has not stopped the firmware by then: killed (CtrlC)
PENDING_MAX = 256 * 1024  # output kept for a slow or absent reader, oldest dropped
RAW_BANNER = b"raw REPL; CTRL-B to exit"
UART_RING = 260  # the ESP32 port's stdin ring buffer (ports/esp32/mphalport.c)
UART_BURST = 32  # bytes a wire may deliver at once after a pause (a UART FIFO's worth)


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


class Uart:
    """The wire and receive ring of a UART console (see the module doc)."""

    def __init__(self, baud):
        self.rate = baud / 10.0  # 8N1: ten bits a byte
        self.inbound = bytearray()  # sent by the host, still on the wire
        self.t_in = self.t_out = time.monotonic()
        self.lost = self.shown = 0
        self.peak = 0  # most bytes waiting in the ring at once

    def _budget(self, attr):
        now = time.monotonic()
        n = int((now - getattr(self, attr)) * self.rate)
        if n:
            setattr(self, attr, now if n >= UART_BURST else getattr(self, attr) + n / self.rate)
        return min(n, UART_BURST)

    def deliver(self, in_fd):
        """Move what the wire carried since last time into the board's ring."""
        n = min(self._budget("t_in"), len(self.inbound))
        if not n:
            return
        waiting = struct.unpack("i", fcntl.ioctl(in_fd, termios.FIONREAD, b"\0\0\0\0"))[0]
        room = max(0, UART_RING - waiting)
        os.write(in_fd, bytes(self.inbound[:min(n, room)]))
        self.peak = max(self.peak, waiting + min(n, room))
        self.lost += max(0, n - room)
        del self.inbound[:n]
        if self.lost != self.shown:
            self.shown = self.lost
            print("sim: UART receive buffer full, %d bytes lost so far" % self.lost, file=sys.stderr)

    def sendable(self, pending):
        """How much of the board's output the wire takes now."""
        return min(len(pending), self._budget("t_out")) if pending else 0

    def timeout(self, pending):
        return 1 / self.rate if self.inbound or pending else 0.5


def cook(data, last=b""):
    """The board's text stdout line ends (\n -> \r\n; see the module doc); `last` is
    the byte sent before `data`."""
    out = re.sub(rb"(?<!\r)\n", b"\r\n", data)
    if last[-1:] == b"\r" and data[:1] == b"\n":
        out = out[1:]  # it ends the \r\n the last output began
    return out


def _relay(child, master, uart=None, ctrl_c=None):
    """Pump bytes until the child exits. Returns its exit code."""
    out_fd = child.stdout.fileno()
    in_fd = child.stdin.fileno()
    pending = bytearray()
    last = b""  # the byte before the next output, for cook()
    term = sys.stdout.buffer
    # A raw REPL session (the firmware's raw banner .. the host's Ctrl-B): mpremote's
    # framing stays off the terminal. A reset ends it (a new child starts friendly).
    quiet = False
    while True:
        rlist = [out_fd, master]
        wlist = [master] if pending else []
        try:
            r, w, _ = select.select(rlist, wlist, [], uart.timeout(pending) if uart else 0.5)
        except InterruptedError:
            continue
        if ctrl_c:
            ctrl_c.check(child)
        if uart:
            try:
                uart.deliver(in_fd)
            except BrokenPipeError:
                pass
        if out_fd in r:
            data = os.read(out_fd, 4096)
            if not data:
                return child.wait()
            pending += cook(data, last)
            last = data[-1:]
            if len(pending) > PENDING_MAX:
                del pending[: len(pending) - PENDING_MAX]
            if RAW_BANNER in data:
                quiet = True
            if not quiet:
                try:
                    term.write(data)
                    term.flush()
                except (OSError, ValueError):
                    pass
        if pending and (master in w or out_fd in r or uart):
            try:
                n = os.write(master, pending[:uart.sendable(pending)] if uart else pending)
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
                if b"\x02" in data:
                    quiet = False
                data = data.replace(b"\r", b"\n")  # the board's text stdin (module doc)
                if uart:
                    uart.inbound += data
                    continue
                try:
                    os.write(in_fd, data)
                except BrokenPipeError:
                    pass


class CtrlC:
    """Ctrl-C for the firmware as a byte on a pipe, not a signal. The unix port raises
    KeyboardInterrupt straight from its SIGINT handler wherever the firmware is; one
    inside a garbage collection leaves the heap locked for good ("MemoryError: memory
    allocation failed, heap is locked", docs/internals.md). The firmware runs with
    SIGINT blocked (a terminal's Ctrl-C reaches it and does nothing), reads the pipe
    (MIMI_SIM_CTRL_C) on its loop and raises the Ctrl-C there (board/host.py). One
    that has not stopped it in STOP_GRACE_S (the loop held by a long command, a
    firmware from before the pipe) ends with a kill."""

    def __init__(self):
        self.w = None
        self.since = None  # when the first Ctrl-C for this child was sent
        self.killed = False

    def start(self, cmd, **kw):
        """subprocess.Popen(cmd, **kw), SIGINT blocked, the pipe's read end given."""
        self.close()
        r, self.w = os.pipe()
        os.set_blocking(self.w, False)
        self.since = None
        env = dict(kw.pop("env", None) or os.environ, MIMI_SIM_CTRL_C=str(r))
        try:
            return subprocess.Popen(cmd, env=env, pass_fds=(r,), preexec_fn=_block_sigint, **kw)
        finally:
            os.close(r)

    def press(self):
        if self.since is None:
            self.since = time.monotonic()
        try:
            os.write(self.w, b"\x03")
        except OSError:  # the child has gone, or has plenty unread
            pass

    def check(self, child):
        """Kill child if a Ctrl-C sent STOP_GRACE_S ago has not stopped it."""
        if self.since is not None and time.monotonic() - self.since > STOP_GRACE_S and child.poll() is None:
            print("sim: the firmware did not stop within %d s of Ctrl-C: killed" % STOP_GRACE_S,
                  file=sys.stderr)
            self.killed = True
            child.kill()

    def close(self):
        if self.w is not None:
            os.close(self.w)
            self.w = None


def _block_sigint():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


class ResetButton:
    """SIGUSR1 to the simulator presses the board's RESET: the firmware is killed
    where it stands (no clean-up, like a reset or a power cut) and boots again."""

    def __init__(self):
        self.child = None
        self.pressed = False
        signal.signal(signal.SIGUSR1, self._press)

    def _press(self, signum, frame):
        if self.child and self.child.poll() is None:
            self.pressed = True
            self.child.kill()

    def released(self):
        """-> True once after a press (the child it killed has ended)."""
        was, self.pressed = self.pressed, False
        if was:
            print("sim: RESET pressed, booting again", file=sys.stderr)
        return was


def run(cmd, link=None, baud=None):
    master, slave, path = open_pty(link)
    print("sim: serial console on %s%s%s" % (path, " (%s)" % link if link else "",
                                           ", UART at %d baud" % baud if baud else ""), file=sys.stderr)
    print("sim: mpremote connect %s resume exec \"help()\"" % (link or path), file=sys.stderr)
    sys.stderr.flush()
    env = dict(os.environ, MIMI_CONSOLE="1")
    child = None
    button = ResetButton()
    ctrl_c = CtrlC()
    uart = Uart(baud) if baud else None

    def on_term(signum, frame):
        if child and child.poll() is None:
            ctrl_c.press()

    signal.signal(signal.SIGTERM, on_term)
    try:
        while True:
            child = button.child = ctrl_c.start(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                stderr=subprocess.STDOUT, env=env, bufsize=0)
            while True:
                try:
                    rc = _relay(child, master, uart, ctrl_c)
                    break
                except KeyboardInterrupt:
                    ctrl_c.press()  # this terminal's Ctrl-C, for the firmware
            if button.released():
                continue
            if rc == RESET_EXIT:
                print("sim: board reset, booting again", file=sys.stderr)
                continue
            if ctrl_c.killed:
                return 1
            return 0 if rc in (0, -signal.SIGINT, 130) else rc
    finally:
        ctrl_c.close()
        if link:
            try:
                os.unlink(link)
            except OSError:
                pass
        os.close(master)
        os.close(slave)
