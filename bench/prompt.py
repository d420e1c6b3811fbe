"""System prompt build time and size (mimi.agent.context.encoded: the prompt escaped for
the request in pieces, as a turn builds it) with the
default files and with oversized ones.

  .venv/bin/python bench/prompt.py [-n RUNS]
"""
import tempfile
from pathlib import Path

from common import Table, cli, make_image, mp_args, run_mp


def tables(n=None):
    n = n or 21
    with tempfile.TemporaryDirectory() as tmp:
        img = make_image(Path(tmp) / "fs.img")
        rc, recs, out = run_mp("storage.py", mp_args(img, mode="prompt", n=n))
        if rc or len(recs) != 2:
            raise RuntimeError(out[-3000:])
    t = Table("System prompt build (median of %d)" % n,
              ["files", "prompt bytes", "fixed instructions bytes",
               "cache-marked bytes (Anthropic)", "build ms",
               "allocated per build", "of which skills.summary()", "held by the result"])
    for r in recs:
        t.add(r["case"], r["bytes"], r["fixed"], r["marked"], r["us"] / 1000,
              "%.1f KB" % (r["churn"] / 1024), "%.1f KB" % (r["parts"]["skills"] / 1024),
              "%.1f KB" % (r["held"] / 1024))
    t.notes = ("cap: limits.PROMPT_MAX = 16384 bytes. cache-marked = what the Anthropic "
               "provider marks for the prompt cache (the fixed block and the sections: all "
               "but the per-turn context). allocated = gc.mem_alloc() growth with the GC off "
               "during one build; held = the escaped pieces kept for the turn (in RAM; with a "
               "short heap they go to the flash instead).")
    return [t]


if __name__ == "__main__":
    cli(tables)
