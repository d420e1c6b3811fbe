# heap_info(), the REPL's memory report, in a module of its own: the heap in use it
# prints then counts the firmware and the console, not the REPL commands' bodies
# (console/commands.py, 9 KB on 32-bit, loaded while one runs).
from mimi import board, limits


def heap_info():
    """What is left for the next turn: the Python heap (free, and its largest free
    block: a turn's biggest single piece is a tool's output, TOOL_OUTPUT_MAX), the IDF
    heap on the board (internal RAM for WiFi and TLS, PSRAM), flash."""
    h = board.heap()
    big = h["largest"]
    print("heap free      %d bytes (in use %d)" % (h["free"], h["alloc"]))
    print("largest block  %s%d bytes%s" % (
        "at least " if big >= limits.HEAP_PROBE_MAX else "", big,
        "" if big >= limits.TOOL_OUTPUT_MAX else
        "  LOW: a turn needs %d in one piece; session_clear() or restart()" % limits.TOOL_OUTPUT_MAX))
    for name, label in (("internal", "internal RAM"), ("psram", "PSRAM")):
        if name + "_free" in h:
            print("%-14s free %d, largest block %d, lowest since boot %d" % (
                label, h[name + "_free"], h[name + "_largest"], h[name + "_min_free"]))
    try:
        f = board.fs_info()
        print("%-14s %d of %d bytes free" % ("flash", f["free"], f["total"]))
    except OSError:
        pass
