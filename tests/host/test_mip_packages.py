"""The firmware with micropython-lib's optional packages installed, as `make deploy MIP=1`
puts them on a board: /lib/logging.mpy and /lib/aiorepl.mpy, compiled from the
micropython-lib inside MicroPython's source (tools/mpbuild.py mip_packages(): the same
tarball `make test` builds the frozen interpreter from; skipped without it). Every
other host test runs without them. With them the log goes out through `logging`, the
serial console is aiorepl's (prompt `--> `), and mpremote talks to aiorepl's raw REPL,
which holds the asyncio loop while it runs."""
import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, mp32_bin
from simproc import Sim, llm_settings
from test_pty import http_get_root

sys.path.insert(0, str(ROOT / "tools"))
import mkimage  # noqa: E402
import mpbuild  # noqa: E402

MPREMOTE = str(Path(sys.executable).parent / "mpremote")
TOKEN = "mip-e2e-token"


@pytest.fixture(scope="module")
def mip():
    files, why = mpbuild.mip_packages()
    if why:
        pytest.skip("micropython-lib's logging and aiorepl: %s" % why)
    return {dev: Path(local).read_bytes() for dev, local in files.items()}


def image_with(tmp_path, extra):
    """tmp_path/fs.img, as tools/sim makes a new one, with `extra` {path: bytes} in it."""
    files = mkimage.image_files(ROOT / "build", sim=True)
    files.update(extra)
    mkimage.build_image(tmp_path / "fs.img", "8M", files)


def mpremote(port, *args, timeout=60):
    r = subprocess.run([MPREMOTE, "connect", port, *args], capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


async def ws_ask(url, text, chat_id):
    from websockets.asyncio.client import connect

    async with connect(url, open_timeout=30) as ws:
        await ws.send(json.dumps({"type": "message", "content": text, "chat_id": chat_id}))
        while True:
            f = json.loads(await asyncio.wait_for(ws.recv(), 60))
            if f["type"] in ("response", "error"):
                return f


@pytest.mark.parametrize("bits", ["64-bit", "32-bit"])
def test_log_console_and_a_turn_with_logging_and_aiorepl(tmp_path, mip, fake_anthropic, bits):
    mp = None
    if bits == "32-bit":
        mp, why = mp32_bin()
        if not mp:
            pytest.skip("needs the 32-bit MicroPython: %s" % why)
    image_with(tmp_path, mip)
    with Sim.start(tmp_path, "ws_port=0", "ws_token=" + TOKEN, *llm_settings(fake_anthropic),
                   console=True, micropython=mp) as sim:
        sim.wait_for(r"I app: ready")
        sim.wait_for(r"Starting asyncio REPL\.\.\.\s*--> ")  # aiorepl's console, not ours
        n = len(sim.output())
        sim.send("print('MODS', [m for m in ('logging', 'aiorepl') if m in __import__('sys').modules])\n")
        assert sim.wait_for(r"MODS (\[.*\])", start=n).group(1) == "['logging', 'aiorepl']"
        # The firmware's log goes through logging's "mimi" logger, lines as before.
        n = len(sim.output())
        sim.send("print('LOGGER', type(__import__('mimi.log').log._logger).__name__)\n")
        assert sim.wait_for(r"LOGGER (\w+)", start=n).group(1) == "Logger"
        # The REPL commands are there at aiorepl's prompt.
        n = len(sim.output())
        sim.send("memory_write('The user likes green tea.')\n")
        sim.send("memory_read()\n")
        sim.wait_for(r"memory_read\(\)\s*\n[\s\S]*likes green tea", start=n)  # past the echo
        answer = asyncio.run(ws_ask("%s?token=%s" % (sim.url, TOKEN), "hello there", "mip1"))
        assert answer["type"] == "response" and "hello there" in answer["content"], answer
        out = sim.output()
        assert re.search(r"\] I agent: ", out), out[-3000:]  # a turn's lines, through logging
    assert "Traceback" not in out and "Error" not in out, out[-4000:]


def test_mpremote_installs_them_and_talks_to_aiorepl(tmp_path, mip):
    """What `make deploy MIP=1` does (mip writes /lib/logging.mpy and /lib/aiorepl.mpy
    over mpremote; here the files come from the source, not the internet), then
    mpremote over the console while aiorepl runs, the firmware serving meanwhile."""
    local = {}
    for dev, data in mip.items():
        local[dev] = tmp_path / Path(dev).name
        local[dev].write_bytes(data)
    with Sim.start(tmp_path, "ws_port=0", "ws_token=" + TOKEN, pty=True) as sim:
        sim.wait_for(r"I app: ready")
        port = sim.tty
        args = ["resume"]
        for dev, path in local.items():
            args += ["fs", "cp", str(path), ":" + dev, "+"]
        mpremote(port, *args[:-1])
        booted = len(sim.output())
        mpremote(port, "resume", "exec", "--no-follow", "restart()")
        sim.wait_for(r"I app: ready[\s\S]*Starting asyncio REPL", start=booted)
        # aiorepl answers mpremote's raw REPL: commands, the REPL functions, files
        assert "hello 2" in mpremote(port, "resume", "exec", "print('hello', 1 + 1)")
        assert mpremote(port, "resume", "eval", "6 * 7").strip() == "42"
        mods = mpremote(port, "resume", "exec",
                        "import sys; print(sorted(m for m in ('logging', 'aiorepl') if m in sys.modules))")
        assert "['aiorepl', 'logging']" in mods
        mpremote(port, "resume", "exec", "memory_write('remember the milk')")
        assert "remember the milk" in mpremote(port, "resume", "exec", "memory_read()")
        r = subprocess.run([MPREMOTE, "connect", port, "resume", "exec", "1/0"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode != 0 and "ZeroDivisionError" in r.stdout + r.stderr
        note = tmp_path / "note.txt"
        note.write_text("hello from the host\n" * 200)
        mpremote(port, "resume", "fs", "cp", str(note), ":/spiffs/note.txt")
        assert mpremote(port, "resume", "fs", "cat", ":/spiffs/note.txt") == note.read_text()
        listing = mpremote(port, "resume", "fs", "ls", ":/lib", "+", "exec", "wifi_status()")
        assert "aiorepl.mpy" in listing and "logging.mpy" in listing and "WiFi: online" in listing
        # A person at aiorepl's prompt: a terminal's Enter is "\r", which the board's
        # stdin reads as the "\n" aiorepl ends a line with.
        n = len(sim.output())
        fd = os.open(port, os.O_RDWR | os.O_NOCTTY)
        try:
            os.write(fd, b"print('typed', 6 * 7)\r")
            sim.wait_for(r"typed 42", start=n, timeout=30)
        finally:
            os.close(fd)
        # The loop runs between mpremote's commands: the gateway answers.
        assert sim.running()
        gw = int(re.search(r"listening on 127\.0\.0\.1:(\d+)", sim.output()[booted:]).group(1))
        assert http_get_root(gw).startswith(b"HTTP/1.1 ")
        out = sim.output()
    assert "Traceback" not in out[booted:], out[-4000:]
    # A new start of the simulator keeps them (as a deploy or an OTA update on a board).
    with Sim.start(tmp_path, "ws_port=0", "ws_token=" + TOKEN, console=True) as sim:
        sim.wait_for(r"I app: ready[\s\S]*Starting asyncio REPL")


def test_log_lines_stay_out_of_mpremote_while_aiorepl_holds_the_console(tmp_path, mip,
                                                                        fake_anthropic):
    """aiorepl's raw REPL blocks the loop, not the agent thread: a turn that ends while
    mpremote runs a command logs from that thread, and its line must not land inside
    mpremote's framing (the firmware's own console mutes the log meanwhile)."""
    import threading
    import time

    image_with(tmp_path, mip)
    fake_anthropic.script({"echo": True, "delay_s": 2})
    with Sim.start(tmp_path, "ws_port=0", "ws_token=" + TOKEN, *llm_settings(fake_anthropic),
                   pty=True) as sim:
        sim.wait_for(r"I app: ready[\s\S]*Starting asyncio REPL")
        url = "%s?token=%s" % (sim.url, TOKEN)
        answers = []
        asker = threading.Thread(target=lambda: answers.append(asyncio.run(ws_ask(url, "hi", "mute"))))
        asker.start()
        deadline = time.monotonic() + 30
        while not fake_anthropic.requests and time.monotonic() < deadline:
            time.sleep(0.05)  # the LLM call is under way; it answers 2 s after it came
        assert fake_anthropic.requests
        out = mpremote(sim.tty, "resume", "exec", "import time; time.sleep(4); print('done')")
        asker.join(60)
        ring = mpremote(sim.tty, "resume", "exec", "import mimi.log; print(mimi.log.recent(20))")
    assert out == "done\n", out
    assert answers and answers[0]["type"] == "response", answers
    assert "I agent: turn: 1 LLM calls" in ring, ring  # logged, in the ring
