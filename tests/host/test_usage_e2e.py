"""Usage ledger, spend caps and progress, end to end: the simulator with the WebSocket
gateway and Telegram (fake Bot API), a fake Anthropic API as the LLM."""
import asyncio
import json

from simproc import Sim, llm_settings
from websockets.asyncio.client import connect

TOKEN = "usage-e2e-token"
OWNER = 42
MODEL = "anthropic/test-model"


async def recv(ws, timeout=60):
    return json.loads(await asyncio.wait_for(ws.recv(), timeout))


async def ask(ws, text):
    """-> (status frames, the answer frame)."""
    await ws.send(json.dumps({"type": "message", "content": text, "chat_id": "u1"}))
    statuses = []
    while True:
        f = await recv(ws)
        if f["type"] == "partial":  # the answer so far, while it streams
            continue
        if f["type"] != "status":
            return statuses, f
        statuses.append(f)


async def ws_part(sim, llm):
    async with connect(sim.url + "?token=" + TOKEN) as ws:
        # progress: the status frames name the tool that runs and what it works on
        llm.script({"text": "", "tool_calls": [{"name": "read_file",
                                                "input": {"path": "/spiffs/config/SOUL.md"}}]},
                   {"text": "Read it."})
        statuses, f = await ask(ws, "read your soul")
        assert f["type"] == "response" and f["content"] == "Read it.", f
        assert statuses[0] == {"type": "status", "content": "working", "chat_id": "u1"}
        assert {"type": "status", "content": "working", "chat_id": "u1", "step": "read_file",
                "detail": "/spiffs/config/SOUL.md"} in statuses, statuses
        # the ledger, asked over the socket
        await ws.send(json.dumps({"type": "usage"}))
        u = await recv(ws)
        assert u["type"] == "usage" and u["today"]["calls"] == 2 and u["hour"]["calls"] == 2, u
        assert u["today"]["models"][MODEL]["calls"] == 2 and u["today"]["input"] > 0
        assert u["limits"]["max_calls_day"] == 3 and "LLM usage" in u["text"]
        # the third call is allowed, the fourth refused before any request
        assert (await ask(ws, "one more"))[1]["content"] == "Echo: one more"
        statuses, f = await ask(ws, "and another")
        assert statuses == [] and f["content"] == (
            "Sorry, the daily limit of 3 LLM calls is reached; it resets at 00:00 (+00:00), "
            "or raise max_calls_day."), f


def test_caps_usage_and_progress_on_both_channels(tmp_path, fake_telegram, fake_anthropic):
    tg, llm = fake_telegram, fake_anthropic
    with Sim.start(tmp_path, "ws_port=0", "ws_token=" + TOKEN, "tg_api_base=" + tg["base_url"],
                   "tg_token=" + tg["token"], "tg_allow=%d" % OWNER, "max_calls_day=3",
                   *llm_settings(llm), console=True) as sim:
        sim.wait_for(r"tg: .*polling")
        tg.update(chat_id=OWNER, text="/help")  # the fake knows a chat once it wrote
        tg.wait(lambda s: any("/usage" in m["visible"] for m in s["sent"]))
        asyncio.run(ws_part(sim, llm))
        assert len(llm.requests) == 3
        # the owner (the first allowed Telegram chat) is told once
        st = tg.wait(lambda s: any("Usage limit" in m["visible"] for m in s["sent"]))
        note = [m for m in st["sent"] if "Usage limit" in m["visible"]]
        assert len(note) == 1 and note[0]["chat_id"] == OWNER and "max_calls_day" in note[0]["visible"]

        # Telegram: refused too (no second notice), and /usage answers without the LLM
        tg.update(chat_id=OWNER, text="hello?")
        st = tg.wait(lambda s: any("Sorry, the daily limit" in m["visible"] for m in s["sent"]))
        tg.update(chat_id=OWNER, text="/usage")
        st = tg.wait(lambda s: any("LLM usage" in m["visible"] for m in s["sent"]))
        report = [m for m in st["sent"] if "LLM usage" in m["visible"]][0]["visible"]
        assert "today " in report and ": 3 calls" in report and "max_calls_day 3 (3 used)" in report
        assert len([m for m in st["sent"] if "Usage limit" in m["visible"]]) == 1
        assert len(llm.requests) == 3

        # caps off on the console; a slow turn shows one progress message, edited into
        # the answer, and "typing" is renewed all along
        sim.send("config_set('max_calls_day', 0)\r")
        sim.wait_for("OK: max_calls_day = 0")
        before = tg.state()
        llm.script({"delay_s": 8, "text": "", "tool_calls": [
            {"name": "web_search", "input": {"query": "weather Lisbon"}}]},
            {"delay_s": 8, "text": "**Sunny** in Lisbon."})
        tg.update(chat_id=OWNER, text="weather?")
        st = tg.wait(lambda s: any(m["visible"] == "Sunny in Lisbon." for m in s["sent"]), 90)
        new = st["sent"][len(before["sent"]):]
        assert len(new) == 1, new  # the progress message became the answer
        m = new[0]
        assert m["parse_mode"] == "HTML" and m["edited"] >= 1 and not m.get("deleted")
        calls = st["calls"][len(before["calls"]):]
        shown = [c["params"]["text"] for c in calls if c["method"] == "sendMessage"]
        edits = [c["params"]["text"] for c in calls if c["method"] == "editMessageText"]
        assert len(shown) == 1, shown  # one progress message, naming the step (at once, or
        assert "searching the web: weather Lisbon\u2026" in shown + edits, calls  # by an edit)
        typing = [a for a in st["actions"][len(before["actions"]):] if a["chat_id"] == OWNER]
        assert len(typing) >= 3, typing  # a 16 s turn: the first and at least two renewals
        assert tg.state()["violations"] == [] and llm.violations == []
