# MicroPython side of bench/turn.py and bench/minheap.py: full agent turns through
# the firmware's own worker.run_message() (system prompt, session load, provider,
# HTTP client, ReAct loop, real tools, session save) on a board image.
#   micropython bench/mp/turn.py ARGS.json   ({"image":..., "lib":..., "mode": "prepare"|"turns", ...})
# prepare: install defaults, settings, and the workload's files: "full" = a 16 KB system
#   prompt (oversized SOUL/USER/MEMORY) and 20 stored history messages of ~520 bytes;
#   "peer" = default SOUL/USER and skills, a 4 KB MEMORY.md, 3 daily notes and 20 stored
#   history messages of 300 characters.
# turns: run "turns" turns; one "BENCH {json}" line per turn (or, with "every", one
#   line every that many turns). "script": the fake LLM's replies, queued again before
#   every turn over its plain-HTTP control port (so a long run keeps its requests
#   list short). "alloc": bytes allocated by the turn, measured with the GC off.
#   "largest": also the largest block still allocatable after the turn. "netwait": the
#   time the HTTP client waited on its socket ("net_us"). "posix": a host directory;
#   the image's files are copied there and it is mounted at / instead (no flash).
#   "flash": the flash's block reads per turn, by phase, operation and path
#   (bench/mp/flashcount.py), in the record's "flash".
import sys
import json

with open(sys.argv[1]) as _f:  # a JSON file: long argv items abort the unix port
    A = json.load(_f)
sys.path[:] = [".frozen", A["lib"]]  # a frozen mimi first, as below (and on the board)
from mimi import board  # noqa: E402

_blocks = board.image_blocks(A["image"])
board.mount_image(A["image"])
if not A.get("locked_vfs"):
    # One thread here: mount VfsLfs2 itself, as boot.py does on the board (a C file system,
    # made whole per call by the GIL). The host's LockedVfs, a Python wrapper that takes
    # fs.lock around every call for the unix port's free threads, makes each read of
    # an import a Python call, whose garbage shreds the heap between module objects.
    import vfs

    vfs.umount("/")
    from mimi.board.host_vfs import FileBlockDev

    _dev = FileBlockDev(board.host_path(A["image"]), _blocks)
    if A.get("flash"):  # every block read counted and charged to its cause
        sys.path.append(board.host_path(A["mp_dir"]))
        import flashcount

        flashcount.mount(_dev)
    else:
        from mimi.flashmount import lfs

        vfs.mount(lfs(_dev), "/")
    from mimi import unload

    unload("mimi.board.host_vfs")
if A.get("posix"):
    # The peer's conditions: the files on the host's own disk (VfsPosix) instead of the
    # simulated flash. The image's whole tree (code included) is copied to that
    # directory, which then replaces the image at /.
    import os
    import vfs

    def _copy(src, dst):
        for name, kind, *_ in os.ilistdir(src):
            s, d = src.rstrip("/") + "/" + name, dst + "/" + name
            if s == board.HOST_MOUNT:
                continue
            if kind == 0x4000:
                os.mkdir(d)
                _copy(s, d)
            else:
                with open(s, "rb") as f, open(d, "wb") as g:
                    g.write(f.read())

    class _Dir(vfs.VfsPosix):
        # VfsPosix(root).rename builds both paths in one buffer: old is lost, new is
        # renamed to itself. A VfsPosix without a root takes the paths as they are.
        def rename(self, a, b, _fs=vfs.VfsPosix()):
            _fs.rename(A["posix"] + a, A["posix"] + b)

    _copy("/", board.host_path(A["posix"]))
    vfs.umount("/")
    vfs.mount(_Dir(A["posix"]), "/")
    os.chdir("/")
sys.path[:] = ["", ".frozen", "/lib"]
import gc  # noqa: E402
import time  # noqa: E402
from mimi import bus, fs  # noqa: E402
from mimi.config import settings as config  # noqa: E402

CHAT = "bench"
TEXT = {"peer": "Look at my files, read my memory and note what you found."}.get(
    A.get("workload"), "What time is it, and what is in my memory file?")
SEED = "/bench_session.jsonl"  # the stored messages, put back before every turn


def out(rec):
    print("BENCH " + json.dumps(rec))


def _seed():
    # the session file's path without importing sessions (the turn unloads it)
    fs.copy_atomic(SEED, "/spiffs/sessions/%s.jsonl" % bus.session_key("websocket", CHAT))


def _control(path, body):
    """POST to the fake LLM's plain-HTTP control port (raw socket, like tests/mp/llmfake.py)."""
    import socket

    host, port = A["control"].split("://", 1)[1].split(":")
    s = socket.socket()
    try:
        s.connect(socket.getaddrinfo(host, int(port))[0][-1])
        s.write(("POST %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nContent-Length: %d"
                 "\r\n\r\n" % (path, host, len(body))).encode() + body)
        while s.read(512):
            pass
    finally:
        s.close()


def largest():
    """The largest block still allocatable (bytes, to 64)."""
    gc.collect()
    lo, hi = 0, gc.mem_free() + 64
    while hi - lo > 64:
        mid = (lo + hi) // 2 // 64 * 64
        try:
            b = bytearray(mid)
            b = None  # noqa: F841
            lo = mid
        except MemoryError:
            hi = mid
    return lo


def _counts():
    """TLS contexts made, handshakes and connections so far (mimi.net.tls.stats())."""
    try:
        from mimi.net import tls
    except ImportError:  # before net/tls.py: the cached provider's client
        from mimi.llm import provider

        c = provider._cached[1].client if provider._cached else None
        return {"handshakes": c.handshakes if c else 0, "connects": c.connects if c else 0}
    return tls.stats()


def turns():
    from mimi.agent import worker, react
    from mimi.net import http

    config.cfg.load()
    if "stream" in A:  # answers streamed (the default) or whole
        config.cfg.set("stream", A["stream"])
    # No loop here: what the agent puts on bus.outbound (the answer so far while it
    # streams) is taken at once, as the dispatcher does, not kept in the queue.
    bus.outbound.put = lambda msg: True
    seen = []
    run_turn = react.run_turn

    def spy(*a, **kw):
        t = run_turn(*a, **kw)
        seen.append(t)
        return t

    react.run_turn = spy
    from mimi.tools.registry import Registry

    tool_errors = [0, None]  # count, the first one's text
    call = Registry.call

    def counted(self, *a, **kw):  # a tool that failed (out of memory...) fails the turn here
        out = call(self, *a, **kw)
        if isinstance(out, str) and out.startswith("Error"):  # (a text in pieces: a file read)
            tool_errors[0] += 1
            tool_errors[1] = tool_errors[1] or "%s: %s" % (a[0] if a else "?", out[:120])
        return out

    Registry.call = counted
    if A.get("close"):  # a new connection (and TLS handshake) for every LLM call
        from mimi.llm.anthropic import Anthropic
        from mimi.llm.openai import OpenAI

        for cls in (Anthropic, OpenAI):
            h = cls.headers
            cls.headers = lambda self, h=h: dict(h(self), Connection="close")
    samples = []
    if A.get("sample"):  # live heap (after gc.collect) around every HTTP request
        req = http.Client.request

        def sampled(self, *a, **kw):
            gc.collect()
            samples.append(gc.mem_alloc())
            r = req(self, *a, **kw)
            gc.collect()
            samples.append(gc.mem_alloc())
            return r

        http.Client.request = sampled
    net = [0]
    if A.get("netwait"):  # time spent waiting on sockets (the server's share of a turn)
        wait = http.Client._wait

        def timed(self, *a):
            t0 = time.ticks_us()
            try:
                return wait(self, *a)
            finally:
                net[0] += time.ticks_diff(time.ticks_us(), t0)

        http.Client._wait = timed
    fc = sys.modules.get("flashcount")
    if fc:  # the turn's phases, for the reads they make
        from mimi.tools.registry import Registry as R
        from mimi.memory import sessions

        fc.mark(worker, "_system_prompt", "prompt")
        fc.mark(sessions, "load", "session load")
        fc.mark(sessions, "flush", "session save")
        fc.mark(http.Client, "request", "LLM call")
        fc.mark(R, "call", "tools")
    script = json.dumps(A["script"]).encode() if A.get("script") else None
    every = A.get("every", 1)
    failed = 0  # turns so far that did not finish as scripted
    for i in range(A["turns"]):
        if script:
            _control("/_reset", b"{}")
            _control("/_script", script)
        chat = "fresh%d" % i
        if A.get("workload") in ("full", "peer"):  # the same stored messages every turn
            chat = CHAT
            _seed()
        msg = bus.Msg("websocket", chat, TEXT)
        gc.collect()
        base = gc.mem_alloc()
        del samples[:]
        del seen[:]
        net[0] = tool_errors[0] = 0
        tool_errors[1] = None
        if A.get("alloc"):
            gc.disable()
        if fc:
            fc.take()  # (the bench's own reads: the stored messages put back)
            fc.phase("turn")
        t0 = time.ticks_us()
        reply = worker.run_message(msg)
        us = time.ticks_diff(time.ticks_us(), t0)
        flash = fc.take() if fc else None
        alloc = gc.mem_alloc() - base
        gc.enable()
        t = seen[-1] if seen else None
        if not t or t.error or tool_errors[0] or (t.llm_calls, t.tool_calls) != tuple(
                A.get("calls", (4, 3))):
            failed += 1
        if (i + 1) % every and i + 1 != A["turns"]:
            continue
        gc.collect()
        rec = {"turn": i + 1, "us": us, "reply": reply[:60],
               "error": t.error if t else "no turn",
               "llm_calls": t.llm_calls if t else 0, "tool_calls": t.tool_calls if t else 0,
               "usage": t.usage if t else None,
               "heap_base": base, "heap_after": gc.mem_alloc(),
               "heap_peak": max(samples) if samples else None,
               "heap_samples": list(samples), "alloc": alloc if A.get("alloc") else None, "net_us": net[0],
               "tool_errors": tool_errors[0], "tool_error": tool_errors[1], "failed": failed,
               "flash": flash,
               "heap_total": gc.mem_alloc() + gc.mem_free()}
        rec.update(_counts())
        if A.get("largest"):
            rec["largest"] = largest()
        out(rec)


if A["mode"] == "prepare":  # in a module of its own: the turns don't load its code
    sys.path.append(board.host_path(A["mp_dir"]))
    import turnprep

    turnprep.prepare(A, out, _seed)
else:
    turns()
