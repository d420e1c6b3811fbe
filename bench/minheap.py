"""The agent path's memory: the smallest MicroPython heap that completes the reference
turn (16 KB system prompt, 20 history messages, 3 tool calls = 4 LLM calls over
loopback HTTPS, cold: imports included), found by bisection on `-X heapsize=...`; the
live heap sampled (after gc.collect()) around every HTTP request; and a long run of
turns in a small heap (heap in use and largest free block after 10 and 1,000 turns).
Both providers, on the 64-bit .venv interpreter and the 32-bit one (board-sized
objects) when present.

  .venv/bin/python bench/minheap.py [-n TURNS]
"""
import shutil
import tempfile
from pathlib import Path

from common import Table, certs, interpreters, make_image, mp_args, run_mp, smoke
from fakes import llm
from turn import SCRIPT

HI_KB = {"64-bit": 384, "32-bit": 256, "64-bit frozen": 256, "32-bit frozen": 192}  # where the scan starts
LO_KB = {"64-bit": 96, "32-bit": 96, "64-bit frozen": 48, "32-bit frozen": 48}  # where it ends
STEP_KB = 8
# the long run's heap (32-bit frozen: issue 12's target for the agent path)
SOAK_KB = {"64-bit": 320, "32-bit": 208, "64-bit frozen": 192, "32-bit frozen": 128}
SOAK_TURNS = 1000


def prepare(svc, tmp, ca, kind, workload, mp, script=SCRIPT, base=None):
    """A prepared image and the turn arguments for one provider and workload (the LLM
    at `base`, the fake's HTTPS listener by default)."""
    img = Path(tmp) / ("%s-%s.img" % (kind, workload))
    make_image(img, ca)
    args = mp_args(img, kind=kind, api_key=svc["api_key"], base=base or svc["base_url"],
                   control=svc["control"], workload=workload, script=script)
    rc, recs, out = run_mp("turn.py", dict(args, mode="prepare"), mp=mp)
    if rc or not recs:
        raise RuntimeError("prepare failed: %s\n%s" % (recs, out[-2000:]))
    return img, args, recs[0]


def run(args, img, tmp, mp, heap=None, timeout=120, **kw):
    """Turns on a fresh copy of the prepared image -> (rc, records, output)."""
    trial = Path(tmp) / "trial.img"
    shutil.copy(img, trial)  # every run starts from the same prepared flash
    return run_mp("turn.py", dict(args, image=str(trial), mode="turns", **kw),
                  heap=heap, timeout=timeout, mp=mp)


def ok(recs, calls):
    return all(r["error"] is None and (r["llm_calls"], r["tool_calls"]) == calls
               and not r["tool_errors"] for r in recs)


def smallest(args, img, tmp, mp, hi, lo_kb=96, calls=(4, 3), why=None):
    """(smallest -X heapsize in KB that completes one cold turn, largest that fails above
    it or None). Success is not monotonic in the heap size (where the big blocks land
    depends on fragmentation), so every STEP_KB from hi down to lo_kb is tried, then the
    step below the smallest success is bisected to 1 KB. why: a dict that gets, per
    failing size, what failed (the turn's error or its first tool error)."""
    def works(kb):
        rc, recs, out = run(args, img, tmp, mp, heap="%dk" % kb, turns=1, timeout=60)
        good = rc == 0 and len(recs) == 1 and ok(recs, calls)
        if not good and why is not None:
            r = recs[0] if recs else {}
            why[kb] = r.get("error") or r.get("tool_error") or (out.strip().splitlines() or ["?"])[-1][:120]
        return good

    if smoke():  # one try, at the top
        if not works(hi):
            raise RuntimeError("the turn fails even with %d KB" % hi)
        return hi, None
    tried = {kb: works(kb) for kb in range(hi, lo_kb - 1, -STEP_KB)}
    good = [kb for kb, w in tried.items() if w]
    if not good:
        raise RuntimeError("the turn fails even with %d KB" % hi)
    lo = min(good)
    fails = [kb for kb, w in tried.items() if not w and kb > lo]
    top = lo
    lo -= STEP_KB
    while top - lo > 1:
        mid = (lo + top) // 2
        if works(mid):
            top = mid
        else:
            lo = mid
    return top, max(fails) if fails else None


def _kb(n):
    return "%.1f KB" % (n / 1024) if n is not None else "-"


def tables(n=None):
    turns = 10 if smoke() else n or SOAK_TURNS  # the table reads turns 10, 20 and 100
    t = Table("Smallest heap for the reference turn (16 KB prompt, 20 history messages, "
              "3 tools, HTTPS)",
              ["interpreter", "provider", "min heap KB (cold: imports + 1st turn)",
               "largest failing above it", "what fails 1 KB below",
               "live heap before 1st turn", "live after 1st turn", "live peak in 2nd turn",
               "TLS contexts made", "connections open at peak"])
    s = Table("Heap over %d turns (reference turn, HTTPS)" % turns,
              ["interpreter", "provider", "heap", "in use after 10 turns", "after 20",
               "after 100", "after %d" % turns, "largest free block after 10", "after 100",
               "after %d" % turns, "turns not as scripted"])
    with tempfile.TemporaryDirectory() as tmp:
        c = certs(tmp)
        for label, mp in interpreters():
            for kind in ("anthropic", "openai"):
                svc = llm.start(kind, c)
                try:
                    img, args, prep = prepare(svc, tmp, c["ca"], kind, "full", mp)
                    if prep["prompt_bytes"] < 16000 or prep["history"] != 20:
                        raise RuntimeError("prepare: %s" % prep)
                    why = {}
                    kb, fail = smallest(args, img, tmp, mp, HI_KB[label], LO_KB[label], why=why)
                    rc, recs, out = run(args, img, tmp, mp, turns=2, sample=True)
                    if rc or len(recs) != 2 or not ok(recs, (4, 3)):
                        raise RuntimeError("sampled run failed:\n" + out[-3000:])
                    first, second = recs
                    t.add(label, kind, kb, fail or "-", why.get(kb - 1, "-"), _kb(first["heap_base"]),
                          _kb(second["heap_base"]),
                          _kb(second["heap_peak"]), second.get("contexts", "-"),
                          second.get("open_peak", "-"))
                    rc, recs, out = run(args, img, tmp, mp, heap="%dk" % SOAK_KB[label],
                                        timeout=60 + turns, turns=turns, every=10, largest=True)
                    if rc or len(recs) != turns // 10:
                        raise RuntimeError("long run stopped:\n" + out[-3000:])
                    at = {r["turn"]: r for r in recs}
                    s.add(label, kind, "%d KB" % SOAK_KB[label], _kb(at[10]["heap_after"]),
                          _kb(at[min(20, turns)]["heap_after"]),
                          _kb(at[min(100, turns)]["heap_after"]), _kb(at[turns]["heap_after"]),
                          _kb(at[10]["largest"]), _kb(at[min(100, turns)]["largest"]),
                          _kb(at[turns]["largest"]), "%d of %d" % (recs[-1]["failed"], turns))
                finally:
                    svc.close()
    t.notes = ("min heap: every -X heapsize from %s down to %s KB in %d KB steps, then "
               "the step below the smallest success bisected to 1 KB; the turn must finish "
               "with 4 LLM calls, 3 tools, no error and no tool error (success is not "
               "monotonic: the next column is the largest size above it that failed; then what "
               "failed at 1 KB less: the turn's error or its first tool error). "
               "Live heap: gc.mem_alloc() after gc.collect(), before each "
               "turn and before/after each HTTP request (peak). The driver loads only the "
               "agent path (no gateway, Telegram or cron loop) plus the host's board and "
               "filesystem shims. TLS contexts: SSLContexts made in the process (roots "
               "parsed); connections: TCP connections open at once, at most. mbedTLS "
               "allocates outside the GC heap on both unix builds, as on the board."
               % (", ".join("%s %d KB" % kv for kv in HI_KB.items()),
                  ", ".join("%s %d" % kv for kv in LO_KB.items()), STEP_KB))
    s.notes = ("The same turn repeated (the 20 stored messages put back before each), at a "
               "fixed small heap; in use = gc.mem_alloc() after gc.collect() after the turn; "
               "largest free block = the biggest bytearray that can still be allocated. "
               "Between 10 and 20 turns the log's in-RAM ring (limits.LOG_RING lines) fills "
               "up; after that nothing grows.")
    return [t, s]


if __name__ == "__main__":
    from common import cli

    cli(tables)
