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
