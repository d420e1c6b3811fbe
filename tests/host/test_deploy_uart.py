"""mpremote over a UART console (tools/sim --pty --baud: bytes cross at the baud
rate, and the board's 260-byte receive ring loses what the firmware does not read
in time): raw-paste flow control keeps every byte, a 200 KB `fs cp` and a full
`make deploy` arrive byte for byte, and a reset in the middle of a deploy leaves a
board that boots the version it had."""
import hashlib
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT
from simproc import Sim

MPREMOTE = str(Path(sys.executable).parent / "mpremote")
DEPLOY = [sys.executable, str(ROOT / "tools" / "deploy.py")]
sys.path.insert(0, str(ROOT / "tools"))
import deploy  # noqa: E402

SHA256_OF = ("import hashlib, binascii\nfor p in %r:\n h = hashlib.sha256()\n"
             " with open(p, 'rb') as f:\n  while True:\n   b = f.read(512)\n   if not b: break\n"
             "   h.update(b)\n print(p, binascii.hexlify(h.digest()).decode())\n")


def mpremote(port, *args, timeout=300):
    r = subprocess.run([MPREMOTE, "connect", port, *args], capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def board_hashes(port, paths):
    """{path: sha256 hex} of files on the board, in chunks of commands."""
    out = {}
    for i in range(0, len(paths), 20):
        text = mpremote(port, "resume", "exec", SHA256_OF % (paths[i:i + 20],))
        for line in text.splitlines():
            p, _, h = line.strip().partition(" ")
            out[p] = h
    return out


@pytest.fixture
def uart(tmp_path):
    """The simulator with its console as a UART at 115200 baud."""
    with Sim.start(tmp_path, "ws_port=0", pty=True, baud=115200) as s:
        s.wait_for(r"I app: ready")
        yield s


def test_fs_cp_200kb_over_a_uart_is_byte_identical(uart, tmp_path):
    rnd = random.Random(7)
    words = ["alpha", "beta", "memory", "skill", "#", "'", "\\", "\"", "{}", "x" * 40]
    text = " ".join(rnd.choice(words) for _ in range(60000))[:200 * 1024] + "\n"
    src = tmp_path / "big.md"
    src.write_bytes(text.encode())
    # mpremote's own transport: raw-paste mode offered and kept (no fallback to the
    # unthrottled raw REPL)
    probe = subprocess.run([sys.executable, "-c",
                            "from mpremote.transport_serial import SerialTransport as T\n"
                            "t = T(%r)\nt.enter_raw_repl(soft_reset=False)\n"
                            "print(t.exec('print(6 * 7)'), t.use_raw_paste)\nt.exit_raw_repl()\nt.close()"
                            % uart.tty], capture_output=True, text=True, timeout=60)
    # a board's print() ends its line with \r\n (tools/simpty.py does the same)
    assert probe.stdout.strip() == "b'42\\r\\n' True", probe.stdout + probe.stderr
    mpremote(uart.tty, "resume", "fs", "cp", str(src), ":/spiffs/big.md")
    got = board_hashes(uart.tty, ["/spiffs/big.md"])
    assert got == {"/spiffs/big.md": hashlib.sha256(src.read_bytes()).hexdigest()}
    assert "bytes lost" not in uart.output()
    assert uart.running()


def test_full_deploy_over_a_uart_then_a_reset_mid_deploy(tmp_path):
    files = deploy.deploy_files(sim=True)  # to the simulator: with its host-only modules
    with Sim.start(tmp_path, "ws_port=0", pty=True, baud=921600) as sim:
        sim.wait_for(r"I app: ready")
        mpremote(sim.tty, "resume", "exec", "memory_write('kept across deploys')")
        # Every file sent (--force), through the board's staging and swap.
        booted = len(sim.output())
        r = subprocess.run(DEPLOY + ["--port", sim.tty, "--force"], capture_output=True, text=True,
                           timeout=600)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "Up to date" not in r.stdout and "OK: version" in r.stdout
        sim.wait_for(r"I app: ready", start=booted)
        assert "bytes lost" not in sim.output()
        paths = sorted(files)
        want = {p: hashlib.sha256(files[p]).hexdigest() for p in paths}
        assert board_hashes(sim.tty, paths) == want
        status = mpremote(sim.tty, "resume", "exec", "ota_status()", "+", "exec", "memory_read()")
        assert "update state: trial" in status and "kept across deploys" in status

        # RESET pressed while the next deploy copies: the board boots what it had.
        mpremote(sim.tty, "resume", "exec", "from mimi import safemode; safemode.confirm()")
        mark = len(sim.output())
        p = subprocess.Popen(DEPLOY + ["--port", sim.tty, "--force"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        for line in p.stdout:
            if line.startswith("cp lib "):  # mpremote names each top-level folder it copies
                time.sleep(3)  # well inside the ~8 s the package takes at this rate
                sim.p.send_signal(signal.SIGUSR1)
                break
        rest = p.communicate(timeout=300)[0]
        assert p.returncode != 0, rest
        assert "nothing was installed" in rest, rest
        sim.wait_for(r"RESET pressed, booting again[\s\S]*I app: ready", start=mark)
        time.sleep(0.5)  # the new boot's banner has passed
        status = mpremote(sim.tty, "resume", "exec", "ota_status()", "+", "exec", "memory_read()",
                          "+", "exec", "import os; print('staging', 'new' in os.listdir('/ota'))")
        assert "update state: ok" in status and "kept across deploys" in status, status
        assert "staging False" in status  # the half copy was cleared at boot
        assert board_hashes(sim.tty, paths) == want
        assert sim.running()
