"""End to end over the simulator: the model saves the user's name in MEMORY.md with
edit_file, the next turn's system prompt (as the fake LLM received it) carries it,
and memory_read() on the same flash image shows it."""
import asyncio
import json
import subprocess

from conftest import ROOT, micropython_bin
from simproc import Sim, llm_settings

import websockets

OLD = "(Nothing saved yet. Lasting facts about the user and decisions go here.)"


def system_text(req):
    s = req["body"].get("system")
    if isinstance(s, list):
        return "".join(b.get("text", "") for b in s)
    return s or ""


async def chat(port, token, texts, chat_id="e2e"):
    replies = []
    async with websockets.connect("ws://127.0.0.1:%d/?token=%s" % (port, token)) as ws:
        for text in texts:
            await ws.send(json.dumps({"type": "message", "content": text, "chat_id": chat_id}))
            while True:
                frame = json.loads(await asyncio.wait_for(ws.recv(), 60))
                if frame["type"] == "response":
                    replies.append(frame["content"])
                    break
                assert frame["type"] in ("status", "partial"), frame
    return replies


def test_model_remembers_name_across_turns(tmp_path, fake_anthropic):
    fake_anthropic.script(
        {"text": "Saving that.", "tool_calls": [{"name": "edit_file", "input": {
            "path": "/spiffs/memory/MEMORY.md", "old_string": OLD,
            "new_string": "- The user's name is Ada Lovelace."}}]},
        {"text": "Nice to meet you, Ada!"},
        {"text": "You are Ada Lovelace."},
    )
    token = "memory-e2e-token"
    with Sim.start(tmp_path, "ws_port=0", "ws_token=" + token,
                   *llm_settings(fake_anthropic)) as sim:
        replies = asyncio.run(chat(sim.port, token, ["My name is Ada Lovelace.", "What is my name?"]))
        assert replies == ["Nice to meet you, Ada!", "You are Ada Lovelace."]
    reqs = fake_anthropic.requests
    assert fake_anthropic.violations == []
    assert len(reqs) == 3
    first, after_tool, second_turn = (system_text(r) for r in reqs)
    assert "Ada Lovelace" not in first and OLD in first
    tool_results = [b for m in reqs[1]["body"]["messages"] if isinstance(m["content"], list)
                    for b in m["content"] if b.get("type") == "tool_result"]
    assert any("OK: edited /spiffs/memory/MEMORY.md" in json.dumps(b) for b in tool_results)
    mem = second_turn[second_turn.index("## Long-term Memory"):]
    assert "- The user's name is Ada Lovelace." in mem.split("\n## ")[0]
    # The session kept both turns.
    hist = reqs[2]["body"]["messages"]
    assert hist[0] == {"role": "user", "content": "My name is Ada Lovelace."}
    assert hist[-1]["content"] in ("What is my name?", [{"type": "text", "text": "What is my name?"}])
    # memory_read() on the same flash image.
    snippet = (
        "import sys\n"
        "sys.path[:] = [%r]\n"
        "from mimi import board\n"
        "board.mount_image(%r)\n"
        "from mimi import repl\n"
        "repl.memory_read()\n"
        "repl.session_list()\n" % (str(ROOT / "lib"), str(tmp_path / "fs.img")))
    r = subprocess.run([micropython_bin(), "-c", snippet], capture_output=True, text=True,
                       timeout=60, cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "- The user's name is Ada Lovelace." in r.stdout
    assert "ws_e2e" in r.stdout
