# MicroPython side of bench/turn.py and bench/minheap.py: full agent turns through
# the firmware's own worker.run_message() (system prompt, session load, provider,
# HTTP client, ReAct loop, real tools, session save) on a board image.
#   micropython bench/mp/turn.py ARGS.json   ({"image":..., "lib":..., "mode": "prepare"|"turns", ...})
# prepare: install defaults, settings, and for workload "full" a 16 KB system prompt
#   (oversized SOUL/USER/MEMORY) and 20 stored history messages.
# turns: run "turns" turns; one "BENCH {json}" line per turn.
import sys
import json

with open(sys.argv[1]) as _f:  # a JSON file: long argv items abort the unix port
    A = json.load(_f)
sys.path[:] = [A["lib"]]
from mimi import board  # noqa: E402

board.mount_image(A["image"])
sys.path[:] = ["", ".frozen", "/lib"]
import gc  # noqa: E402
import time  # noqa: E402
from mimi import config, bus, fs  # noqa: E402

CHAT = "bench"
TEXT = "What time is it, and what is in my memory file?"


def out(rec):
    print("BENCH " + json.dumps(rec))


SEED = "/bench_session.jsonl"  # the 20 stored messages, put back before every turn


def _seed():
    from mimi.memory import sessions

    with open(SEED, "rb") as f:
        fs.write_atomic(sessions.path(bus.session_key("websocket", CHAT)), f.read())


def prepare():
    from mimi import defaults
    from mimi.memory import sessions, store
    from mimi.agent import context

    defaults.install()
    config.cfg.load()
    config.cfg.update({"provider": A["kind"], "api_key": A["api_key"], "api_base": A["base"],
                       "model": "bench-model", "ws_token": "bench-turn-token"})
    if A.get("workload") == "full":
        line = "The user likes short answers and lives in Lisbon; keep replies brief. "
        fs.write_atomic(context.SOUL_PATH, (line * 200).encode())  # ~14 KB each:
        fs.write_atomic(context.USER_PATH, (line * 200).encode())  # the prompt hits 16 KB
        fs.write_atomic(store.MEMORY_PATH, (line * 70).encode())
        fs.makedirs(sessions.DIR)
        with open(SEED, "wb") as f:
            for k in range(A.get("history", 20)):
                role = "user" if k % 2 == 0 else "assistant"
                text = ("message %d: " % k) + "word " * 100  # ~510 bytes each
                f.write(json.dumps({"role": role, "content": text, "ts": 0}).encode() + b"\n")
        _seed()
    p = context.build_system_prompt("websocket", CHAT)
    out({"prompt_bytes": len(p.encode()),
         "history": len(sessions.load(bus.session_key("websocket", CHAT)))})


def _body_buf(provider):
    body = provider._cached[1]._body if provider._cached else None
    return len(body.buf) if body is not None and body.buf is not None else 0


def turns():
    from mimi.agent import worker, react
    from mimi.llm import provider
    from mimi.net import http

    config.cfg.load()
    seen = []
    run_turn = react.run_turn

    def spy(*a, **kw):
        t = run_turn(*a, **kw)
        seen.append(t)
        return t

    react.run_turn = spy
    if A.get("close"):  # a new connection (and TLS handshake) for every LLM call
        from mimi.llm.anthropic import Anthropic
        from mimi.llm.openai import OpenAI

        for cls in (Anthropic, OpenAI):
            h = cls.headers
            cls.headers = lambda self, h=h: dict(h(self), Connection="close")
    if A.get("body_buf"):  # experiment: another starting size of the request body buffer
        from mimi.llm import jsonbuf

        init = jsonbuf.JsonBuf.__init__
        jsonbuf.JsonBuf.__init__ = lambda self, size=None: init(self, A["body_buf"])
    samples = []
    if A.get("sample"):  # live heap (after gc.collect) around every HTTP request
        req = http.Client.request

        def sampled(self, *a, **kw):
            gc.collect()
            samples.append(gc.mem_alloc())
            r = req(self, *a, **kw)
            gc.collect()
            samples.append(gc.mem_alloc())
            return r

        http.Client.request = sampled
    for i in range(A["turns"]):
        chat = "fresh%d" % i
        if A.get("workload") == "full":  # the same 20 messages every turn
            chat = CHAT
            _seed()
        gc.collect()
        base = gc.mem_alloc()
        del samples[:]
        del seen[:]
        t0 = time.ticks_us()
        reply = worker.run_message(bus.Msg("websocket", chat, TEXT))
        us = time.ticks_diff(time.ticks_us(), t0)
        t = seen[-1] if seen else None
        cli = provider._cached[1].client if provider._cached else None
        out({"us": us, "reply": reply[:60], "error": t.error if t else "no turn",
             "llm_calls": t.llm_calls if t else 0, "tool_calls": t.tool_calls if t else 0,
             "usage": t.usage if t else None,
             "handshakes": cli.handshakes if cli else 0, "connects": cli.connects if cli else 0,
             "heap_base": base, "heap_peak": max(samples) if samples else None,
             "heap_samples": list(samples),
             "body_buf": _body_buf(provider),
             "heap_total": gc.mem_alloc() + gc.mem_free()})


if A["mode"] == "prepare":
    prepare()
else:
    turns()
