# MimiClaw for MicroPython: a private AI assistant on an ESP32-S3.
import sys

VERSION = "0.1.0"


def drop(name):
    """Forget module mimi.<name> (dotted below the package): code used once or now
    and then (a boot step, a REPL command) gives its heap back once nothing else
    holds its functions. The next import loads it again."""
    full = "mimi." + name
    sys.modules.pop(full, None)
    parent, _, leaf = full.rpartition(".")
    parent = sys.modules.get(parent)
    if parent is not None and leaf in parent.__dict__:
        delattr(parent, leaf)


def run(names, fn, *args, **kw):
    """mimi.<first of names>.<fn>(*args, **kw), loaded for the call only: that module
    and the others named (space-separated: what it loads on the way) are dropped
    after it, each unless it was loaded before."""
    names = names.split()
    new = [n for n in names if "mimi." + n not in sys.modules]
    __import__("mimi." + names[0])
    try:
        return getattr(sys.modules["mimi." + names[0]], fn)(*args, **kw)
    finally:
        for n in new:
            drop(n)
        if new:
            # MicroPython allocates upwards from the last free block until a collection:
            # without one, what is made next (kept for long) lands above the code just
            # freed, and the heap ends up peppered, with no large block left for a turn
            import gc

            gc.collect()
