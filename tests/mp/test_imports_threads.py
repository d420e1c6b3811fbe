# Imports on one thread while the other looks names up, on the unix port (no GIL): a
# dict that outgrows its table is rebuilt in place, and a lookup meanwhile missed
# names that were there (the soak lost a message: `module 'mimi.channels' has no
# attribute ...` in the agent while the loop loaded a channel's code).
# board.before_threads() gives sys.modules and the packages their room first.
import sys
import time
import _thread
import mimi
from mimi import board, bus, channels, log

# modules the firmware loads for a moment and drops (mimi.run, channels.load, unload)
PASSING = ("console.heapinfo", "config.rules", "usage.report", "usage.file", "jsonscan", "devices.pins",
           "channels.telegram.format", "channels.feishu.format", "channels.websocket.chatpage", "net.wsproto")
ROUNDS = 300


def test_names_stay_found_while_the_other_thread_imports():
    board.before_threads()
    state = {"stop": False, "done": False, "lookups": 0}
    bad = []

    def reader():
        try:
            while not state["stop"] and not bad:
                if not callable(channels.get) or sys.modules.get("mimi.bus") is not bus \
                        or mimi.log is not log:
                    bad.append("a name was missing")
                state["lookups"] += 1
        except Exception as e:
            bad.append(repr(e))
        state["done"] = True

    _thread.start_new_thread(reader, ())
    try:
        for _ in range(ROUNDS):
            for name in PASSING:
                __import__("mimi." + name)
            for name in PASSING:
                mimi.drop(name)
            if bad:
                break
    finally:
        state["stop"] = True
        while not state["done"]:
            time.sleep_ms(5)
    assert not bad, bad
    assert state["lookups"] > ROUNDS


def test_two_threads_each_find_their_own_file_on_the_host_disk():
    # The tests import the firmware from the host's disk, mounted at /host once the
    # image is at / (board.mount_image). A VfsPosix with a root made every path in one
    # buffer it owns, and without a GIL the other thread's path took its place between
    # making and using it: an import opened the other thread's file or none (ENOENT in
    # the device table's two-thread test), or stat-ed a folder and made `json` an empty
    # package. Two threads stat files of different sizes: each must get its own.
    import os
    import support

    names = ("a", "a_longer_name")
    for size, name in enumerate(names, 1):
        with open(support.TMP + "/" + name, "w") as f:
            f.write("x" * size)
    bad, done = [], []

    def stat(size, path):
        try:
            for _ in range(20000):
                got = os.stat(path)[6]
                if got != size:
                    bad.append("%s: %d bytes" % (path, got))
        except OSError as e:
            bad.append("%s: %r" % (path, e))
        done.append(1)

    for size, name in enumerate(names, 1):
        _thread.start_new_thread(stat, (size, support.TMP + "/" + name))
    while len(done) < 2:
        time.sleep_ms(5)
    assert support.TMP.startswith("/host/")
    assert not bad, bad[:3]


def _both(drop, fn):
    """fn() on both threads at once, ROUNDS times, `drop` (modules, space-separated) let
    go before each -> what went wrong (each fn returns None when all was right)."""
    bad = []
    for _ in range(ROUNDS):
        for name in drop.split():
            mimi.drop(name)
        go, got = [], []

        def run():
            while not go:
                pass
            try:
                got.append(fn())
            except Exception as e:  # noqa: B902 - what it was is the test
                got.append(repr(e))

        _thread.start_new_thread(run, ())
        time.sleep_ms(1)
        go.append(1)
        run()
        while len(got) < 2:
            time.sleep_ms(1)
        bad.extend(g for g in got if g is not None)
        if bad:
            break
    return bad


def test_the_first_http_error_of_two_threads_is_one_class():
    # net/httperr.py is loaded by the first HTTP error raised or named (http.py's
    # __getattr__), on either thread: the agent's LLM call and the loop's poll fail
    # together when the network goes. Imported by both at once, one took the module
    # half-made ("no attribute Timeout") or each made its own (an `except
    # http.HTTPError` missed the other's errors). Dropped here to load it again.
    from mimi.net import http

    def fail():
        try:
            raise http._err("Timeout", "no answer")
        except http.HTTPError:
            return None
        except Exception as e:  # noqa: B902 - the other thread's class
            return repr(e)

    bad = _both("net.httperr", fail)
    assert not bad, bad


def test_a_body_part_made_on_both_threads_at_once():
    # net/httpbody.py: loaded by the agent's request (a Region of the spilled prompt)
    # and the loop's (a long reply's part in Pieces, a chart's file), and let go by the
    # agent after a turn on a short heap: the loop took it half-made ("can't import name")
    from mimi.net import http

    def part():
        return None if http.Region("/x", 0, 1).n == 1 and http.Pieces(1, None).n == 1 else "wrong"

    bad = _both("net.httpbody", part)
    assert not bad, bad


def _device_history(history):
    """The agent's device_history: the history's modules loaded for the answer and
    dropped after (mimi.run) -> None, or what went wrong."""
    out = mimi.run(history, "answer", "nosuch", 24)
    return None if out.startswith("Error: no history") else out


def test_a_chart_and_the_agent_load_the_history_at_once():
    # services/history: the agent's device_history loads its modules for the answer and
    # drops them after (mimi.run), while the loop's /chart loads query.py and chart.py
    # (channels/charts.py). With a plain import there, the loop took query or store
    # half-made from the agent ("no attribute ...", said as "could not be drawn"), or the
    # agent took them half-made from the loop.
    import asyncio
    from mimi.channels import charts

    board.before_threads()
    main = _thread.get_ident()
    history = "services.history.summary services.history.query services.history.store services.history"

    def ask():
        if _thread.get_ident() != main:
            return _device_history(history)
        said = []

        async def say(why):
            said.append(why)

        asyncio.run(charts.chart("/chart nosuch", None, say))
        return None if len(said) == 1 and said[0].startswith("No history") else repr(said)

    bad = _both("services.history.chart " + history, ask)
    assert not bad, bad


def test_a_chart_made_while_the_agent_loads_the_history():
    # services/history/chart.py: a Chart (the loop's /chart) loads query.py and store.py
    # as it is made, after channels/charts.py has loaded chart.py, while the agent's
    # device_history loads them for its answer and drops them after (mimi.run). With a
    # plain import in Chart(), the loop took query or store half-made from the agent
    # ("no attribute span_of"), or the agent took them half-made from the loop.
    board.before_threads()
    main = _thread.get_ident()
    history = "services.history.summary services.history.query services.history.store"

    def ask():
        if _thread.get_ident() != main:
            return _device_history(history)
        c = mimi.load("mimi.services.history.chart").Chart("nosuch", 24, now=1767225600)
        return None if c.marks == [] else repr(c.marks)

    bad = _both(history, ask)
    assert not bad, bad


def test_the_page_and_the_agent_sum_up_the_history_at_once():
    # services/history/summary.py: the chat page's chart (the loop: gateway.chart, page())
    # and the agent's device_history (answer()) each load summary, query and store for
    # the call and drop those they loaded after (mimi.run). When query.py was found by
    # summary's own import of it in a function (request, units), it had gone with the
    # other thread's drop and was imported again, without the flash's lock, while the
    # other thread imported it under the lock: one of them took it half-made.
    board.before_threads()
    main = _thread.get_ident()
    history = "services.history.summary services.history.query services.history.store services.history"

    def ask():
        bad = None
        for _ in range(20):
            if _thread.get_ident() != main:
                out = mimi.run(history, "answer", "nosuch", 24)
                ok = out.startswith("Error: no history")
            else:
                out = mimi.run(history, "page", "/chart nosuch")
                ok = '"type": "error"' in out and '"content": "No history' in out
            bad = bad or (None if ok else out)
        return bad

    bad = _both(history, ask)
    assert not bad, bad
