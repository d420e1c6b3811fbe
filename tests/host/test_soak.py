"""A long run of the whole firmware under a capped heap: many turns from several
chats, with clients coming and going, must all be answered, and the heap in use
afterwards must be back near where it started (nothing kept per turn or per client)."""
import asyncio
import json
import re

import websockets

from simproc import Sim, llm_settings

HEAP = "768k"  # well under the host default (2 MB): a leak or a hog shows up as MemoryError
CHATS = 4
ROUNDS = 30  # per chat; every round is a new connection (connect, ask, disconnect)
HEAP_RE = re.compile(r"^heap free\s+(\d+) bytes \(in use (\d+)\)[\s\S]*?^flash .*free", re.M)


def heap_alloc(sim, start):
    sim.send("heap_info()\r")
    m = sim.wait_for(HEAP_RE, start=start)
    return int(m.group(2)), m.end()


async def chat(port, token, chat_id):
    answers = 0
    for i in range(ROUNDS):
        async with websockets.connect("ws://127.0.0.1:%d/?token=%s" % (port, token)) as ws:
            await ws.send(json.dumps({"type": "message", "chat_id": chat_id,
                                      "content": "message %d from %s " % (i, chat_id) + "x" * 500}))
            while True:
                frame = json.loads(await asyncio.wait_for(ws.recv(), 60))
                if frame["type"] == "response":
                    assert frame["chat_id"] == chat_id
                    assert "message %d from %s" % (i, chat_id) in frame["content"], frame
                    answers += 1
                    break
                assert frame["type"] in ("status", "partial"), frame
    return answers


async def run_all(port, token):
    return await asyncio.gather(*[chat(port, token, "soak%d" % n) for n in range(CHATS)])


def test_many_turns_under_a_capped_heap(tmp_path, fake_anthropic):
    token = "soak-test-token"
    with Sim.start(tmp_path, "ws_port=0", "ws_token=" + token, *llm_settings(fake_anthropic),
                   "max_calls_hour=0", console=True, heap=HEAP) as sim:  # 121 turns in minutes
        ready = sim.wait_for("gateway listening")
        # one turn first, so that modules loaded on first use are in both figures
        assert asyncio.run(chat_once(sim.port, token)) == 1
        before, pos = heap_alloc(sim, ready.end())
        answers = asyncio.run(run_all(sim.port, token))
        after, _ = heap_alloc(sim, pos)
        out = sim.output()
    assert answers == [ROUNDS] * CHATS, out[-3000:]
    assert "MemoryError" not in out and "Traceback" not in out, out[-3000:]
    assert fake_anthropic.violations == []
    # 120 turns, 120 connections, 4 session files later: the same live heap, give or take
    assert after - before < 48 * 1024, (before, after)


async def chat_once(port, token):
    global ROUNDS
    saved, ROUNDS = ROUNDS, 1
    try:
        return await chat(port, token, "warmup")
    finally:
        ROUNDS = saved
