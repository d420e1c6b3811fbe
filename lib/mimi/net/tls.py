# TLS for every HTTPS client of the firmware (LLM, Telegram, web search, OTA):
# - ONE client SSLContext per process: the shipped roots (limits.CA_BUNDLE) and the
#   user's own (setting `ca_file`) are parsed once and shared; mbedTLS keeps each
#   parsed root in C memory (~54 KB for a whole bundle on the board), so a context
#   per client cost that again and again.
# - Roots loaded and skipped are logged with the reason. On the board a root that
#   fails to parse for lack of memory raises the same ValueError as a bad one: a
#   failed root is tried again after gc.collect(), and when memory is short the whole
#   context fails instead of silently losing roots. A context that failed is tried
#   again after limits.TLS_RETRY_S or when a root file or the setting changes, never
#   on every request. A bad or huge `ca_file` never costs the shipped roots.
#   That code (net/tlsroots.py) is loaded while a context is made and dropped after.
# - At most one TLS connection where the board cannot afford two: while the agent's
#   LLM call is in flight (`claim()`), a client on the loop (Telegram's long poll)
#   asks `must_yield()` and closes or does not open its connection. Decided by the C
#   heap's largest free block at that moment (board.c_heap_largest()), so a board with
#   PSRAM never waits.
# (The module's table holds 23 names, kept below the 29 slots one more would cost a
# frozen board's heap with Telegram, +48 B: what a function alone needs it imports.)
import _thread
from mimi import limits

_lock = _thread.allocate_lock()
_contexts = {}  # key (a tuple: the shipped roots + ca_file) -> SSLContext, or why it failed
_watchers = []  # fn() called when an LLM call starts or ends
made = 0  # SSLContexts made (roots parsed)
failed = 0  # ... that could not be made
handshakes = 0
open_now = 0  # TLS connections open
open_peak = 0
busy = 0  # LLM calls in flight (claim())


def _stamp(path):
    import os

    try:
        st = os.stat(path)
        return st[6], st[8]  # size, mtime
    except (OSError, TypeError):
        return None


def context(ca=None):
    """The shared client context (None: the shipped roots and the `ca_file` setting), or
    one for a given root file or PEM/DER bytes (tests, a server with its own CA); made
    once and kept. TLSFailure when there are no roots or no memory for them; that too
    is kept, for limits.TLS_RETRY_S or until the setting or a root file changes."""
    global made, failed
    import time

    key = ca if ca is None or isinstance(ca, str) else bytes(ca)
    if ca is None:  # a changed setting or root file (OTA, the user's) makes a new one
        from mimi.config.settings import cfg

        key = (None, cfg.get("ca_file"), _stamp(limits.CA_BUNDLE), _stamp(cfg.get("ca_file")))
    with _lock:
        ctx = _contexts.get(key)
        if isinstance(ctx, tuple):  # (error class, message, when) of a failed one:
            if time.ticks_diff(time.ticks_ms(), ctx[2]) < limits.TLS_RETRY_S * 1000:
                raise ctx[0](ctx[1])  # not made again on every request
            ctx = None
        if ctx is None:
            if ca is None:  # the old shared context goes with the old setting
                for k in [k for k in _contexts if isinstance(k, tuple)]:
                    del _contexts[k]
            try:
                import mimi

                ctx = mimi.run("net.tlsroots", "make", ca)
            except Exception as e:
                failed += 1
                _contexts[key] = (type(e), str(e), time.ticks_ms())
                raise
            _contexts[key] = ctx
            made += 1
        return ctx


def wrap(sock, host, ca=None):
    """sock wrapped for a verified connection to host (the handshake runs on the first
    read or write); counted until closed()."""
    global handshakes, open_now, open_peak
    s = context(ca).wrap_socket(sock, server_hostname=host, do_handshake_on_connect=False)
    with _lock:
        handshakes += 1
        open_now += 1
        open_peak = max(open_peak, open_now)
    return s


def closed():
    global open_now
    with _lock:
        open_now -= 1


def stats():
    return {"contexts": made, "failed": failed, "handshakes": handshakes, "open": open_now, "open_peak": open_peak}


def tight():
    """True when the board cannot afford one more TLS connection now."""
    from mimi import board

    room = board.c_heap_largest()
    return room is not None and room < limits.TLS_CONN_ROOM


def must_yield():
    """For clients on the loop: close (or don't open) a TLS connection now, the agent's
    LLM call needs the memory."""
    return busy > 0 and tight()


def watch(fn):
    """fn() is called (from the agent thread) when an LLM call starts or ends."""
    if fn not in _watchers:
        _watchers.append(fn)


def claim(client=None):
    """Before an LLM request (the agent thread's; release() after it, whatever happened):
    clients on the loop yield while it runs (when memory is tight), and it waits a little
    for their connections to close (not for `client`'s own). (Two functions, not a
    `with` class: its class held 0.2 KB of a frozen board's heap from boot.)"""
    global busy
    import time

    mine = 1 if getattr(client, "_wrapped", False) else 0
    with _lock:
        busy += 1
    for fn in _watchers:
        fn()
    waited = 0
    while open_now > mine and tight() and waited < limits.TLS_YIELD_WAIT_MS:
        time.sleep_ms(limits.TLS_YIELD_POLL_MS)
        waited += limits.TLS_YIELD_POLL_MS


def release():
    """After the LLM request that claim() announced."""
    global busy
    with _lock:
        busy -= 1
    for fn in _watchers:
        fn()
