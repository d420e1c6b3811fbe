"""Short of memory, nobody is left waiting without a word (issue 25, item 13): the whole
firmware in tools/sim under a heap too small for what it is asked, through its real
doors (WebSocket, Telegram on the fake Bot API, the console), with tests/wholefw.py's
workload. Whatever finds no room is freed and tried again where that cannot send twice;
failing that the person gets a short apology (its room kept aside: mimi.spare()), the
Telegram poller goes on taking updates (one it cannot read is skipped after a bounded
number of polls and its sender told), and a WebSocket connection the gateway has no
room for is refused with 503, not left hanging."""
import asyncio
import json
from contextlib import contextmanager

import pytest
import websockets

import wholefw
from conftest import mp32_bin, mp32_frozen_bin, micropython_bin
from simproc import Sim

SORRY = "Sorry"
STUCK_TRIES = 5  # limits.TG_STUCK_TRIES
NO_CONN_HEAP = "224k"  # (64-bit .mpy: it no longer boots at 192 KB with the device layer, at 208 KB
# with the rules)
TURN_HEAP = "200k"  # 32-bit .mpy: the turns find no room (192 KB in issue 25; 224 KB after the
# device layer, until the resident cuts of docs/benchmarks.md §17's fourth: there the turns had
# room; met from 216 KB down, the firmware answering nothing below 184 KB)


def _answered(got, tag):
    return got in (503, 1013) or got == wholefw.answer(tag) or got.startswith(SORRY)


@contextmanager
def _booted(tmp_path, llm, tg, fake_search, find, what, heap):
    """The whole firmware (wholefw's workload, Telegram and the WebSocket) on the
    interpreter find() gives, in heap, ready; skipped without that interpreter."""
    mp, why = find()
    if not mp:
        pytest.skip("needs %s: %s" % (what, why))
    wholefw.prepare(tmp_path, llm["ca"])
    with Sim.start(tmp_path, *wholefw.settings(llm, tg), console=True, heap=heap,
                   micropython=mp) as sim:
        wholefw.ready(sim, fake_search)
        yield sim


def _ws(sim, llm):
    """A WebSocket turn -> its answer, or 503 (no room for a connection: refused), or
    1013 (closed for want of room, and said so)."""
    return asyncio.run(_ask(sim.port, llm))


def test_a_turn_with_no_room_is_answered_and_telegram_takes_the_next_update(
        tmp_path, fake_anthropic, fake_telegram, fake_search):
    # 32-bit .mpy at TURN_HEAP: the turns find no room. Before: the WebSocket turn was
    # apologised for, but Telegram then took no update ("no update taken from a batch
    # (no room in the heap); retry in 1 s" every second) and never answered again.
    llm, tg = fake_anthropic, fake_telegram
    with _booted(tmp_path, llm, tg, fake_search, mp32_bin, "the 32-bit MicroPython", TURN_HEAP) as sim:
        got = []
        for tag in ("ws", "tg1", "tg2"):
            llm.reset()
            try:
                got.append(_ws(sim, llm) if tag == "ws" else wholefw.tg_turn(tg, llm, tag, 60))
            except (AssertionError, TimeoutError) as e:
                raise AssertionError("%s: %s\n%s" % (tag, e, sim.output()[-4000:])) from None
        out = sim.output()
    for text, tag in zip(got, ("ws", "tg1", "tg2")):
        assert _answered(text, tag), (tag, text, out[-3000:])
    assert "no room in the heap" in out or "MemoryError" in out, out[-3000:]  # the case was met
    assert out.count("no update taken") <= STUCK_TRIES + 1, out[-3000:]


def test_an_update_with_no_room_is_skipped_and_its_sender_told(
        tmp_path, fake_anthropic, fake_telegram, fake_search):
    # The frozen build at 128 KB with the heap filled from the console but for ~10 KB:
    # a 6 KB message is more than the poller can take. Before: skipped with a log line,
    # its sender never told. Then the heap is given back: the next message is answered.
    llm, tg = fake_anthropic, fake_telegram
    with _booted(tmp_path, llm, tg, fake_search, mp32_frozen_bin, "the frozen 32-bit MicroPython",
                 "128k") as sim:
        at = len(sim.output())
        sim.send("B = []; exec('try:\\n while 1: B.append(bytearray(1024))\\nexcept MemoryError: pass');"
                 " del B[:10]; import gc; gc.collect(); print('ballast', len(B))\r")
        sim.wait_for(r"ballast \d+", start=at)
        n = len(tg.state()["sent"])
        tg.update(chat_id=wholefw.TG_CHAT, text="a long one: " + "word " * 1200)

        def told(st):
            return [m["visible"] for m in st["sent"][n:] if m["chat_id"] == wholefw.TG_CHAT]

        said = told(tg.wait(told, 60))
        at = len(sim.output())
        sim.send("del B; gc.collect(); print('given', 'back')\r")
        sim.wait_for(r"given back", start=at)
        llm.reset()
        after = wholefw.tg_turn(tg, llm, "after", 60)
        out = sim.output()
    assert said[0].startswith("Sorry, I could not read your message"), (said, out[-3000:])
    assert after == wholefw.answer("after"), (after, out[-3000:])
    assert "skipped" in out


def test_a_websocket_connection_with_no_room_is_refused_not_left_hanging(
        tmp_path, fake_anthropic, fake_telegram, fake_search):
    # 64-bit .mpy at NO_CONN_HEAP (its firmware needs more): the gateway has no room for
    # a connection's code or buffers. Before: the client's opening handshake timed out,
    # its socket held, or the connection closed without a word; now a 503 before the
    # upgrade, a close 1013 "out of memory" after it (or, with room after all, a
    # response: the answer or an apology).
    llm, tg = fake_anthropic, fake_telegram
    wholefw.prepare(tmp_path, llm["ca"])
    sets = [s for s in wholefw.settings(llm, tg) if not s.startswith("tg_")]
    with Sim.start(tmp_path, *sets, console=True, heap=NO_CONN_HEAP,
                   micropython=micropython_bin()) as sim:
        sim.wait_for(r"gateway listening", 120)
        port = sim.port
        outcome = asyncio.run(_ask(port, llm))
        out = sim.output()
    assert _answered(outcome, "ws"), "%r\n%s" % (outcome, out[-3000:])


async def _ask(port, llm):
    llm.script(*wholefw.script("ws"))
    try:
        async with websockets.connect("ws://127.0.0.1:%d/?token=%s" % (port, wholefw.WS_TOKEN),
                                      open_timeout=30) as ws:
            await ws.send(json.dumps({"type": "message", "content": "hi", "chat_id": wholefw.WS_CHAT}))
            while True:
                frame = json.loads(await asyncio.wait_for(ws.recv(), 60))
                if frame["type"] in ("response", "error"):
                    return frame["content"]
    except websockets.exceptions.InvalidStatus as e:
        return e.response.status_code
    except websockets.exceptions.ConnectionClosed as e:  # with 1013 and why, or without a word
        rcvd = e.rcvd
        return 1013 if rcvd and rcvd.code == 1013 and "out of memory" in rcvd.reason else "closed: %s" % e
