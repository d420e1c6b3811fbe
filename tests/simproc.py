"""The simulator (tools/sim) as a child process of a host test.

    with Sim.start(tmp_path, "ws_port=0", "model=m") as sim:   # --fs tmp_path/fs.img
        sim.wait_for(r"I app: ready")
        connect(sim.port)                                      # from the gateway log line
    assert "loop stopped" in sim.output()

It runs in its own process group; a thread collects its output (stdout and stderr),
so the pipe never fills. stop() and wait() kill the whole group and fail if it does
not end in time; the end of the with block stops it the same way without failing. A
Sim still running when the test process exits is killed. console=True puts the
REPL on its stdin (MIMI_CONSOLE=1; type into it with send()); `started` is the
time.monotonic() of the launch (bench/ measures boot time from it).
"""
import atexit
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import simpty  # noqa: E402
PORT_RE = re.compile(r"gateway listening on ([\d.]+):(\d+)")
BOOT_S = 90  # a first boot builds the image and compiles: slow on a loaded machine
STOP_S = 20

_running = set()


def _signals(pid):
    """tools/sim's signal masks (Linux): blocked, ignored, caught."""
    try:
        with open("/proc/%d/status" % pid) as f:
            return " ".join(line.strip() for line in f if line.startswith(("SigBlk", "SigIgn", "SigCgt")))
    except OSError as e:
        return str(e)


class Sim:
    def __init__(self, cmd, env=None, console=False, ctrl_c=None):
        if console:
            env = dict(env or {}, MIMI_CONSOLE="1")
        self.started = time.monotonic()
        self.ctrl_c = ctrl_c  # the firmware itself (no tools/sim): its Ctrl-C pipe
        self.p = (ctrl_c.start if ctrl_c else subprocess.Popen)(
            cmd, stdin=subprocess.PIPE if console else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            encoding="utf-8", errors="replace", start_new_session=True,
            env=dict(os.environ, **env) if env else None)
        _running.add(self)
        self._text = ""
        self._eof = False
        self._cv = threading.Condition()
        self._pump = threading.Thread(target=self._read, daemon=True)
        self._pump.start()
        self._port = None
        self.tty = None

    @classmethod
    def start(cls, tmp_path, *sets, pty=False, env=None, console=False, heap=None,
              micropython=None, baud=None, parts=()):
        """tools/sim on tmp_path/fs.img (made on the first start, kept after), with
        --set KEY=VALUE for each of sets; pty: the console on tmp_path/tty (.tty),
        baud: that console as a UART at this rate; console: the console on stdin
        (send()); heap: MicroPython heap cap ("768k"); micropython: another
        interpreter (the 32-bit one); parts: --part specs (simulated hardware).
        SIGUSR1 to .p presses RESET."""
        tmp = Path(tmp_path)
        cmd = [sys.executable, str(ROOT / "tools" / "sim"), "--fs", str(tmp / "fs.img")]
        if heap:
            cmd += ["--heap", heap]
        if micropython:
            cmd += ["--micropython", micropython]
        if pty:
            cmd += ["--pty", "--pty-link", str(tmp / "tty")]
            if baud:
                cmd += ["--baud", str(baud)]
        for s in sets:
            cmd += ["--set", s]
        for p in parts:
            cmd += ["--part", p]
        sim = cls(cmd, env, console)
        if pty:
            sim.tty = str(tmp / "tty")
        return sim

    @classmethod
    def boot(cls, image, *sets):
        """The firmware straight from an existing image (tools/simboot.py, no tools/sim);
        stop() sends it Ctrl-C as tools/sim does (tools/simpty.py CtrlC)."""
        return cls([str(Path(sys.executable).parent / "micropython"),
                    str(ROOT / "tools" / "simboot.py"), str(image), str(ROOT / "build" / "lib"),
                    *sets], ctrl_c=simpty.CtrlC())

    def _read(self):
        for line in self.p.stdout:
            with self._cv:
                self._text += line
                self._cv.notify_all()
        with self._cv:
            self._eof = True
            self._cv.notify_all()

    def send(self, text):
        """Type text on the console (console=True). A stop while a typed command still
        runs waits for it to end (the firmware takes Ctrl-C on its loop)."""
        self.p.stdin.write(text)
        self.p.stdin.flush()

    def output(self):
        with self._cv:
            return self._text

    def wait_for(self, pattern, timeout=BOOT_S, start=0):
        """-> the first match of pattern (a regex, may span lines) in the output from
        offset start on; AssertionError with the output if the simulator ends first or
        nothing matches in time."""
        pat = re.compile(pattern) if isinstance(pattern, str) else pattern
        deadline = time.monotonic() + timeout
        with self._cv:
            while True:
                m = pat.search(self._text, start)
                if m:
                    return m
                left = deadline - time.monotonic()
                if self._eof or left <= 0:
                    why = "simulator exited" if self._eof else "no %r" % pat.pattern
                    raise AssertionError("%s; output:\n%s" % (why, self._text))
                self._cv.wait(left)

    def read_until(self, pattern, timeout=BOOT_S):
        """The output up to the end of the line where pattern first matches."""
        m = self.wait_for(pattern, timeout)
        end = m.string.find("\n", m.end())
        return m.string if end < 0 else m.string[:end + 1]

    @property
    def port(self):
        """The gateway port (waits for the log line `gateway listening on IP:PORT`)."""
        if self._port is None:
            self._port = int(self.wait_for(PORT_RE).group(2))
        return self._port

    @property
    def url(self):
        return "ws://127.0.0.1:%d/" % self.port

    def running(self):
        return self.p.poll() is None

    def wait(self, timeout=STOP_S):
        """Wait for the simulator to end -> exit code; after timeout it is killed and
        this fails."""
        try:
            self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            signals = _signals(self.p.pid)  # (a Ctrl-C that cannot reach tools/sim says so here)
            self.kill()
            raise AssertionError("simulator still running after %ss (%s); output:\n%s"
                                 % (timeout, signals, self.output()))
        return self._finish()

    def stop(self, sig=signal.SIGTERM, timeout=STOP_S):
        """SIGTERM, or SIGINT to the whole group as Ctrl-C in a terminal does (the
        firmware's process has it blocked: tools/sim passes it on, tools/simpty.py CtrlC),
        then wait(timeout). A Sim.boot() gets either as Ctrl-C on its pipe."""
        if self.p.poll() is None:
            if self.ctrl_c:
                self.ctrl_c.press()
            elif sig == signal.SIGINT:
                os.killpg(self.p.pid, sig)
            else:
                self.p.send_signal(sig)
        return self.wait(timeout)

    def kill(self):
        if self.p.returncode is None:  # not reaped yet: the pid is still this group's
            try:
                os.killpg(self.p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.p.wait()
        self._finish()

    def _finish(self):
        self._pump.join(10)  # the rest of the output
        if self.ctrl_c:
            self.ctrl_c.close()
        if self.p.stdin:
            self.p.stdin.close()
        _running.discard(self)
        return self.p.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            self.stop()
        except AssertionError:
            pass  # clean-up: a hang is killed here, not reported


@atexit.register
def _kill_leftovers():
    for sim in list(_running):
        sim.kill()


def llm_settings(fake):
    """--set values for the fake Anthropic API (fixture fake_anthropic, plain http://)."""
    return ("provider=anthropic", "api_key=" + fake["api_key"],
            "api_base=" + fake["http_base_url"], "model=test-model")
