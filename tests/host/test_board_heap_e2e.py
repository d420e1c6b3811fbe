"""Issue 12's proof on the board's word size: the whole firmware (gateway, Telegram on
the fake Bot API, a cron job, heartbeat, agent thread, console) on the 32-bit
MicroPython capped at a board without PSRAM's heap answers a WebSocket turn and a
Telegram turn, each with the full 16 KB system prompt, 20 stored messages and 3 tools
(get_current_time, read_file, web_search on the fake Tavily), the LLM over HTTPS
(the fake's test CA trusted through the `ca_file` setting), then a device turn: four
devices attached (SHT3x, button, relay, RGB LED; issue 23), the SHT3x read. tests/wholefw.py has the
workload; bench/longrun.py measures the smallest heap where it still passes. Both runs
have issue 24's rules and logging at rest as well (wholefw.prepare(body=True)).

Issue 12's target is 192 KB, issue 26's 200 KB for the stock .mpy build: measured
(docs/benchmarks.md §23) the conversation passes every run at 200 KB with the body and
without it (196 KB fails some runs, 192 KB every run, and every heap above passes). The
test runs one 16 KB step above the target, plus the simulated hardware's share of the heap
(wholefw.HOST_HW_KB, measured by bench/hostshare.py: the board has none of it).

With the package frozen into the interpreter (the 32-bit unix port built with
firmware/manifest_unix.py by tools/mpbuild.py, as `make test` does; MP32_FROZEN=path names
another; docs/benchmarks.md §3c), the same proof at 192 KB itself, and at FROZEN_SMALL_HEAP.
The conversation: a WebSocket turn, a Telegram turn with a 10 KB answer (three messages),
a Telegram turn with that answer in its history, and the device turn."""
import pytest

import wholefw
from conftest import mp32_bin, mp32_frozen_bin
from simproc import Sim

HEAP = "216k"  # + HOST_HW_KB: 200 KB passes every run, 196 KB some (docs/benchmarks.md §23)
FROZEN_HEAP = "192k"  # issue 12's target
FROZEN_SMALL_HEAP = "128k"  # issue 26's 128 KB: 10 of 10 at 128 and at 120 KB, 9 of 10 at 116, with the
# temp path's length varied, since the long answer waits on the flash while it streams and its pieces go
# as its Telegram parts do (docs/benchmarks.md §19, "the 128 KB proof")


def test_whole_firmware_answers_in_a_board_sized_heap(tmp_path, fake_anthropic, fake_telegram,
                                                      fake_search):
    mp32, why = mp32_bin()
    if not mp32:
        pytest.skip("needs the 32-bit MicroPython (the board's object sizes): %s" % why)
    whole_firmware_turns(tmp_path, fake_anthropic, fake_telegram, fake_search, mp32, HEAP)


@pytest.mark.parametrize("heap", [FROZEN_HEAP, FROZEN_SMALL_HEAP])
def test_frozen_whole_firmware_answers(tmp_path, fake_anthropic, fake_telegram, fake_search, heap):
    mp, why = mp32_frozen_bin()
    if not mp:
        pytest.skip("needs the frozen 32-bit MicroPython: %s" % why)
    whole_firmware_turns(tmp_path, fake_anthropic, fake_telegram, fake_search, mp, heap, frozen=True)


def whole_firmware_turns(tmp_path, llm, tg, fake_search, mp, heap, frozen=False, body=True):
    # with issue 24's body at rest as well (the SHT3x logged every minute, three rules
    # checked every second beside the turns). On the .mpy build the body's names (every
    # name of a .mpy that loads is kept in MicroPython's qstr pool) took the firmware past
    # its 7th pool and a new one of 18 KB, and it failed at 272 + 32 KB: now within it
    # (docs/benchmarks.md §14)
    wholefw.prepare(tmp_path, llm["ca"], body=body)
    if not frozen:  # frozen, the simulated hardware's code is in ROM too
        heap = "%dk" % (int(heap[:-1]) + wholefw.HOST_HW_KB)
    with Sim.start(tmp_path, *wholefw.settings(llm, tg), console=True, heap=heap,
                   micropython=mp) as sim:
        wholefw.ready(sim, fake_search)
        wholefw.attach_parts(sim)
        ws = wholefw.ws_turn(sim, llm)
        long = wholefw.tg_long_turn(tg, llm)
        tg_text = wholefw.tg_turn(tg, llm)
        dev = wholefw.device_turn(sim, llm)
        info = wholefw.heap(sim)
        if frozen:  # the firmware runs the frozen copy, not the image's /lib
            sim.send("import mimi.app; print('app from', mimi.app.__file__)\r")
            assert sim.wait_for(r"app from (\S+)").group(1) == "mimi/app.py"
        out = sim.output()
    assert info["free"] + info["alloc"] <= int(heap[:-1]) * 1024, info  # the cap holds
    assert info["contexts"] == 1, info  # one TLS context for both turns
    assert ws == wholefw.answer("ws"), out[-4000:]
    assert len(long) >= 3 and all(len(t) <= 4096 for t in long), (long, out[-4000:])
    assert [w for t in long for w in wholefw.words(t)] == wholefw.words(wholefw.long_answer("long"))
    assert tg_text == wholefw.answer("tg"), out[-4000:]
    assert dev == wholefw.answer("dev"), out[-4000:]
    assert "MemoryError" not in out and "Traceback" not in out, out[-4000:]
    # the rules and the logging ran beside the turns
    assert not body or "I rules: running: 3 rule(s), 1 device(s) logging" in out and "a pass failed" not in out, out[-4000:]
    reqs = llm.requests
    assert len(reqs) == 14 and llm.violations == []
    assert wholefw.DEVICE_READING in str(reqs[13]["body"]["messages"][-1])  # the device turn's read
    assert "## Devices" in str(reqs[12]["body"]["system"])
    for first in (reqs[0], reqs[4], reqs[8]):  # each turn: the full prompt and 20 stored messages
        body = first["body"]
        system = "".join(b["text"] for b in body["system"]) if isinstance(body["system"], list) \
            else body["system"]
        assert len(system.encode()) > 15 * 1024, len(system.encode())
        assert len(body["messages"]) == wholefw.HISTORY + 1
    for last in (reqs[3], reqs[7], reqs[11]):  # the three tools really ran
        results = str(last["body"]["messages"][-6:])
        assert "Tavily result 1 for Lisbon weather" in results, results[:2000]
        assert "keep replies brief" in results and "UTC" in results, results[:2000]
    assert llm.snapshot()["handshakes"] >= 1  # over TLS
