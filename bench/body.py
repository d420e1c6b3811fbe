"""The body without the LLM (issue 24): what the rules and the history's logging cost the
firmware at rest, and a week's chart sent the way a chat's /chart sends it.

  .venv/bin/python bench/body.py [-n RUNS]

- The asyncio loop's longest gap (bench/mp/body.py): four simulated parts (SHT3x,
  BH1750, relay, NTC) logged and four rules checked every second, the logging sped up
  to every second so that its batches are written during the run; and a probe alone.
- The Telegram channel's chart path (channels/telegram/photo.py): a week (2,016
  readings) drawn into a file and sent with sendPhoto to the fake Bot API over HTTP:
  the live heap at its peak (sampled after gc.collect() at every read and write of the
  flash), the first chart's and a second one's, its time, the loop's gap.
- The heap after boot, settled (tools/sim, 60 s up: 'boot marked healthy (heap in use
  N)'), with the four devices alone and with them logging every minute and the four
  rules checked every second; at 384k also with each device read once before (the
  device state that any use of a device keeps, in both).
"""
import re
import tempfile
from pathlib import Path

from common import Sim, Table, cli, interpreters, make_image, median, mp_args, run_mp, smoke

PARTS = ["sht3x:sda=8,scl=9,addr=0x44,temp=25,hum=50", "bh1750:sda=8,scl=9,addr=0x23,lux=300",
         "relay:pin=21", "ntc:pin=5,temp=21"]
DEVICES = ["device_add('room', 'sht3x'%s)", "device_add('light', 'bh1750'%s)",
           "device_add('fan', 'relay', pin=21%s)", "device_add('pipe', 'ntc', pin=5%s)"]
RULES = ["rule_add('fan', 'room', 'above', 'set', value=28, hysteresis=1, every_s=1, target='fan', to='on', otherwise='off')",
         "rule_add('dark', 'light', 'below', 'notify', value=50, every_s=1, text='dark')",
         "rule_add('pipe', 'pipe', 'changes', 'notify', hysteresis=0.5, every_s=1, text='{value}')",
         "rule_add('damp', 'room.humidity', 'above', 'notify', value=70, every_s=1, text='damp')"]
HEAPS = ("384k", None)  # a heap without PSRAM (at most GC_SMALL_HEAP; at 288k the four simulated parts' host side
# leaves no 1.3 KB block at boot, on main too), and the port's 1 MB
QSTR = re.compile(r"^qstr pool: .*n_total_bytes=(\d+)", re.M)  # micropython.qstr_info()
SETTLED = re.compile(r"boot marked healthy \(heap in use (\d+)\)")


def settled(mp, body, heap=None, used=False):
    """The settled heap of the whole firmware (no Telegram) with the four devices, and
    with body: logging every minute and the four rules; heap: the MicroPython heap's size
    (None: the port's, 1 MB on 32-bit). used: each device read once on the console after
    the boot and the device layer's code dropped, as a short heap drops it after the
    agent's device_read: what stays is devices/state.py (the drivers' state, the last
    readings, the locks), which any use of a device loads and keeps, and the simulated
    parts' host objects (on the board, machine's)."""
    with tempfile.TemporaryDirectory() as tmp:
        sets = ("ws_port=0", "ws_token=bench-token-123", "gpio_allow=4,5,8,9,21")
        with Sim.start(tmp, *sets, console=True, micropython=mp, parts=PARTS, heap=heap) as sim:
            sim.wait_for(r"I app: ready")
            for line in DEVICES:
                sim.send(line % (", log_min=1" if body else "") + "\r")
                sim.wait_for(r"OK: added %s" % line.split("'")[1])
            for line in RULES if body else ():
                sim.send(line + "\r")
                sim.wait_for(r"OK: rule %d" % (RULES.index(line) + 1))
        with Sim.start(tmp, *sets, console=True, micropython=mp, parts=PARTS, heap=heap) as sim:
            sim.wait_for(r"I app: ready")
            # the simulator's own share, loaded both times: what the parts' reads load on the host
            # (board/host_io.py, its ADC/PWM half board/host_signals.py that the NTC's read loads,
            # the parts' CRC; on the board machine's objects, no heap)
            sim.send("import mimi.board.host_io, mimi.board.host_signals, mimi.devices.sim.crc\r")
            for name in ("room", "light", "fan", "pipe") if used else ():
                sim.send("device_read(%r)\r" % name)
                sim.wait_for(r"%s = " % name)
            if used:
                sim.send("import sys; sys.modules['mimi.devices.table'].drop()\r")
            if smoke():
                sim.send("heap_info()\r")
                return int(sim.wait_for(r"heap free\s+\d+ bytes \(in use (\d+)\)").group(1))
            return int(sim.wait_for(SETTLED, timeout=240).group(1))


def tables(n=None):
    n = n or 3
    seconds = 2 if smoke() else 40  # (smoke: the rules checked, a reading logged, twice)
    stall = Table("The asyncio loop's longest gap, rules and logging at work (%d s each, %d runs)" % (seconds, n),
                  ["interpreter", "probe alone, worst ms (median)", "4 devices logged + 4 rules every second, "
                   "worst ms (median)", "max ms", "readings kept (median)"])
    chart = Table("A week's chart sent on Telegram (channels/telegram/photo.py to the fake Bot API, %d runs)" % n,
                  ["interpreter", "live peak above the firmware before it", "of it, the names' pool grown",
                   "the same, a second chart", "heap kept after it",
                   "took ms (median)", "loop's longest gap ms (median)"])
    heap = Table("Heap after boot, settled, with four devices (SHT3x, BH1750, relay, NTC)",
                 ["interpreter", "heap", "devices", "the devices alone", "logging every minute + 4 rules every second",
                  "difference"])
    from fakes import telegram as fake

    with tempfile.TemporaryDirectory() as tmp:
        img = make_image(Path(tmp) / "fs.img")
        tg = fake.start()
        tg.update(chat_id=42, text="hello")  # (the chat exists for the fake)
        try:
            for label, mp in interpreters():
                res = {}
                for case in ("idle", "rules"):
                    for _ in range(n):
                        rc, recs, out = run_mp("body.py", mp_args(img, mode="stall", case=case, seconds=seconds),
                                               heap="2m", mp=mp, timeout=seconds + 120)
                        if rc or not recs:
                            raise RuntimeError(out[-3000:])
                        res.setdefault(case, []).append(recs[0])
                stall.add(label, median([r["worst_ms"] for r in res["idle"]]),
                          median([r["worst_ms"] for r in res["rules"]]), max(r["worst_ms"] for r in res["rules"]),
                          median([r["kept"] for r in res["rules"]]))
                runs = []
                for sample in [True] + [False] * n:
                    rc, recs, out = run_mp("body.py", mp_args(img, mode="chart", sample=sample, tg_base=tg["base_url"],
                                                              tg_token=tg["token"]), heap="2m", mp=mp, timeout=300)
                    if rc or not recs:
                        raise RuntimeError(out[-3000:])
                    qs = [int(x) for x in QSTR.findall(out)]
                    recs[0]["qstr"] = qs[1] - qs[0] if len(qs) == 2 else 0
                    runs.append(recs[0])
                kb = lambda b: "%.1f KB" % (b / 1024)  # noqa: E731
                chart.add(label, kb(runs[0]["peak"]), kb(runs[0]["qstr"]), kb(runs[0]["peak2"]), kb(median([r["after"] for r in runs[1:]])),
                          median([r["took_ms"] for r in runs[1:]]), median([r["worst_ms"] for r in runs[1:]]))
        finally:
            tg.close()
    for label, mp in interpreters():
        if "32-bit" not in label:
            continue
        for size, used in [(h, False) for h in HEAPS] + [(HEAPS[0], True)]:
            a = [settled(mp, False, size, used) for _ in range(1 if smoke() else n)]
            b = [settled(mp, True, size, used) for _ in range(1 if smoke() else n)]
            heap.add(label, size or "the port's (1 MB)", "each read once" if used else "never read",
                     "%d B" % median(a), "%d B" % median(b), "%+.1f KB" % ((median(b) - median(a)) / 1024))
    stall.notes = ("bench/mp/body.py: the rules' loop (devices.body()) reads the four parts "
                   "(conversions awaited) and judges the rules; readings go to the store in batches of "
                   "HISTORY_BATCH (the store loaded for each and dropped). The probe sleeps 1 ms at a time.")
    chart.notes = ("Sampled (after gc.collect()) at every read and write of the flash: the store's "
                   "reads while the chart is made, the PNG written to its temporary file, the file read "
                   "as it is sent (channels/charts.py); above the firmware with the Telegram channel "
                   "before the command; the store is not resident (loaded for it). The first chart also "
                   "interns its code's names (and opens the send connection). Over plain HTTP: on the "
                   "board the TLS buffers are mbedTLS's, outside the MicroPython heap.")
    heap.notes = ("The devices added on the REPL (with log_min=1 and the rules of bench/body.py RULES the "
                  "second time), then the firmware booted again and left 60 s; no Telegram. 'each read once': "
                  "after the boot each device read on the console and the device layer's code dropped (as a "
                  "short heap does after the agent's device_read), so that devices/state.py, which any use of "
                  "a device keeps, and the simulated parts' host objects are in both. Runs of the "
                  "same build differ by 1-3 KB (docs/benchmarks.md §1): the medians of %d." % n)
    return [stall, chart, heap]


if __name__ == "__main__":
    cli(tables)
