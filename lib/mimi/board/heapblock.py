# The largest block the Python heap hands out now. MicroPython has no call for it
# (micropython.mem_info() prints it, to the console only), so it is found by trying.
# (Not board/heap.py: importing that would replace board.heap(), the function.)
import gc
from mimi import limits


def largest(cap=limits.HEAP_PROBE_MAX):
    """Bytes of the largest allocation that succeeds now, looked for up to `cap`
    (a turn's biggest single buffers are smaller). On the board a try that does not
    fit may first grow the heap into the IDF heap, as a turn's allocation would."""
    lo, hi = 0, min(cap, gc.mem_free())
    try:
        bytearray(hi)
        return hi
    except MemoryError:
        hi -= 1
    while hi - lo > limits.HEAP_PROBE_STEP:
        mid = (lo + hi + 1) // 2
        try:
            bytearray(mid)
            lo = mid
        except MemoryError:
            hi = mid - 1
    return lo
