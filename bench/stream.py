"""Time to the first visible text of an answer, streamed (setting `stream` on, the
default) or whole, on both channels: the simulator (tools/sim) runs the firmware, the
fake Anthropic API writes a 150-token answer at 50 tokens/s (about the pace of a hosted
model), the fake Telegram Bot API records what the bot shows. On each interpreter
(64-bit .venv, and the 32-bit board-sized one).

  .venv/bin/python bench/stream.py [-n ROUNDS]

WebSocket: send {"type":"message"} -> the first {"type":"partial"} frame (streamed) or
the {"type":"response"} (whole), and -> the response. Telegram: the update handed to
the bot's getUpdates -> the first sendMessage of the answer, and -> the message showing
the whole answer (for a streamed one: its last edit).
"""
import asyncio
import json
import tempfile
import time

from common import Sim, Table, cli, interpreters, median, smoke
from fakes import llm, telegram

TOKEN = "bench-stream-token"
CHAT = 42
PACE = 50  # tokens/s
ANSWER = " ".join("word%d" % i for i in range(150))  # 150 tokens, ~3 s at PACE


async def ws_round(url, n):
    from websockets.asyncio.client import connect

    out = []
    async with connect(url) as ws:
        for k in range(n):
            t0 = time.perf_counter()
            await ws.send(json.dumps({"type": "message", "content": "tell me %d" % k,
                                      "chat_id": "bench"}))
            first = None
            shown = 0
            while True:
                f = json.loads(await asyncio.wait_for(ws.recv(), 120))
                if f["type"] in ("partial", "response") and first is None:
                    first = time.perf_counter() - t0
                shown += f["type"] == "partial"
                if f["type"] == "response":
                    if f["content"] != ANSWER:
                        raise RuntimeError("unexpected answer %r" % f["content"][:80])
                    out.append((first, time.perf_counter() - t0, shown))
                    break
    return out


def tg_round(tg, n):
    out = []
    for k in range(n):
        before = len(tg.state()["sent"])
        t0 = time.time()
        tg.update(chat_id=CHAT, text="tell me %d" % k)
        st = tg.wait(lambda s: len(s["sent"]) > before and s["sent"][-1]["visible"] == ANSWER, 120)
        m = st["sent"][-1]
        edits = [e["t"] for e in st["edits"] if e["message_id"] == m["message_id"]]
        out.append((m["t"] - t0, (edits or [m["t"]])[-1] - t0, len(edits)))
    return out


def tables(n=None):
    n = n or 5
    t = Table("Time to the first visible text of a 150-token answer at %d tokens/s "
              "(fake Anthropic, simulator)" % PACE,
              ["interpreter", "channel", "stream", "first text (median ms)",
               "whole answer (median ms)", "updates shown (median)"])
    for label, mp in interpreters():
        for stream in (True, False):
            svc = llm.start("anthropic")  # plain http:// only
            tg = telegram.start()
            try:
                svc.configure(pace=PACE * 20 if smoke() else PACE)
                with tempfile.TemporaryDirectory() as tmp, Sim.start(
                        tmp, "ws_port=0", "ws_token=" + TOKEN, "provider=anthropic",
                        "api_key=" + svc["api_key"], "api_base=" + svc["http_base_url"],
                        "model=bench-model", "stream=%s" % ("on" if stream else "off"),
                        "tg_api_base=" + tg["base_url"], "tg_token=" + tg["token"],
                        "tg_allow=%d" % CHAT, micropython=mp) as sim:
                    sim.wait_for(r"tg: .*polling")
                    svc.script(*[{"text": ANSWER}] * (2 * n + 1))
                    ws = asyncio.run(ws_round("%s?token=%s" % (sim.url, TOKEN), n + 1))[1:]
                    tgr = tg_round(tg, n)
                for name, rows in (("WebSocket", ws), ("Telegram", tgr)):
                    t.add(label, name, "on" if stream else "off",
                          "%.0f" % (1000 * median([r[0] for r in rows])),
                          "%.0f" % (1000 * median([r[1] for r in rows])),
                          "%d" % median([r[2] for r in rows]))
            finally:
                svc.close()
                tg.close()
    t.notes = ("Median of %d answers each (the WebSocket's first one, which loads the turn's "
               "code, left out). First text: the first partial frame / the first "
               "sendMessage of the answer (streamed: plain text, edited at most once a "
               "second, then into the formatted final text), or the whole answer when not "
               "streamed. Whole answer: the response frame / the message showing all of "
               "it. Updates shown: partial frames / edits of the message. The fake writes "
               "a word per event, each 1/%d s after the last."
               % (n, PACE))
    return [t]


if __name__ == "__main__":
    cli(tables)
