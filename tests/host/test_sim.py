"""tools/sim: boots, prints the banner, stops on Ctrl-C and on SIGTERM."""
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT


def start_sim(tmp_path, *args):
    return subprocess.Popen(
        [sys.executable, str(ROOT / "tools" / "sim"), "--fs", str(tmp_path / "fs.img"), *args],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def read_until(p, marker, timeout=60):
    lines = []
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        lines.append(line)
        if marker in line:
            return "".join(lines)
    raise AssertionError("no %r in output:\n%s" % (marker, "".join(lines)))


def stop_sim(p):
    """SIGTERM (a clean stop), SIGKILL to the group if it hangs."""
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_sim_boots_and_stops(tmp_path, sig):
    p = start_sim(tmp_path, "--set", "ws_port=0", "--set", "model=test-model")
    try:
        out = read_until(p, "I app: ready")
        assert "model test-model" in out
        if sig == signal.SIGINT:
            os.killpg(p.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground group
        else:
            p.send_signal(signal.SIGTERM)
        rest, _ = p.communicate(timeout=20)
        assert p.returncode == 0, rest
        assert "loop stopped" in rest
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)


def test_sim_keeps_filesystem_between_runs(tmp_path):
    p = start_sim(tmp_path, "--set", "ws_port=0")
    first = read_until(p, "I app: ready")
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=20)
    assert "ws_token =" in first
    # the banner: the provider's real default model; ws_port 0 is no port to connect to
    assert "model claude-" in first and "(default)" in first, first
    assert "127.0.0.1:0/" not in first and "chosen at start" in first, first
    p = start_sim(tmp_path)
    second = read_until(p, "I app: ready")
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=20)
    assert "ws_token =" not in second  # made once, kept on the image
    assert "installed" not in second


def test_sim_refuses_bad_setting(tmp_path):
    p = start_sim(tmp_path, "--set", "provider=gemini")
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 2
    assert "refused --set provider=gemini" in out and "anthropic, openai" in out
