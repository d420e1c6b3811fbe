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

LO_KB, HI_KB, STEP_KB = 64, 800, 16


def works(svc, args, img, trial, kb):
    shutil.copy(img, trial)  # every try starts from the same prepared flash
    svc.reset()
    svc.script(*SCRIPT)
    rc, recs, _ = run_mp("turn.py", dict(args, image=str(trial), mode="turns", turns=1),
                         heap="%dk" % kb, timeout=60)
    return rc == 0 and len(recs) == 1 and recs[0]["error"] is None \
        and recs[0]["llm_calls"] == 4 and recs[0]["tool_calls"] == 3


def bisect(svc, args, img, trial):
    # Success is not monotonic in the heap size (where the big blocks land depends on
    # fragmentation), so: step down in STEP_KB until the first failure, then bisect.
    hi = HI_KB
    if not works(svc, args, img, trial, hi):
        raise RuntimeError("the turn fails even with %d KB" % hi)
    while hi - STEP_KB >= LO_KB and works(svc, args, img, trial, hi - STEP_KB):
        hi -= STEP_KB
    lo = hi - STEP_KB
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if works(svc, args, img, trial, mid):
            hi = mid
        else:
            lo = mid
    return hi


def _kb(n):
    return "%.1f KB" % (n / 1024)


def tables(n=None):
    t = Table("Smallest heap for a full turn (16 KB prompt, 20 history messages, 3 tools)",
              ["provider", "transport", "min heap KB (cold: imports + 1st turn)",
               "live heap before 1st turn", "live before 2nd turn", "live peak in 2nd turn",
               "request body buffer"])
    with tempfile.TemporaryDirectory() as tmp:
        c = certs(tmp)
        for kind in ("anthropic", "openai"):
            svc = llm.start(kind, c)
            try:
                for proto, buf in (("http", None), ("https", None), ("https", 40 * 1024)):
                    base = svc["base_url" if proto == "https" else "http_base_url"]
                    img = Path(tmp) / ("%s-%s.img" % (kind, proto))
                    make_image(img, c["ca"])
                    args = mp_args(img, kind=kind, api_key=svc["api_key"], base=base,
                                   workload="full", body_buf=buf)
                    rc, recs, out = run_mp("turn.py", dict(args, mode="prepare"))
                    if rc or recs[0]["prompt_bytes"] < 16000 or recs[0]["history"] != 20:
                        raise RuntimeError("prepare failed: %s\n%s" % (recs, out[-2000:]))
                    trial = Path(tmp) / "trial.img"
                    kb = bisect(svc, args, img, trial)
                    shutil.copy(img, trial)
                    svc.reset()
                    svc.script(*(SCRIPT * 2))
                    rc, recs, out = run_mp("turn.py", dict(args, image=str(trial), mode="turns",
                                                           turns=2, sample=True))
                    first, r = recs
                    label = proto + (" (experiment: %d KB body buffer)" % (buf // 1024) if buf else "")
                    t.add(kind, label, kb, _kb(first["heap_base"]), _kb(r["heap_base"]),
                          _kb(r["heap_peak"]), _kb(r["body_buf"]))
            finally:
                svc.close()
    t.notes = ("min heap: -X heapsize stepped down from %d KB in %d KB steps to the first "
               "failure, then bisected to 1 KB (the turn must finish with 4 LLM "
               "calls, 3 tools, no error)." % (HI_KB, STEP_KB) + " Live heap: gc.mem_alloc() after gc.collect() "
               "before/after each HTTP request (the request body buffer, messages and reply "
               "alive). Experiment rows start the request body buffer (lib/mimi/llm/jsonbuf.py, "
               "limits.LLM_BODY_BUF = 32 KB, regrown to the body's exact size, rounded up to a whole KB, "
               "when a body does not fit) at 40 KB. The driver loads only the agent path (no gateway, "
               "Telegram or cron loop). Unix "
               "port: 64-bit words; mbedTLS buffers are malloc'd outside the GC heap.")
    return [t]


if __name__ == "__main__":
    from common import cli

    cli(tables)
