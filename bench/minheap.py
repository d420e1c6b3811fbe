"""The smallest MicroPython heap that completes a full turn: 16 KB system prompt,
20 history messages, 3 tool calls (4 LLM calls), plain HTTP and HTTPS, found by
bisection on `micropython -X heapsize=...`; plus the live heap sampled (after
gc.collect()) before and after every HTTP request of a turn at the default heap.

  .venv/bin/python bench/minheap.py
"""
import shutil
import tempfile
from pathlib import Path

from common import Table, certs, make_image, mp_args, run_mp
from fakes import llm
from turn import SCRIPT

LO_KB, HI_KB = 48, 1024


def works(svc, args, img, trial, kb):
    shutil.copy(img, trial)  # every try starts from the same prepared flash
    svc.reset()
    svc.script(*SCRIPT)
    rc, recs, _ = run_mp("turn.py", dict(args, image=str(trial), mode="turns", turns=1),
                         heap="%dk" % kb, timeout=60)
    return rc == 0 and len(recs) == 1 and recs[0]["error"] is None \
        and recs[0]["llm_calls"] == 4 and recs[0]["tool_calls"] == 3


def bisect(svc, args, img, trial):
    lo, hi = LO_KB, HI_KB  # lo fails, hi works
    if works(svc, args, img, trial, lo) or not works(svc, args, img, trial, hi):
        raise RuntimeError("bisection bounds %d..%d KB don't bracket the minimum" % (lo, hi))
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if works(svc, args, img, trial, mid):
            hi = mid
        else:
            lo = mid
    return hi


def tables(n=None):
    t = Table("Smallest heap for a full turn (16 KB prompt, 20 history messages, 3 tools)",
              ["provider", "transport", "min heap KB", "live heap before turn",
               "live peak around HTTP requests", "peak - before"])
    with tempfile.TemporaryDirectory() as tmp:
        c = certs(tmp)
        for kind in ("anthropic", "openai"):
            svc = llm.start(kind, c)
            try:
                for proto, base in (("http", svc["http_base_url"]), ("https", svc["base_url"])):
                    img = Path(tmp) / ("%s-%s.img" % (kind, proto))
                    make_image(img, c["ca"])
                    args = mp_args(img, kind=kind, api_key=svc["api_key"], base=base,
                                   workload="full")
                    rc, recs, out = run_mp("turn.py", dict(args, mode="prepare"))
                    if rc or recs[0]["prompt_bytes"] < 16000 or recs[0]["history"] != 20:
                        raise RuntimeError("prepare failed: %s\n%s" % (recs, out[-2000:]))
                    trial = Path(tmp) / "trial.img"
                    kb = bisect(svc, args, img, trial)
                    shutil.copy(img, trial)
                    svc.reset()
                    svc.script(*SCRIPT)
                    rc, recs, out = run_mp("turn.py", dict(args, image=str(trial), mode="turns",
                                                           turns=1, sample=True))
                    r = recs[0]
                    t.add(kind, proto, kb, "%.1f KB" % (r["heap_base"] / 1024),
                          "%.1f KB" % (r["heap_peak"] / 1024),
                          "%.1f KB" % ((r["heap_peak"] - r["heap_base"]) / 1024))
            finally:
                svc.close()
    t.notes = ("min heap: bisection to 1 KB on -X heapsize (the turn must finish with 4 LLM "
               "calls, 3 tools, no error). Live heap: gc.mem_alloc() after gc.collect() "
               "before/after each HTTP request (the request body buffer, messages and reply "
               "alive). Unix port: 64-bit words, and mbedTLS allocates from the GC heap.")
    return [t]


if __name__ == "__main__":
    from common import cli

    cli(tables)
