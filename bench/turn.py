"""A three-tool turn against the fake Anthropic and OpenAI servers over loopback HTTPS
(test CA), through the firmware's worker.run_message() under MicroPython.

  .venv/bin/python bench/turn.py [-n TURNS]

Each turn: LLM -> get_current_time, LLM -> list_dir, LLM -> read_file, LLM -> answer
(4 LLM calls, 3 tools, one tool per step so the uplink growth shows).
Workloads: "default" = default data files, a new chat each turn (no history);
"full" = 16 KB system prompt + 20 stored history messages.
Connections: keep-alive (the firmware's client) or "Connection: close" on every call.
Token counts are the fake's: len(JSON of the request) // 4; with Anthropic prompt
caching, every request prefix ending at a cache_control mark (the tools, then each
marked system block) is cached, and the longest one seen before counts as a cache read
(tests/fakes/llm.py, FakeLLM.tokens and _cached_prefixes).
"""
import json
import tempfile
from pathlib import Path

from common import Table, certs, cli, make_image, median, mp_args, pct, run_mp
from fakes import llm

SCRIPT = [
    {"tool_calls": [{"name": "get_current_time", "input": {}}]},
    {"tool_calls": [{"name": "list_dir", "input": {"prefix": "/spiffs/memory/"}}]},
    {"tool_calls": [{"name": "read_file", "input": {"path": "/spiffs/memory/MEMORY.md"}}]},
    {"text": "It is 09:00 UTC. Your memory file lists your preferences."},
]


# (workload, Connection: close on every call)
CASES = (("default", False), ("full", False), ("full", True))


def head_bytes(rec):
    """Size of the request line + headers as sent (names are recorded lower-case)."""
    n = len("%s %s HTTP/1.1\r\n" % (rec["method"], rec["path"])) + 2
    return n + sum(len(k) + 2 + len(v) + 2 for k, v in rec["headers"].items())


def run(svc, tmp, ca, kind, workload, close, n):
    img = Path(tmp) / ("%s-%s-%d.img" % (kind, workload, close))
    make_image(img, ca)
    args = mp_args(img, kind=kind, api_key=svc["api_key"], base=svc["base_url"],
                   workload=workload)
    rc, recs, output = run_mp("turn.py", dict(args, mode="prepare"))
    if rc or not recs:
        raise RuntimeError("prepare failed:\n" + output)
    prep = recs[0]
    svc.reset()
    svc.script(*(SCRIPT * (n + 1)))
    rc, recs, output = run_mp("turn.py", dict(args, mode="turns", turns=n + 1, close=close))
    bad = [r for r in recs if r["error"] or r["llm_calls"] != 4 or r["tool_calls"] != 3]
    if rc or len(recs) != n + 1 or bad:
        raise RuntimeError("turns failed (%s):\n%s" % (bad[:1], output[-3000:]))
    snap = svc.snapshot(bodies=False)
    if snap["violations"]:
        raise RuntimeError("the fake refused requests: %s" % snap["violations"][:3])
    body = svc.snapshot(last=recs[-1]["llm_calls"])["requests"][0]["body"]  # a later turn's 1st
    snap["parts"] = {k: len(json.dumps(body.get(k, ""))) for k in ("system", "tools", "messages")}
    snap["parts"]["n"] = len(body["messages"])
    if kind == "openai":  # the system prompt travels as the first message
        snap["parts"]["system"] = len(json.dumps(body["messages"][0]))
        snap["parts"]["messages"] -= snap["parts"]["system"]
        snap["parts"]["n"] -= 1
    reqs = snap["requests"]
    per_turn, k = [], 0
    for r in recs:
        mine = reqs[k:k + r["llm_calls"]]
        k += r["llm_calls"]
        per_turn.append([x["size"] + head_bytes(x) for x in mine])
    return prep, recs, per_turn, snap


def tables(n=None):
    n = n or 20
    time_t = Table("Three-tool turn over loopback HTTPS (%d turns after a first one)" % n,
                   ["provider", "workload", "connection", "prompt B", "first turn ms",
                    "median ms", "p90 ms", "LLM calls/turn", "TLS handshakes: first turn",
                    "later turns"])
    bytes_t = Table("Uplink and tokens per turn (same runs, a later turn)",
                    ["provider", "workload", "request bytes/turn", "per LLM call (1st..4th)",
                     "1st call JSON: system / tools / messages (count)",
                     "input tokens/turn", "cache-read tokens/turn", "output tokens/turn"])
    with tempfile.TemporaryDirectory() as tmp:
        c = certs(tmp)
        for kind in ("anthropic", "openai"):
            svc = llm.start(kind, c)
            try:
                for workload, close in CASES:
                    prep, recs, per_turn, snap = run(svc, tmp, c["ca"], kind, workload, close, n)
                    later = recs[1:]
                    ms = [r["us"] / 1000 for r in later]
                    hs_first = recs[0]["handshakes"]
                    hs_later = (recs[-1]["handshakes"] - hs_first) / len(later)
                    conn = "close" if close else "keep-alive"
                    time_t.add(kind, workload, conn, prep["prompt_bytes"], recs[0]["us"] / 1000,
                               median(ms), pct(ms, 90), later[0]["llm_calls"], hs_first, hs_later)
                    if not close:
                        u = later[-1]["usage"]
                        calls = per_turn[-1]
                        bytes_t.add(kind, workload, sum(calls), " / ".join(map(str, calls)),
                                    "%(system)d / %(tools)d / %(messages)d (%(n)d)" % snap["parts"],
                                    u["input"], u["cache_read"], u["output"])
            finally:
                svc.close()
    time_t.notes = ("handshakes counted by the firmware's HTTP client (Client.handshakes); the "
                    "fake's HTTPS listener agrees. close = every LLM call sends Connection: close.")
    bytes_t.notes = ("request bytes = request line + headers + JSON body, as the fake received "
                     "them. Tokens: the fake's bytes/4 count; input includes cache reads.")
    return [time_t, bytes_t]


if __name__ == "__main__":
    cli(tables)
