"""The asyncio loop's worst stall while the firmware connects to Telegram, syncs the
clock over NTP and scans WiFi for the onboarding portal, each next to the way it
was done before (the lookup, the scan held the loop).

  .venv/bin/python bench/stall.py [-n RUNS]

The firmware code runs under MicroPython (bench/mp/stall.py) against fakes on
127.0.0.1: a DNS server that answers after DNS_DELAY_S (a slow network), the
Telegram Bot API, an SNTP server; the host's simulated WLAN.scan() takes SCAN_MS,
as the board's does. A probe task sleeping 1 ms at a time records the longest gap.
"""
import json
import subprocess
import tempfile
from pathlib import Path

from common import BENCH, BUILD, Table, cli, median
from fakes import dns, ntp, telegram
import interpreters  # (tools/, on the path once common is imported)

DNS_DELAY_S = 0.3
SCAN_MS = 2500


def run(mp, args, tmp):
    path = Path(tmp) / "args.json"
    path.write_text(json.dumps(args))
    r = subprocess.run([mp, str(BENCH / "mp" / "stall.py"), str(path)], capture_output=True,
                       text=True, timeout=600)
    recs = [json.loads(line[6:]) for line in r.stdout.splitlines() if line.startswith("BENCH ")]
    if r.returncode or not recs:
        raise RuntimeError("bench/mp/stall.py failed:\n%s%s" % (r.stdout[-3000:], r.stderr[-3000:]))
    return recs


def tables(n=None):
    n = n or 3
    import mkimage

    mkimage.compile_tree(BUILD)
    resolver = dns.Server({"api.telegram.test": "127.0.0.1", "ntp.test": "127.0.0.1"})
    resolver.delay_s = DNS_DELAY_S
    tg = telegram.start()
    clock = ntp.Server()
    t = Table("Worst asyncio loop stall (%d runs each)" % n,
              ["interpreter", "while", "worst stall median ms", "worst stall max ms",
               "the chore took, median ms", "logged by the firmware"])
    try:
        with tempfile.TemporaryDirectory() as tmp:
            args = {"lib": str(BUILD / "lib"), "image": str(Path(tmp) / "flash.img"), "runs": n,
                    "mp_dir": str(BENCH / "mp"),
                    "dns": resolver.port, "tg_port": int(tg["base_url"].rsplit(":", 1)[1]),
                    "tg_token": tg["token"], "ntp_port": clock.info()["good"], "scan_ms": SCAN_MS}
            for label, mp in interpreters.all_present():
                recs = run(mp, args, tmp)
                for case in dict.fromkeys(r["case"] for r in recs):
                    rs = [r for r in recs if r["case"] == case]
                    worst = [r["worst_ms"] for r in rs]
                    t.add(label, case, median(worst), max(worst), median([r["took_ms"] for r in rs]),
                          "%d of %d" % (sum(1 for r in rs if r["logged"]), len(rs)))
    finally:
        resolver.close()
        tg.close()
        clock.close()
    t.notes = ("The DNS server answers after %d ms, a WiFi scan takes %d ms (the board's 2-3 s); "
               "\"before\" rows do what the firmware did until now (a blocking lookup, as "
               "getaddrinfo and asyncio.open_connection(name) do; wlan.scan() on the loop). "
               "Logged = runs where the firmware's stall detector wrote `W loop: stalled N ms in "
               "...` (threshold %d ms)." % (DNS_DELAY_S * 1000, SCAN_MS, _stall_ms()))
    return [t]


def _stall_ms():
    from mimi import limits

    return limits.LOOP_STALL_MS


if __name__ == "__main__":
    cli(tables)
