"""A three-tool turn against the fake Anthropic and OpenAI servers over loopback HTTPS
(test CA), through the firmware's worker.run_message() under MicroPython.

  .venv/bin/python bench/turn.py [-n TURNS]

Each turn: LLM -> get_current_time, LLM -> list_dir, LLM -> read_file, LLM -> answer
(4 LLM calls, 3 tools, one tool per step so the uplink growth shows).
Workloads: "default" = default data files, a new chat each turn (no history);
"full" = 16 KB system prompt + 20 stored history messages.
Peer comparison (OpenAI, the turn ChipClaw was measured on): "peer" = default SOUL/USER
and skills, a 4 KB MEMORY.md, 3 daily notes, 20 history messages of 300 characters;
LLM -> list_dir, LLM -> read_file, LLM -> write_file, LLM -> answer; as the board runs
it (HTTPS, the simulated LittleFS flash) and under the conditions the peer was timed in
(plain HTTP, the files on the host's disk through VfsPosix), streamed and not.
Connections: keep-alive (the firmware's client) or "Connection: close" on every call.
Token counts are the fake's: len(JSON of the request) // 4; with Anthropic prompt
caching, every request prefix ending at a cache_control mark (the tools, then each
marked system block) is cached, and the longest one seen before counts as a cache read
(tests/fakes/llm.py, FakeLLM.tokens and _cached_prefixes).
"""
import json
import tempfile

from common import MP, Table, certs, cli, interpreters, median, pct
from fakes import llm

SCRIPT = [
    {"tool_calls": [{"name": "get_current_time", "input": {}}]},
    {"tool_calls": [{"name": "list_dir", "input": {"prefix": "/spiffs/memory/"}}]},
    {"tool_calls": [{"name": "read_file", "input": {"path": "/spiffs/memory/MEMORY.md"}}]},
    {"text": "It is 09:00 UTC. Your memory file lists your preferences."},
]
PEER_SCRIPT = [
    {"tool_calls": [{"name": "list_dir", "input": {"prefix": "/spiffs/memory/"}}]},
    {"tool_calls": [{"name": "read_file", "input": {"path": "/spiffs/memory/MEMORY.md"}}]},
    {"tool_calls": [{"name": "write_file", "input": {
        "path": "/spiffs/memory/found.md", "content": "Memory holds 68 facts; 3 daily notes."}}]},
    {"text": "Your memory holds 68 short facts and there are 3 daily notes; I noted that."},
]
# ChipClaw (commit 714bb22) on its reference workspace, per interpreter: smallest heap
# (.mpy, cold), bytes allocated by a warm turn, median turn ms (plain HTTP, VfsPosix)
# and its fastest of those 20 ("best": the figure least moved by other jobs on the machine)
PEER = {"64-bit": {"min_heap": 205824, "alloc": 517504, "ms": 11.3, "best": 11.0,
                   "when": "2026-12-03 13:18"},
        "32-bit": {"min_heap": 165888, "alloc": 449216, "ms": 15.8, "best": 15.8,
                   "when": "2026-12-03 08:40 and 13:20"}}


# (workload, Connection: close on every call)
CASES = (("default", False), ("full", False), ("full", True))


def head_bytes(rec):
    """Size of the request line + headers as sent (names are recorded lower-case)."""
    n = len("%s %s HTTP/1.1\r\n" % (rec["method"], rec["path"])) + 2
    return n + sum(len(k) + 2 + len(v) + 2 for k, v in rec["headers"].items())


def run(svc, tmp, ca, kind, workload, close, n, script=SCRIPT, mp=MP, base=None, **kw):
    import minheap

    img, args, prep = minheap.prepare(svc, tmp, ca, kind, workload, mp, script, base)
    svc.reset()
    svc.script(*(script * (n + 1)))
    rc, recs, output = minheap.run(dict(args, script=None), img, tmp, mp, turns=n + 1,
                                   close=close, **kw)
    bad = [r for r in recs if r["error"] or r["tool_errors"] or (r["llm_calls"], r["tool_calls"]) != (4, 3)]
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
    return [time_t, bytes_t, peer(n)]


def peer(n):
    """The peer workload beside ChipClaw's figures: as the board runs it (HTTPS, the
    simulated LittleFS flash) and under the peer's own conditions (plain HTTP, the files
    on the host's disk through VfsPosix), on each interpreter."""
    import minheap

    t = Table("Peer comparison: ChipClaw's turn (OpenAI, %d turns after a first one)" % n,
              ["interpreter", "conditions", "smallest heap", "x peer", "allocated per turn",
               "x peer", "turn ms (median)", "x peer", "best turn ms", "x peer",
               "firmware ms (median)", "request bytes per turn", "LLM calls / tools"])
    with tempfile.TemporaryDirectory() as tmp:
        c = certs(tmp)
        svc = llm.start("openai", c)
        try:
            for label, mp in interpreters():
                for cond, base in (("HTTPS, LittleFS", svc["base_url"]),
                                   ("HTTP, host files", svc["http_base_url"]),
                                   ("HTTP, host files, not streamed", svc["http_base_url"])):
                    posix = "host files" in cond

                    def turns(**kw):
                        if posix:  # a fresh directory for the image's files
                            kw["posix"] = tempfile.mkdtemp(dir=tmp)
                        if cond.endswith("not streamed"):  # whole answers, as the peer gets
                            kw["stream"] = False
                        return run(svc, tmp, c["ca"], "openai", "peer", False, n, PEER_SCRIPT,
                                   mp, base, **kw)

                    prep, recs, per_turn, snap = turns(netwait=True)  # GC on, default heap
                    later = recs[1:]
                    alloc = median([r["alloc"] for r in turns(alloc=True, heap="16m")[1][1:]])
                    kb = "-"
                    if not posix:
                        img, args, _ = minheap.prepare(svc, tmp, c["ca"], "openai", "peer", mp,
                                                       PEER_SCRIPT)
                        kb = minheap.smallest(args, img, tmp, mp, minheap.HI_KB[label],
                                               minheap.LO_KB[label])[0]
                    ms = median([r["us"] / 1000 for r in later])
                    best = min(r["us"] for r in later) / 1000
                    ref = PEER[label.split()[0]]  # a frozen build: its word size's peer
                    t.add(label, cond, "%d KB" % kb if kb != "-" else kb,
                          "%.2f" % (kb * 1024 / ref["min_heap"]) if kb != "-" else "-",
                          "%.1f KB" % (alloc / 1024), "%.2f" % (alloc / ref["alloc"]), ms,
                          "%.2f" % (ms / ref["ms"]) if posix else "-", best,
                          "%.2f" % (best / ref["best"]) if posix else "-",
                          median([(r["us"] - r["net_us"]) / 1000 for r in later]),
                          sum(per_turn[-1]),
                          "%d / %d" % (later[0]["llm_calls"], later[0]["tool_calls"]))
        finally:
            svc.close()
    t.notes = ("ChipClaw (%s): smallest heap %s B, allocated per turn %s B, turn time %s ms, "
               "best %s ms (of 20 warm turns: ticks_us around its _handle_message, plain HTTP "
               "to this fake, its workspace on the host's disk through VfsPosix; "
               "/work/notes/peer-results.md; it does not stream). Its time is only like for "
               "like with the 'HTTP, host files' rows, where the x peer is given; ours "
               "streams answers unless 'not streamed' (setting stream off). Ours: smallest "
               "heap by minheap.py's scan (cold turn); allocated = gc.mem_alloc() growth over "
               "one turn with the GC off (16 MB heap); turn ms = worker.run_message() with "
               "the GC on (default heap), as the peer's: the median and the fastest; firmware "
               "ms = that minus the time the HTTP client waited on its socket (the fake's "
               "share); request bytes = request lines + headers + bodies as the fake received "
               "them."
               % ("; ".join("%s %s" % (k, v["when"]) for k, v in PEER.items()),
                  " / ".join("%d" % v["min_heap"] for v in PEER.values()),
                  " / ".join("%d" % v["alloc"] for v in PEER.values()),
                  " / ".join("%.1f" % v["ms"] for v in PEER.values()),
                  " / ".join("%.1f" % v["best"] for v in PEER.values())))
    return t


if __name__ == "__main__":
    cli(tables)
