"""End to end over the simulator: in a WebSocket chat the model schedules a one-shot
cron job a few seconds ahead; when it fires, the agent runs a turn in that chat and
its answer reaches the same WebSocket client. cron.json on the flash records it."""
import asyncio
import json
import time

import websockets

from simproc import Sim, llm_settings


async def converse(port, token, fake, chat_id="cronchat"):
    frames = []
    async with websockets.connect("ws://127.0.0.1:%d/?token=%s" % (port, token)) as ws:
        at = int(time.time()) + 5  # margin for a slow first turn; the job must be in the future
        fake.script(
            {"text": "", "tool_calls": [{"name": "cron_add", "input": {
                "name": "pong", "schedule_type": "at", "at_epoch": at,
                "message": "Time is up: say pong"}}]},
            {"text": "Scheduled."},
            {"text": "pong!"},
        )
        await ws.send(json.dumps({"type": "message", "content": "Say pong in 5 seconds",
                                  "chat_id": chat_id}))
        while len([f for f in frames if f["type"] == "response"]) < 2:
            frame = json.loads(await asyncio.wait_for(ws.recv(), 60))
            assert frame["type"] in ("status", "partial", "response"), frame
            frames.append(frame)
    return at, [f for f in frames if f["type"] == "response"]


def test_cron_job_answers_in_the_websocket_chat(tmp_path, fake_anthropic):
    token = "cron-e2e-token"
    with Sim.start(tmp_path, "ws_port=0", "ws_token=" + token,
                   *llm_settings(fake_anthropic)) as sim:
        at, responses = asyncio.run(converse(sim.port, token, fake_anthropic))
    assert [r["content"] for r in responses] == ["Scheduled.", "pong!"]
    assert responses[0]["chat_id"] == responses[1]["chat_id"]
    reqs = fake_anthropic.requests
    assert fake_anthropic.violations == []
    assert len(reqs) == 3
    results = [b for m in reqs[1]["body"]["messages"] if isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"]
    assert any("OK: Added one-shot job 'pong'" in json.dumps(b) for b in results)
    # the cron turn is a user turn in the same chat's session
    last = reqs[2]["body"]["messages"]
    assert last[-1] == {"role": "user", "content": "Time is up: say pong"}
    assert any(m["role"] == "user" and m["content"] == "Say pong in 5 seconds" for m in last)
