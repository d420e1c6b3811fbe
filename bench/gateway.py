"""WebSocket gateway round trip with an instant fake LLM: the simulator (tools/sim)
runs the whole firmware, the fake Anthropic API answers "Echo: ..." over plain HTTP
at once, the `websockets` library is the client.

  .venv/bin/python bench/gateway.py [-n MESSAGES]

Round trip = send {"type":"message"} -> receive {"type":"response"} (the "working"
status frame in between is skipped). Each message is a full turn: prompt build,
session load, one LLM call, session save.
"""
import asyncio
import json
import tempfile
import time

from common import Sim, Table, cli, median, pct
from fakes import llm

TOKEN = "bench-gateway-token"
CLIENTS = 4


async def ask(ws, text, chat_id):
    t0 = time.perf_counter()
    await ws.send(json.dumps({"type": "message", "content": text, "chat_id": chat_id}))
    while True:
        f = json.loads(await asyncio.wait_for(ws.recv(), 60))
        if f["type"] == "response":
            return (time.perf_counter() - t0) * 1000
        if f["type"] != "status":
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
            per = max(5, n // CLIENTS)
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
    return [t]


if __name__ == "__main__":
    cli(tables)
