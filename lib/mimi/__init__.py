# MimiClaw for MicroPython: a private AI assistant on an ESP32-S3.
import sys

VERSION = "0.1.0"


_short = False
closers = []  # names (mimi.x) of modules whose flush() saves what waits in RAM (the history's readings): run by close()


def close():
    """Before a reset (board.reset()) and when the loop ends: what waits in RAM is written."""
    for c in closers:  # (a module's own __name__, a name interned anyway: no string or tuple kept)
        try:
            run(c[5:], "flush")  # (loaded for it, as it was not)
        except Exception as e:  # a reset must happen whatever one of them does
            print("close:", c, e)


def short(measure=False):
    """Is the heap short (less than limits.HEAP_SHORT free)? Then a turn drops code
    after use and spills its escaped prompt to the flash; with room (PSRAM), both stay
    and no turn pays an import or a flash write for it. Measured when asked (the agent
    does at the start and end of a turn), else the last answer: gc.mem_free() counts
    the whole heap's blocks, ~1 ms for 16 MB. Garbage counts as used until collected,
    so a heap that looks short is collected and measured again: else the answer turned
    on how much garbage the turn happened to leave, and a heap with room dropped the
    LLM connection at random (a TLS handshake more every few turns)."""
    global _short
    if measure:
        import gc
        from mimi import limits

        _short = gc.mem_free() < limits.HEAP_SHORT
        if _short:
            gc.collect()
            _short = gc.mem_free() < limits.HEAP_SHORT
    return _short


_spare = None


def spare(keep=True):
    """limits.HEAP_SPARE bytes kept aside for telling a person that memory ran out:
    keep takes them (at boot, and after a recovery) when the heap has them; keep=False
    gives them back and collects (a MemoryError happened: the apology is made in their
    room)."""
    global _spare
    if not keep:
        _spare = None
        import gc

        gc.collect()
    elif _spare is None:
        from mimi import limits

        try:
            _spare = bytearray(limits.HEAP_SPARE)
        except MemoryError:
            pass


# Code loaded and dropped by both threads (the agent's and the loop's) is imported under
# the flash's lock (fs.lock, reentrant): MicroPython has no import lock, and a module
# being imported sits in sys.modules half-made (the unix port runs both threads at once;
# the board's GIL can switch in the middle of an import too), where the other thread took
# it ("no attribute"). The flash's lock, not one of its own: the host's LittleFS takes it
# for every read of the import, and a second lock taken in the other order by a thread
# that writes a file and loads code hung both threads.
def load(name):
    """Module `name` (dotted, whole), imported if it is not, whole when returned."""
    from mimi import fs

    with fs.lock:
        __import__(name)
        return sys.modules[name]


def unload(name):
    """Forget module `name` (stateless ones only): its code is freed once nothing else
    holds it, and an import loads it again. For code a turn needs only for a moment."""
    from mimi import fs

    with fs.lock:
        if sys.modules.pop(name, None) is not None:
            pkg, _, leaf = name.rpartition(".")
            try:
                delattr(sys.modules[pkg], leaf)
            except (KeyError, AttributeError):
                pass


def drop(name):
    """unload("mimi." + name): for code used once or now and then (a boot step, a REPL
    command, a channel's rarely used part)."""
    unload("mimi." + name)


def run(names, fn, *args, **kw):
    """mimi.<first of names>.<fn>(*args, **kw), loaded for the call only: that module
    and the others named (space-separated: what it loads on the way) are dropped
    after it, each unless it was loaded before."""
    names = names.split()
    from mimi import fs

    with fs.lock:
        new = [n for n in names if "mimi." + n not in sys.modules]
        m = load("mimi." + names[0])  # (the lock again: it is reentrant)
    try:
        return getattr(m, fn)(*args, **kw)
    finally:
        for n in new:
            drop(n)
        if new:
            # MicroPython allocates upwards from the last free block until a collection:
            # without one, what is made next (kept for long) lands above the code just
            # freed, and the heap ends up peppered, with no large block left for a turn
            import gc

            gc.collect()
