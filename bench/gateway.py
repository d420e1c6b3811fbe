"""WebSocket gateway round trip with an instant fake LLM: the simulator (tools/sim)
runs the whole firmware, the fake Anthropic API answers "Echo: ..." over plain HTTP
at once, the `websockets` library is the client. Then the channels' heap: what each
part costs when loaded, and the whole firmware's heap in use with Telegram polling
the fake Bot API, on each interpreter (64-bit .venv, and the 32-bit board-sized one).

  .venv/bin/python bench/gateway.py [-n MESSAGES]

Round trip = send {"type":"message"} -> receive {"type":"response"} (the "working"
status frame and the streamed answer's "partial" frames in between are skipped). Each
message is a full turn: prompt build, session load, one LLM call, session save.
"""
import asyncio
import json
import tempfile
import time
from pathlib import Path

from common import BUILD, Sim, Table, cli, interpreters, make_image, median, pct, run_mp, smoke
from fakes import llm, telegram

TOKEN = "bench-gateway-token"
CLIENTS = 4
# What every boot has loaded before a channel starts (the channels' parts are measured on top).
BASE = ["asyncio", "mimi.limits", "mimi.log", "mimi.config.settings", "mimi.bus", "mimi.fs", "mimi.jsonutil",
        "mimi.utf8", "mimi.net", "mimi.board", "mimi.services.wifi", "mimi.services.ntp", "mimi.channels"]
PARTS = [
    ("gateway at boot: listener, sender (websocket/gateway, dispatch)", ["mimi.channels.dispatch", "mimi.channels.websocket.gateway"]),
    ("a gateway connection (websocket/connection, wsproto, httpserver)", ["mimi.channels.websocket.connection"]),
    ("the chat page, while it is sent (websocket/chatpage)", ["mimi.channels.websocket.chatpage"]),
    ("Telegram at boot: the poller (telegram/poller, net.http, net.dns)", ["mimi.channels.telegram.poller"]),
    ("Telegram sending, during a reply (telegram/send, sending)", ["mimi.channels.telegram.send", "mimi.channels.sending"]),
    ("Telegram formatter, while a reply is split (telegram/format)", ["mimi.channels.telegram.format"]),
]


async def ask(ws, text, chat_id):
    t0 = time.perf_counter()
    await ws.send(json.dumps({"type": "message", "content": text, "chat_id": chat_id}))
    while True:
        f = json.loads(await asyncio.wait_for(ws.recv(), 60))
        if f["type"] == "response":
            return (time.perf_counter() - t0) * 1000
        if f["type"] not in ("status", "partial"):  # an error frame, or something new
            raise RuntimeError("unexpected frame %r" % f)


async def client(url, chat_id, n):
    from websockets.asyncio.client import connect

    async with connect(url) as ws:
        await ask(ws, "warm up", chat_id)
        return [await ask(ws, "hello %d" % k, chat_id) for k in range(n)]


async def concurrent(url, n):
    t0 = time.perf_counter()
    res = await asyncio.gather(*[client(url, "c%d" % k, n) for k in range(CLIENTS)])
    return res, time.perf_counter() - t0


def tables(n=None):
    n = n or 50
    svc = llm.start("anthropic")  # plain http:// only
    with tempfile.TemporaryDirectory() as tmp:
        sim = Sim.start(tmp, "ws_port=0", "ws_token=" + TOKEN, "provider=anthropic",
                        "api_key=" + svc["api_key"], "api_base=" + svc["http_base_url"],
                        "model=bench-model")
        try:
            url = "%s?token=%s" % (sim.url, TOKEN)
            one = asyncio.run(client(url, "solo", n))
            per = 1 if smoke() else max(5, n // CLIENTS)
            many, wall = asyncio.run(concurrent(url, per))
            # the warm-up messages are not in `many` but did take time: count them
            total = CLIENTS * (per + 1)
        finally:
            sim.stop()
            svc.close()
    allm = [x for r in many for x in r]
    t = Table("WebSocket message -> response, instant fake LLM (plain HTTP)",
              ["clients", "messages", "median ms", "p90 ms", "max ms", "messages/s"])
    t.add(1, len(one), median(one), pct(one, 90), max(one), 1000 / median(one))
    t.add(CLIENTS, len(allm), median(allm), pct(allm, 90), max(allm), total / wall)
    t.notes = ("%d clients: each sends its next message when the previous answer arrives; "
               "messages/s = all messages (warm-ups included) / wall time. One agent thread "
               "serves the turns one at a time." % CLIENTS)
    return [t] + heap_tables()


def heap_tables():
    mps = interpreters()
    parts = {}
    with tempfile.TemporaryDirectory() as tmp:
        image = make_image(Path(tmp) / "fs.img")
        for label, mp in mps:
            rc, recs, out = run_mp("channels.py", {"image": image, "lib": str(BUILD / "lib"),
                                                   "base": BASE, "parts": PARTS}, mp=mp)
            if rc != 0:
                raise RuntimeError("bench/mp/channels.py failed on %s:\n%s" % (label, out[-2000:]))
            parts[label] = {r["name"]: r["bytes"] for r in recs}
    t1 = Table("The channels' code on the heap (KB, gc.mem_alloc() before and after the import)",
               ["part"] + [label for label, _ in mps])
    for name, _ in PARTS:
        t1.add(name, *["%.1f" % (parts[label][name] / 1024) for label, _ in mps])
    t1.notes = ("Each row on top of the rows above it and of what every boot loads first "
                "(config, log, bus, fs, net, the WiFi and clock services, the channel table). "
                "Only the two 'at boot' rows stay loaded; the others are loaded when used and "
                "dropped again (a connection's code after the last connection, Telegram's "
                "sending code after each reply, the formatter as soon as a reply is split).")
    t2 = Table("Whole firmware, heap in use (KB, gc.collect() then gc.mem_alloc() on the console)",
               ["moment"] + [label for label, _ in mps])
    cols = [firmware_heap(mp) for _, mp in mps]
    for i, moment in enumerate(cols[0]):
        t2.add(moment, *["%.1f" % (c[moment] / 1024) for c in cols])
    t2.notes = ("tools/sim on a fresh image (--micropython for the 32-bit one): gateway, cron, "
                "heartbeat, agent thread and console, the fake LLM over plain HTTP; with Telegram: "
                "its token set, polling the fake Bot API (plain HTTP: TLS would add mbedTLS's heap, "
                "outside the GC heap on the board). A turn = one message in, the reply out, then "
                "1 s of quiet.")
    return [t1, t2]


def firmware_heap(mp):
    """{moment: bytes} of the whole firmware under interpreter mp."""
    tg = telegram.start()
    svc = llm.start("anthropic")
    out = {}
    try:
        for with_tg in (False, True):
            sets = ["ws_port=0", "ws_token=" + TOKEN, "provider=anthropic", "api_key=" + svc["api_key"],
                    "api_base=" + svc["http_base_url"], "model=bench-model"]
            if with_tg:
                sets += ["tg_api_base=" + tg["base_url"], "tg_token=" + tg["token"], "tg_allow=42"]
            with tempfile.TemporaryDirectory() as tmp, \
                    Sim.start(tmp, *sets, console=True, micropython=mp) as sim:
                sim.wait_for(r"tg: .*polling" if with_tg else r"I app: ready")
                time.sleep(1.5)
                if not with_tg:
                    out["after boot, no Telegram token"] = _heap(sim)
                    continue
                out["after boot, Telegram polling"] = _heap(sim)
                tg.update(chat_id=42, text="hello **there**")
                tg.wait(lambda st: any(m["chat_id"] == 42 for m in st["sent"]), 60)
                time.sleep(1)
                out["after a Telegram turn"] = _heap(sim)

                async def ws_turn():
                    from websockets.asyncio.client import connect

                    async with connect("%s?token=%s" % (sim.url, TOKEN)) as w:
                        await w.send(json.dumps({"type": "message", "content": "hi", "chat_id": "b1"}))
                        while json.loads(await w.recv())["type"] != "response":
                            pass

                asyncio.run(ws_turn())
                time.sleep(1)
                out["after a WebSocket turn (client gone)"] = _heap(sim)
    finally:
        tg.close()
        svc.close()
    return out


def _heap(sim):
    n = len(sim.output())
    sim.send("import gc;gc.collect();print('HEAP', gc.mem_alloc())\r")
    return int(sim.wait_for(r"HEAP (\d+)", start=n).group(1))


if __name__ == "__main__":
    cli(tables)
