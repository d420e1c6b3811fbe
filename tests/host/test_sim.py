"""tools/sim: boots, prints the banner, stops on Ctrl-C and on SIGTERM."""
import signal

import pytest

from conftest import interpreters, mp32_bin
from simproc import Sim


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_sim_boots_and_stops(tmp_path, sig):
    with Sim.start(tmp_path, "ws_port=0", "model=test-model") as sim:
        out = sim.read_until("I app: ready")
        assert "model test-model" in out
        rc = sim.stop(sig)  # SIGINT goes to the whole group, as Ctrl-C does
        rest = sim.output()[len(out):]
        assert rc == 0, rest
        assert "loop stopped" in rest


def test_sim_keeps_filesystem_between_runs(tmp_path):
    with Sim.start(tmp_path, "ws_port=0") as sim:
        first = sim.read_until("I app: ready")
        sim.stop()
    assert "ws_token =" in first
    # the banner: the provider's real default model; ws_port 0 is no port to connect to
    assert "model claude-" in first and "(default)" in first, first
    assert "127.0.0.1:0/" not in first and "chosen at start" in first, first
    with Sim.start(tmp_path) as sim:
        second = sim.read_until("I app: ready")
        sim.stop()
    assert "ws_token =" not in second  # made once, kept on the image
    assert "installed" not in second


def test_sim_refuses_bad_setting(tmp_path):
    with Sim.start(tmp_path, "provider=gemini") as sim:
        rc = sim.wait(60)
    out = sim.output()
    assert rc == 2
    assert "refused --set provider=gemini" in out and "anthropic, openai" in out


def test_two_simulators_side_by_side(tmp_path):
    import urllib.request

    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    a_dir.mkdir()
    b_dir.mkdir()
    with Sim.start(a_dir, "ws_port=0", "model=model-a") as a, \
            Sim.start(b_dir, "ws_port=0", "model=model-b") as b:
        a.wait_for("gateway listening")
        b.wait_for("gateway listening")
        assert a.port != b.port
        for sim in (a, b):  # each serves its own chat page on its own port
            page = urllib.request.urlopen("http://127.0.0.1:%d/" % sim.port, timeout=10).read()
            assert b"<html" in page.lower()
        assert a.stop() == 0 and b.stop() == 0
    assert "model model-a" in a.output() and "model model-b" in b.output()
    assert (a_dir / "fs.img").exists() and (b_dir / "fs.img").exists()


def test_sim_on_the_32bit_interpreter(tmp_path):
    # --micropython: the board's word size; --heap as on the 64-bit port.
    mp32, why = mp32_bin()
    if not mp32:
        pytest.skip(why)
    with Sim.start(tmp_path, "ws_port=0", heap="400k", micropython=mp32, console=True) as sim:
        sim.read_until("I app: ready")
        sim.send("import sys, gc; print('word', sys.maxsize, 'heap', gc.mem_free() + gc.mem_alloc())\r")
        m = sim.wait_for(r"word (\d+) heap (\d+)")
        assert int(m.group(1)) == 2 ** 31 - 1
        assert int(m.group(2)) <= 400 * 1024
        assert sim.stop() == 0, sim.output()[-3000:]


# One console line that collects garbage for 2 s, on the loop, then says so (the
# words it prints are not in the line the console echoes).
COLLECT = ("import gc, time; t = time.ticks_ms(); print('COLLECT' + 'ING'); "
           "exec('while time.ticks_diff(time.ticks_ms(), t) < 2000: gc.collect()'); print('COLLECT' + 'ED')\r")


@pytest.mark.parametrize("tag,mp", interpreters(), ids=[t or "64bit" for t, _ in interpreters()])
def test_sim_stops_cleanly_on_ctrl_c_during_a_collection(tmp_path, tag, mp):
    # The unix port raises Ctrl-C from its SIGINT handler wherever the firmware is; one
    # that landed inside a garbage collection left the heap locked for good, and the
    # firmware's clean-up failed ("MemoryError: ... heap is locked", exit code 1). The
    # simulator's Ctrl-C is raised on the loop now (board/host.py): the command ends,
    # then the firmware stops as after any Ctrl-C.
    with Sim.start(tmp_path, "ws_port=0", heap="400k", micropython=mp, console=True) as sim:
        sim.read_until("I app: ready")
        sim.send(COLLECT)
        start = sim.wait_for("COLLECTING").end()
        rc = sim.stop(signal.SIGINT)  # to the whole group, as Ctrl-C in a terminal
        rest = sim.output()[start:]
    assert rc == 0, rest
    assert "heap is locked" not in rest and "Traceback" not in rest, rest
    assert rest.index("COLLECTED") < rest.index("loop stopped (Ctrl-C)"), rest


def test_sim_refuses_a_missing_interpreter(tmp_path):
    with Sim.start(tmp_path, micropython=str(tmp_path / "nope")) as sim:
        assert sim.wait(60) != 0
    assert "--micropython %s is not an executable" % (tmp_path / "nope") in sim.output()


FILL = """
import sys, json
sys.path[:] = [sys.argv[2]]
from mimi import board
board.mount_image(sys.argv[1])
with open("/config.json", "w") as f:  # too big to be inline (> 512 B): a save needs a free block
    json.dump({"ws_token": "full-flash-token", "model": "m" * 90, "tavily_key": "t" * 120,
               "search_key": "s" * 120, "proxy_user": "u" * 90, "api_base": "https://" + "a" * 60 + ".example.com"}, f)
import os
os.mkdir("/junk")
n = 0
try:
    while True:
        with open("/junk/%d" % n, "wb") as f:
            f.write(b"j" * 4000)
        n += 1
except OSError as e:
    print("FULL", e.args[0])
"""


def test_sim_boots_a_full_flash_and_says_what_it_could_not_save(tmp_path):
    # issue 16 item 6: --set met OSError 28 and the simulator could not boot the image
    import subprocess
    import sys

    from conftest import ROOT, micropython_bin

    sys.path.insert(0, str(ROOT / "tools"))
    import mkimage

    img = tmp_path / "fs.img"
    mkimage.build_image(img, "8M", mkimage.image_files(ROOT / "build", sim=True))  # as tools/sim makes it
    (tmp_path / "fill.py").write_text(FILL)
    r = subprocess.run([micropython_bin(), str(tmp_path / "fill.py"), str(img), str(ROOT / "build" / "lib")],
                       capture_output=True, text=True, timeout=120)
    assert "FULL 28" in r.stdout, r.stdout + r.stderr
    with Sim.start(tmp_path, "ws_port=0", "model=sim-model") as sim:
        out = sim.read_until("I ws: gateway listening")
        sim.stop()
    assert "--set ws_port=0 applies to this run only: not saved (the flash is full)" in out, out
    assert "model sim-model" in out and "flash free 0 of" in out, out
    assert "Traceback" not in out


PARTS = ["sht3x:sda=8,scl=9,addr=0x44,temp=21.5,hum=40", "rgb_led:pin=48,n=1", "button:pin=4"]
READ_SHT = ("from mimi import board; import time; i2c = board.I2C(0, scl=9, sda=8); "
            "i2c.writeto(0x44, b'\\x2c\\x06'); d = i2c.readfrom(0x44, 6); "
            "print('SHT', round(-45 + 175 * (d[0] << 8 | d[1]) / 65535, 2))\r")


def test_sim_parts_and_the_console(tmp_path):
    # SPEC §13: --part wires simulated parts before boot; sim_set/sim_get on the console
    with Sim.start(tmp_path, "ws_port=0", console=True, parts=PARTS) as sim:
        out = sim.read_until("I app: ready")
        for name in ("sht3x@0x44", "rgb_led@48", "button@4"):
            assert "sim: %s wired to the board" % name in out, out
        sim.send(READ_SHT)
        assert sim.wait_for(r"SHT (\S+)").group(1) == "21.5"
        sim.send("sim_set('sht3x@0x44', temp=30.5)\r")
        sim.send(READ_SHT)
        assert sim.wait_for(r"SHT 30\.5\b")
        sim.send("np = board.neopixel(48, 1); np[0] = (255, 128, 0); np.write(); print('LED', sim_get('rgb_led@48'))\r")
        assert sim.wait_for(r"LED (.*)").group(1).strip() == "[(255, 128, 0)]"
        sim.send("print('PIN', sorted(sim_get('pin4').items()))\r")
        assert "('level', 1)" in sim.wait_for(r"PIN (.*)").group(1)
        sim.send("sim_set('button@4', pressed=1); print('PRESSED', sim_get('pin4')['level'])\r")
        assert sim.wait_for(r"PRESSED (\d)").group(1) == "0"
        sim.send("sim_set('pin5', 1); print('PIN5', sim_get('pin5'))\r")
        assert "'level': 1" in sim.wait_for(r"PIN5 (.*)").group(1)
        assert sim.stop() == 0, sim.output()[-3000:]


@pytest.mark.parametrize("spec, why", [
    ("lamp:pin=4", "unknown part type 'lamp' (types: aht20, analog_in, bh1750, "),
    ("button", "button needs pin= (the GPIO it is wired to)"),
    ("sht3x:sda=8,scl=9,temp=hot", "sht3x: temp must be a number, not 'hot'"),
    ("rgb_led:pin=48,n=1,colour=red", "rgb_led has no key 'colour'"),
    ("button:pin=4,wiring", "'wiring' is not key=value"),
])
def test_sim_refuses_a_bad_part(tmp_path, spec, why):
    with Sim.start(tmp_path, "ws_port=0", parts=["button:pin=5", spec]) as sim:
        rc = sim.wait(60)
    out = sim.output()
    assert rc == 2, out
    line = [x for x in out.splitlines() if x.startswith("sim: refused --part")]
    assert len(line) == 1 and line[0].startswith("sim: refused --part %s: %s" % (spec, why)), out
    assert "Traceback" not in out and "I app: ready" not in out
