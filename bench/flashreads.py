"""Flash block reads per turn, by cause: the simulated LittleFS flash (VfsLfs2 on the
image, as the board mounts it, without the host's locked wrapper) counts every
readblocks() call, each one flash read on the board (bench/mp/flashcount.py charges
it to the turn's phase, the file-system operation and its path).

  .venv/bin/python bench/flashreads.py [-n TURNS]

Two turns: the reference turn of §3 (Anthropic, 16 KB prompt, 20 stored messages,
get_current_time, list_dir, read_file) and the peer's turn of §2a (OpenAI: list_dir,
read_file, write_file into /spiffs/memory/): the cold turn, and the median, fewest and
most of n warm turns; each cause's median over the warm turns.
"""
import tempfile

from common import Table, certs, cli, interpreters, median
from fakes import llm
from turn import PEER_SCRIPT, SCRIPT

CAUSES = ("imports (sys.path searched, modules read)", "system prompt files",
          "session load", "tools", "session save", "LLM calls (spilled prompt, history)",
          "other")


def cause(phase, op, path):
    if path.startswith("/lib") or path.endswith((".py", ".mpy")) or not path.startswith("/"):
        return CAUSES[0]  # (a module looked for in "" of sys.path: a relative path)
    if phase == "prompt":
        return CAUSES[1]
    for c in CAUSES[2:6]:
        if c.startswith(phase):
            return c
    return CAUSES[6]


def counted(kind, workload, script, mp, n):
    """{cause: reads} of the last warm turn, its total, the first warm turn's total and
    the heaviest paths [(reads, phase op path)]."""
    import minheap

    with tempfile.TemporaryDirectory() as tmp:
        c = certs(tmp)
        svc = llm.start(kind, c)
        try:
            img, args, _ = minheap.prepare(svc, tmp, c["ca"], kind, workload, mp, script)
            svc.reset()
            svc.script(*(script * (n + 1)))
            rc, recs, out = minheap.run(dict(args, script=None), img, tmp, mp, turns=n + 1,
                                        flash=True)
        finally:
            svc.close()
    if rc or len(recs) != n + 1 or not minheap.ok(recs, (4, 3)):
        raise RuntimeError("flash turns failed:\n" + out[-3000:])
    warm = [r["flash"] for r in recs[1:]] or [recs[0]["flash"]]
    by = {c: median([sum(k for ph, op, path, k in t if cause(ph, op, path) == c) for t in warm])
          for c in CAUSES}
    paths = {}
    for t in warm:
        for phase, op, path, k in t:
            what = "%s: %s %s" % (phase, op, path)
            paths[what] = paths.get(what, 0) + k
    top = sorted(((k / len(warm), what) for what, k in paths.items()), reverse=True)
    totals = [sum(x[3] for x in r["flash"]) for r in recs]
    return by, totals, top


def tables(n=None):
    n = n or 10
    t = Table("Flash block reads per turn, by cause (the simulated LittleFS, %d warm turns)" % n,
              ["interpreter", "turn", "cold turn", "warm: median", "fewest", "most"]
              + ["%s (median)" % c for c in CAUSES])
    heavy = []
    for label, mp in interpreters()[:1]:  # (the counts do not depend on the word size)
        for name, kind, workload, script in (("reference (§3)", "anthropic", "full", SCRIPT),
                                             ("peer (§2a)", "openai", "peer", PEER_SCRIPT)):
            by, totals, top = counted(kind, workload, script, mp, n)
            warm = totals[1:] or totals
            t.add(label, name, totals[0], median(warm), min(warm), max(warm),
                  *[by[c] for c in CAUSES])
            heavy.append("%s, %s: %s" % (label, name, "; ".join(
                "%s %.0f" % (what, k) for k, what in top[:8])))
    t.notes = ("readblocks() calls of the LittleFS block device (VfsLfs2 with MicroPython's "
               "defaults: 32-byte reads, 128-byte cache) during worker.run_message(); cold = "
               "the first turn, imports included; warm = the others (the peer's turn writes "
               "into /spiffs/memory/ each time: that folder's metadata log grows until "
               "LittleFS compacts it, so its turns differ). The heaviest per warm turn "
               "(phase: operation path, mean): " + " | ".join(heavy))
    return [t]


if __name__ == "__main__":
    cli(tables)
