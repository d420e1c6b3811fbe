# The biggest turn of the agent path alone in a capped heap: a 16 KB system prompt, 20
# history messages and 3 tool calls (one with 2 KB of arguments) against each fake LLM
# server (tests/fakes/llm.py) over loopback TLS. A file of its own, importing only the
# fake's control (llmfake) and the firmware: its cap measures the firmware, not the other
# provider scenarios' code (llmcases.py, compiled from source beside it, took ~35 KB).
import gc
import os
import sys

import llmfake
import support
from mimi import board
from mimi.agent.react import run_turn
from mimi.tools.registry import Registry, Ctx

PARAMS = {"anthropic": ("fake_anthropic",), "openai": ("fake_openai",)}
# (64-bit, 32-bit): every run passes from 248k / 188k up to the cap and beyond (2026-12-05:
# 7 temp paths of 2-50 characters from checkouts /work/main and /check/work/main, every
# 4 KB); 240k / 184k fail some: ~90% of each cap
HEAP = {"test_big_turn": ("272k", "208k")}
CAPS = (272, 208)  # the same, checked inside the VM (unless tests/heapneed.py sets another)
TIMEOUT = 90


def test_big_turn(kind):
    mp32 = sys.maxsize < 2 ** 31
    cap = CAPS[1 if mp32 else 0]
    assert gc.mem_free() + gc.mem_alloc() <= cap * 1024 or os.getenv("MIMI_HEAP"), gc.mem_free() + gc.mem_alloc()
    fx = support.fixture("fake_" + kind)
    system = ("Fixed rules. " * 700)[:9000] + "\n## Current Turn Context\n" + "x" * 7000
    history = []
    for i in range(10):
        history.append({"role": "user", "content": "question %d " % i + "q" * 300})
        history.append({"role": "assistant", "content": "answer %d " % i + "a" * 300})
    llmfake.script(fx, {"tool_calls": [{"name": "echo", "input": {"text": "a" * 2000}}]},
                   {"tool_calls": [{"name": "get_current_time", "input": {}},
                                   {"name": "echo", "input": {"text": "b"}}]},
                   {"text": "big turn done"})
    reg = Registry()
    reg.add("get_current_time", "Time", {"type": "object", "properties": {}, "required": []},
            lambda a, ctx: "2026-01-01 09:00:00 UTC+00:00")
    reg.add("echo", "Echo text", {"type": "object", "properties": {
        "text": {"type": "string", "description": "what to echo"}}, "required": ["text"]},
        lambda a, ctx: "echo:%s" % a["text"])
    if kind == "anthropic":
        from mimi.llm.anthropic import Anthropic as cls
    else:
        from mimi.llm.openai import OpenAI as cls
    p = cls(fx["api_key"], model="test-model", api_base=fx["base_url"],
            ca=board.host_path(fx["ca"]), sleep=lambda s: None)
    gc.collect()
    t = run_turn(p, system, history, "go", reg, Ctx("websocket", "7"))
    assert t.text == "big turn done" and t.tool_calls == 3, t
    p.close()
    p = t = history = system = reg = None
    gc.collect()
    s = llmfake.snapshot(fx, False)
    assert s["violations"] == [] and s["handshakes"] == 1, s
    assert s["requests"][-1]["size"] > 16000 + 20 * 300
    assert [r["size"] > 16000 for r in s["requests"]] == [True] * 3
