"""tools/sim --pty: the real mpremote reaches the REPL functions of the running
firmware over a pseudo-terminal, and the firmware keeps serving meanwhile."""
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from simproc import Sim

MPREMOTE = str(Path(sys.executable).parent / "mpremote")
SECRET = "sk-ant-secret-0123456789"


@pytest.fixture
def sim(tmp_path):
    with Sim.start(tmp_path, "ws_port=0", "api_key=" + SECRET, pty=True) as s:
        s.wait_for(r"I app: ready")
        assert Path(s.tty).exists()
        yield s


def mpremote(port, *args, timeout=60):
    r = subprocess.run([MPREMOTE, "connect", port, *args], capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def http_get_root(port):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    return data.split(b"\r\n", 1)[0]


def test_mpremote_resume_over_pty(sim):
    port = sim.tty
    assert "hello 2" in mpremote(port, "resume", "exec", "print('hello', 1 + 1)")
    shown = mpremote(port, "resume", "exec", "config_show()")
    assert "api_key" in shown and SECRET not in shown and SECRET[:4] + "****" in shown
    mpremote(port, "resume", "exec", "memory_write('The user likes green tea.')")
    assert "likes green tea" in mpremote(port, "resume", "exec", "memory_read()")
    # Errors come back as errors, and the console carries on.
    r = subprocess.run([MPREMOTE, "connect", port, "resume", "exec", "1/0"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "ZeroDivisionError" in r.stdout + r.stderr
    assert mpremote(port, "resume", "eval", "6 * 7").strip() == "42"
    # Several commands in one connection, and the filesystem commands.
    listing = mpremote(port, "resume", "fs", "ls", "/spiffs/memory", "+", "exec", "wifi_status()")
    assert "MEMORY.md" in listing and "WiFi: online" in listing and "127.0.0.1" in listing
    assert sim.running()
    # The loop kept running: the log shows the gateway, and it still answers.
    m = re.search(r"listening on 127\.0\.0\.1:(\d+)", sim.output())
    assert m, "gateway port not in the log"
    assert http_get_root(int(m.group(1))).startswith(b"HTTP/1.1 ")
    token = re.search(r"ws_token = (\w+)", sim.output()).group(1)
    from websockets.sync.client import connect

    with connect("ws://127.0.0.1:%s/?token=%s" % (m.group(1), token), open_timeout=20) as ws:
        ws.ping().wait(20)  # the loop answers: handshake and pong


def test_without_resume_the_firmware_survives(sim):
    port = sim.tty
    # mpremote's automatic soft reset is acknowledged but does not stop the firmware.
    assert "still here" in mpremote(port, "exec", "print('still here')")
    assert sim.running()
    assert "42" in mpremote(port, "resume", "eval", "6 * 7")


def test_fs_cp_and_restart_keep_the_pty(sim, tmp_path):
    port = sim.tty
    src = tmp_path / "note.txt"
    src.write_text("hello from the host\n" * 50)
    mpremote(port, "resume", "fs", "cp", str(src), ":/spiffs/note.txt")
    assert mpremote(port, "resume", "fs", "cat", ":/spiffs/note.txt").count("hello from the host") == 50
    mpremote(port, "resume", "exec", "--no-follow", "restart()")
    sim.wait_for(r"board reset, booting again[\s\S]*I app: ready")
    assert "50" in mpremote(port, "resume", "eval", "open('/spiffs/note.txt').read().count('host')")


def test_deploy_keeps_user_data_and_prunes_stale_code(sim):
    port = sim.tty
    mpremote(port, "resume", "exec", "memory_write('remember the milk')", "+",
             "exec", "config_set('model', 'my-model')", "+",
             "fs", "touch", ":/lib/mimi/gone_module.mpy", "+",
             "fs", "touch", ":/spiffs/skills/mine.md")
    booted = len(sim.output())  # the next "I app: ready" is the new boot
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "deploy.py"), "--port", port],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "removed /lib/mimi/gone_module.mpy" in r.stdout
    assert "/spiffs" not in r.stdout.replace("/spiffs/skills", "")  # nothing of the user's touched
    # The board was reset and came back with the user's data.
    sim.wait_for(r"I app: ready", start=booted)
    text = mpremote(port, "resume", "exec", "memory_read()", "+", "exec", "config_show()",
                    "+", "fs", "ls", ":/spiffs/skills", "+", "fs", "ls", ":/lib/mimi")
    assert "remember the milk" in text and "my-model" in text and "mine.md" in text
    assert "gone_module" not in text and "app.mpy" in text


def test_deploy_dry_run_and_errors(tmp_path):
    deploy = [sys.executable, str(ROOT / "tools" / "deploy.py")]
    r = subprocess.run(deploy + ["--port", "/dev/ttyX", "--mip", "--dry-run"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "resume exec from mimi.update import staging; staging.begin_deploy() + fs cp -r" in r.stdout, r.stdout
    assert "manifest.json :/ota/new/ + exec from mimi.update import staging; staging.finish_deploy()" in r.stdout
    assert "resume mip install logging aiorepl" in r.stdout
    assert "config.json" not in r.stdout
    r = subprocess.run(deploy + ["--port", str(tmp_path / "nope")], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 2 and "is not there" in r.stderr


def test_deploy_tells_the_simulator_s_pty_from_a_board(tmp_path):
    # to the simulator a deploy sends its host-only modules too (without them it
    # would not boot); a board gets its own modules only
    import deploy

    master, slave = os.openpty()
    try:
        (tmp_path / "tty").symlink_to(os.ttyname(slave))  # tools/sim --pty-link
        assert deploy.is_simulator(os.ttyname(slave)) and deploy.is_simulator(str(tmp_path / "tty"))
    finally:
        os.close(master)
        os.close(slave)
    for port in ("/dev/ttyACM0", "/dev/ttyUSB0", "/dev/tty.usbmodem1101", "rfc2217://10.0.0.5:4000", "COM3"):
        assert not deploy.is_simulator(port), port
    assert not [p for p in deploy.deploy_files() if "/board/host" in p]
    assert "/lib/mimi/board/host.mpy" in deploy.deploy_files(sim=True)


def test_mpremote_shortcuts(sim, tmp_path):
    port = sim.tty
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    inst = [sys.executable, str(ROOT / "tools" / "mpremote_config.py"), "install"]
    r = subprocess.run(inst, capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0 and "installed" in r.stdout, r.stdout + r.stderr
    # An existing config of the user's is not clobbered.
    target = tmp_path / "xdg" / "mpremote" / "config.py"
    target.write_text("commands = {}\n")
    r = subprocess.run(inst, capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 1 and "left as it is" in r.stdout
    r = subprocess.run(inst + ["--force"], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0 and (tmp_path / "xdg/mpremote/config.py.bak").exists()

    def short(*args):
        r = subprocess.run([MPREMOTE, "connect", port, *args], capture_output=True, text=True,
                           env=env, timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout

    short("memory-write", "'Shortcut memory.'")
    assert "Shortcut memory." in short("memory-read")
    short("config-set", "'model'", "'short-model'")
    shown = short("config-show")
    assert "short-model" in shown and SECRET not in shown
    assert "I app: ready" in short("log-tail", "100")
    assert "WiFi:" in short("wifi-status")
    assert sim.running()


def test_stopped_firmware_keeps_the_repl(sim):
    # Ctrl-D at the console stops the loop; the REPL functions stay reachable (the
    # board's own REPL), and restart() boots the firmware again.
    port = sim.tty
    fd = os.open(port, os.O_RDWR | os.O_NOCTTY)
    try:
        os.write(fd, b"\x03\x04")
        sim.wait_for(r"loop stopped \(console Ctrl-D\)")
    finally:
        os.close(fd)
    assert "stopped-ok" in mpremote(port, "resume", "exec", "print('stopped-ok')")
    mpremote(port, "resume", "exec", "memory_write('written while stopped')")
    assert "written while stopped" in mpremote(port, "resume", "exec", "memory_read()")
    booted = len(sim.output())  # the next "I app: ready" is the new boot
    mpremote(port, "resume", "exec", "--no-follow", "restart()")
    sim.wait_for(r"I app: ready", start=booted)
    assert "written while stopped" in mpremote(port, "resume", "exec", "memory_read()")
    assert sim.running()


def test_console_line_ends_are_the_boards():
    # print()'s "\n" goes out as the board's "\r\n"; "\r\n" written as bytes (the
    # console's framing) stays, also split between two reads
    sys.path.insert(0, str(ROOT / "tools"))
    from simpty import cook

    assert cook(b"42\n") == b"42\r\n"
    assert cook(b"banner\r\n>") == b"banner\r\n>"
    assert cook(b"\nnext", b"x\r") == b"\nnext"  # the \r\n split between reads
    assert cook(b"\nnext", b"x\n") == b"\r\nnext"
    assert cook(b"\n\n", b"a") == b"\r\n\r\n"
    assert cook(b"", b"\r") == b""
