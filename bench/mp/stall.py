# MicroPython side of bench/stall.py: the asyncio loop's worst stall while the
# firmware does its network chores, seen by a probe task that sleeps 1 ms at a time
# and keeps the longest gap between its wake-ups (minus the 1 ms): bench/mp/loopgap.py.
#   micropython bench/mp/stall.py ARGS.json   (a file: long argv items abort this port)
# One "BENCH {json}" line per case and run: case, worst_ms, logged (the firmware's own
# "W loop: stalled" lines during the case).
import sys
import json

with open(sys.argv[1]) as f:
    A = json.load(f)
sys.path[:] = [A["lib"], ".frozen", A["mp_dir"]]
from mimi import board  # noqa: E402

board.mount_image(A["image"], 256, mkfs=True)
import os  # noqa: E402
import time  # noqa: E402
import socket  # noqa: E402
import asyncio  # noqa: E402
from mimi import log  # noqa: E402
from mimi.net import dns  # noqa: E402
from mimi.config import settings as config  # noqa: E402
from mimi.services import loopwatch  # noqa: E402
import loopgap  # noqa: E402  (bench/mp/)

config.cfg.load()
os.putenv("MIMI_DNS", "127.0.0.1:%d" % A["dns"])  # the board asks its network's DNS server
TG = "http://api.telegram.test:%d" % A["tg_port"]


def out(rec):
    print("BENCH " + json.dumps(rec))


def blocking_lookup(host):
    """What socket.getaddrinfo does on the board: ask the DNS server and wait."""
    ident = 0x4242
    pkt = b"\x42\x42\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00" + dns.question(host)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.settimeout(5)
        s.sendto(pkt, socket.getaddrinfo("127.0.0.1", A["dns"])[0][-1])
        while True:
            got = dns.parse(s.recv(512), ident)
            if got:
                return got[0]
    finally:
        s.close()


async def telegram_connect():
    from mimi.channels.telegram import poller as telegram

    api = telegram.Api(TG, A["tg_token"], 10)
    try:
        await api.call("getMe")
    finally:
        api.close()


async def telegram_connect_blocking():
    ip = blocking_lookup("api.telegram.test")  # as asyncio.open_connection(name) did
    dns._cache["api.telegram.test"] = (ip, time.ticks_add(time.ticks_ms(), 60000))
    await telegram_connect()  # then the same connect, no second lookup


async def ntp_sync():
    from mimi.services import ntp

    if not await ntp.sync_once(["ntp.test"], A["ntp_port"]):
        raise RuntimeError("NTP sync failed: %s" % ntp.last_error)


async def portal_scan():
    from mimi.services import portal

    class Online:
        def online(self):
            return True

    nets = await portal.Portal(Online(), http_port=0, dns_port=0, host="127.0.0.1").scan(fresh=True)
    assert nets and nets[0]["ssid"] == "host-network"


async def portal_scan_on_the_loop():
    board.wlan().scan()  # as the portal did before: wlan.scan() called on the loop


CASES = (
    ("telegram connect", telegram_connect),
    ("telegram connect, lookup blocking the loop (before)", telegram_connect_blocking),
    ("NTP sync", ntp_sync),
    ("portal scan", portal_scan),
    ("portal scan on the loop (before)", portal_scan_on_the_loop),
)


async def measure(name, fn):
    dns._cache.clear()
    p = loopgap.Probe()
    await asyncio.sleep_ms(5)
    log.clear()
    log.mute = True
    t0 = time.ticks_ms()
    await asyncio.create_task(loopwatch.watch(name, fn()))
    took = time.ticks_diff(time.ticks_ms(), t0)
    log.mute = False
    worst = await p.stop()
    logged = len([x for x in log.recent() if "stalled" in x])
    out({"case": name, "worst_ms": worst, "took_ms": took, "logged": logged})


async def main():
    from mimi import bus

    bus.prepare_loop()
    loopwatch.install()
    board.SimWLAN.scan_ms = A["scan_ms"]  # the board's wlan.scan() holds its caller this long
    for _ in range(A["runs"]):
        for name, fn in CASES:
            await measure(name, fn)


asyncio.run(main())
