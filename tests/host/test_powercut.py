"""Power cuts (issue 16 item 2): tests/mp/powercut.py drives the firmware's memory,
notes, sessions, file tools, settings, cron, Telegram offset, sensor history, OTA code and
the device file on a flash in RAM under MicroPython's own VfsLfs2, cuts power at a seeded
random program or erase (half of them torn), boots each cut image and checks every file is
its old or new content. Here some of those cut images also boot the real firmware, which must
answer a WebSocket message.

`make test`: 60 cuts. `make powercut`: MIMI_POWERCUT_CUTS (1,200) cuts, every 50th
image booted. MIMI_POWERCUT_SEED=N repeats a run (the seed is printed on failure)."""
import json
import os
import random
import re
import subprocess
import sys

from conftest import ROOT, compiled_lib, micropython_bin
from simproc import Sim, llm_settings

sys.path.insert(0, str(ROOT / "tools"))
import mkimage  # noqa: E402
from mimi import limits  # noqa: E402

CUTS = int(os.getenv("MIMI_POWERCUT_CUTS") or 60)
BOOTS = max(2, CUTS // 50)  # cut images the real firmware boots
FLASH_DATA = 4 * 1024 * 1024  # the code three times over (live, staged, previous) and the data
TOKEN = "powercut-token"


def run_cuts(tmp_path, seed, cuts, save_every):
    image = tmp_path / "base.img"
    mkimage.build_image(image, limits.FS_OFFSET + FLASH_DATA, mkimage.image_files(ROOT / "build", sim=True))
    save = tmp_path / "cuts"
    save.mkdir()
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"lib": compiled_lib(), "image": str(image), "seed": seed,
                                "cuts": cuts, "save": str(save), "save_every": save_every}))
    r = subprocess.run([micropython_bin(), "-X", "heapsize=128m", str(ROOT / "tests" / "mp" / "powercut.py"),
                        str(args)], capture_output=True, text=True, errors="replace",
                       timeout=120 + cuts, cwd=str(tmp_path))
    out = r.stdout + r.stderr
    fails = [x for x in out.splitlines() if x.startswith("POWERCUT FAIL")]
    assert r.returncode == 0 and not fails, "seed %d (MIMI_POWERCUT_SEED=%d repeats it):\n%s\n%s" % (
        seed, seed, "\n".join(fails), out[-4000:])
    done = re.search(r"POWERCUT done seed=\d+ cuts=(\d+) torn=(\d+) failures=0", out)
    assert done and int(done.group(1)) == cuts, out[-4000:]
    print(out[done.start():].splitlines()[0])  # the figures for docs/reliability.md (pytest -s)
    return sorted(save.glob("cut*.img"), key=lambda p: int(re.match(r"cut(\d+)", p.name).group(1)))


def boot(image, fake):
    """The real firmware from a cut image, booted again after a reset (an OTA swap the
    cut interrupted is finished, then the board resets) as tools/sim would; -> Sim."""
    for _ in range(3):
        sim = Sim.boot(image, "ws_port=0", "ws_token=" + TOKEN, *llm_settings(fake),
                       "max_calls_hour=0", "max_calls_day=0")  # the ledger steps counted many calls
        try:
            sim.wait_for("gateway listening")
            return sim
        except AssertionError:
            if sim.wait() != limits.SIM_RESET_EXIT:
                raise
    raise AssertionError("%s: still resetting after 3 boots" % image.name)


def test_power_cuts_lose_nothing_committed_and_the_firmware_boots(tmp_path, fake_anthropic):
    seed = int(os.getenv("MIMI_POWERCUT_SEED") or random.randrange(1 << 30))
    images = run_cuts(tmp_path, seed, CUTS, max(1, CUTS // BOOTS))
    # a cut inside an OTA update first (its boot finishes or forgets the swap), then
    # evenly spaced ones
    chosen = [p for p in images if p.name.endswith("-ota.img")][:1]
    chosen += [p for p in images if p not in chosen][-BOOTS:]
    for n, image in enumerate(chosen):
        with boot(image, fake_anthropic) as sim:
            r = subprocess.run([sys.executable, str(ROOT / "tools" / "chat"), "--url", sim.url,
                                "--token", TOKEN, "--message", "after cut %d" % n],
                               capture_output=True, text=True, timeout=120)
            out = sim.output()
        assert r.returncode == 0 and r.stdout.strip() == "Echo: after cut %d" % n, (
            "seed %d, %s:\n%s%s\n%s" % (seed, image.name, r.stdout, r.stderr, out[-3000:]))
        assert "Traceback" not in out, "seed %d, %s:\n%s" % (seed, image.name, out[-3000:])
    print("POWERCUT real boots answered: %d" % len(chosen))

