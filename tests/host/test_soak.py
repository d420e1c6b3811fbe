"""Soak (issue 16 item 5): the whole firmware (tools/sim) under a capped heap answers
many messages from WebSocket and Telegram chats at once, each turn with a tool call
(the fake LLM calls a tool, then echoes the user's text). Every message gets exactly
one reply, its own, in order; the heap in use after the run is no more than the heap
after the warm-up plus HEAP_SLACK; the session files and the usage ledger stay within their caps.

`make test`: 300 messages on each interpreter; `make soak`: MIMI_SOAK_MESSAGES (10,000).
Prints the heap after warm-up and after every round of messages, the firmware idle
(pytest -s): the curve in docs/reliability.md."""
import asyncio
import json
import os
import re
import sys
import time

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidMessage

from conftest import ROOT, interpreters
from simproc import Sim, llm_settings

sys.path.insert(0, str(ROOT / "tools"))
import mkimage  # noqa: E402
from mimi import limits  # noqa: E402

MESSAGES = int(os.getenv("MIMI_SOAK_MESSAGES") or 300)
HEAPS = {"": "768k", "mp32": "512k"}  # 64-bit: well under the port's 2 MB; 32-bit: 2.5x the board's heap
WS_CHATS = ("soak-a", "soak-b", "soak-c")
TG_CHATS = (42, 43)
ROUND = max(30, MESSAGES // 50)  # messages per chat between two heap figures (a new connection each)
WARMUP = 3  # messages per chat before the first heap figure: every module a turn loads
HEAP_SLACK = 2 * 1024
SETTLE_DIFF = 1024  # a figure this far from the one before is read on for SETTLE_S seconds
SETTLE_S = 15
TOKEN = "soak-test-token-123"
TOOLS = [{"name": "get_current_time", "input": {}},
         {"name": "read_file", "input": {"path": "/spiffs/memory/MEMORY.md"}},
         {"name": "list_dir", "input": {"path": "/spiffs/"}}]
HEAP_RE = re.compile(r"^heap free\s+(\d+) bytes \(in use (\d+)\)[\s\S]*?^flash .*free", re.M)


class Soak:
    def __init__(self, sim, tg, llm):
        self.sim = sim
        self.tg = tg
        self.llm = llm
        self.pos = 0
        self.done = 0  # replies received, all chats
        self.requests = 0  # LLM requests
        self.violations = []
        self.transients = []  # (replies, figure the readings first agreed on, the lowest)

    async def heap(self, near=None):
        """heap_info()'s 'in use' figure from the console, once the firmware is idle:
        what a finished turn or a closed connection lets go of goes a moment later. The
        same figure (within 256 bytes) three times, a second apart; one further than
        SETTLE_DIFF from `near` (the figure before; None: this is the first) is read on
        for SETTLE_S seconds and the lowest taken: on 64-bit, a round's end now and then
        leaves ~7.7 KB that stay for 1-10 s and go with no further message
        (docs/reliability.md). A leak stays in every reading."""
        seen = []
        for _ in range(20):
            seen.append(await self._heap_reading())
            if len(seen) >= 3 and max(seen[-3:]) - min(seen[-3:]) <= 256:
                break
        if near is None or abs(seen[-1] - near) > SETTLE_DIFF:
            agreed = seen[-1]
            for _ in range(SETTLE_S):
                seen.append(await self._heap_reading())
            if agreed - min(seen) > SETTLE_DIFF:  # printed with the curve
                self.transients.append((self.done, agreed, min(seen)))
            return min(seen)
        return seen[-1]

    async def _heap_reading(self):
        await asyncio.sleep(1)
        self.sim.send("heap_info()\r")
        m = await asyncio.to_thread(self.sim.wait_for, HEAP_RE, 120, self.pos)
        self.pos = m.end()
        return int(m.group(2))

    async def modules(self):
        """The firmware's loaded modules (to tell what a heap difference is)."""
        self.sim.send("import sys; print('MODS', ' '.join(sorted(sys.modules)))\r")
        m = await asyncio.to_thread(self.sim.wait_for, r"\nMODS ([^\r\n]*)", 60, self.pos)
        self.pos = m.end()
        return set(m.group(1).split())

    async def ws_open(self):
        """A new connection; the three chats connect at once from one address, and the
        gateway sheds the oldest of more than WS_PEER_PENDING not yet upgraded from one
        address (an idle-socket flood looks the same): a client tries again."""
        for attempt in range(5):
            try:
                return await connect("%s?token=%s" % (self.sim.url, TOKEN), max_size=None)
            except (InvalidMessage, OSError):
                await asyncio.sleep(0.1 * (attempt + 1))
        return await connect("%s?token=%s" % (self.sim.url, TOKEN), max_size=None)

    async def ws_chat(self, chat_id, first, n):
        async with await self.ws_open() as ws:
            for i in range(first, first + n):
                text = "m%d from %s" % (i, chat_id)
                await ws.send(json.dumps({"type": "message", "chat_id": chat_id, "content": text}))
                while True:
                    frame = json.loads(await asyncio.wait_for(ws.recv(), 120))
                    if frame["type"] not in ("status", "partial"):  # (partial: a streamed answer so far)
                        break
                assert frame == {"type": "response", "chat_id": chat_id, "content": "Echo: " + text}, frame
                self.done += 1
            # nothing more comes for this chat: no duplicate reply
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(ws.recv(), 0.05)

    async def tg_chat(self, chat_id, first, n):
        fake = self.tg.fake
        for i in range(first, first + n):
            text = "m%d from %d" % (i, chat_id)
            with fake.cond:
                pos = len(fake.sent)  # the reply comes after this (read in place: a
            # state() copy of 20,000 messages twenty times a second slowed the run)
            await asyncio.to_thread(self.tg.update, chat_id=chat_id, text=text)
            end = time.monotonic() + 120
            while True:
                with fake.cond:  # (a streamed answer is sent unfinished, then edited)
                    got = [m["visible"] for m in fake.sent[pos:] if m["chat_id"] == chat_id]
                if got and got[0] == "Echo: " + text or time.monotonic() > end:
                    break
                await asyncio.sleep(0.02)
            assert got == ["Echo: " + text], got
            self.done += 1

    async def round(self, first, per_chat):
        """Every chat sends per_chat messages (each WebSocket chat on a new connection),
        all chats at once, each waiting for its reply before the next."""
        await asyncio.gather(*[self.ws_chat(c, first, per_chat) for c in WS_CHATS],
                             *[self.tg_chat(c, first, per_chat) for c in TG_CHATS])
        fake = self.llm.fake
        with fake.lock:  # counted and let go: 20,000 request bodies would fill the test's RAM
            self.requests += len(fake.requests)
            self.violations += fake.violations
            fake.requests.clear()
            fake.violations.clear()


def image_files(path):
    """{path: size} of the image's files (read by littlefs-python, the firmware stopped)."""
    data = path.read_bytes()
    fs = mkimage._lfs(len(data) // limits.BLOCK_SIZE, data)
    out = {}
    for top, _, names in fs.walk("/"):
        for n in names:
            p = top.rstrip("/") + "/" + n
            out[p] = fs.stat(p).size
    return out


@pytest.mark.parametrize("tag,mp", interpreters(), ids=[t or "64bit" for t, _ in interpreters()])
def test_soak(tmp_path, fake_anthropic, fake_telegram, tag, mp):
    llm, tg = fake_anthropic, fake_telegram
    llm.configure(echo_tools=TOOLS)
    chats = len(WS_CHATS) + len(TG_CHATS)
    per_chat = max(1, MESSAGES // chats)
    t0 = time.monotonic()
    with Sim.start(tmp_path, "ws_port=0", "ws_token=" + TOKEN, "tg_api_base=" + tg["base_url"],
                   "tg_token=" + tg["token"], "tg_allow=" + ",".join(map(str, TG_CHATS)),
                   "max_calls_hour=0", "max_calls_day=0",  # 20,000 LLM calls: no spend cap
                   *llm_settings(llm), console=True, heap=HEAPS[tag], micropython=mp) as sim:
        sim.wait_for(r"tg: .*polling")
        soak = Soak(sim, tg, llm)

        async def main():
            await soak.round(0, WARMUP)
            # the simulator's host-only fakes (board/host_sys.py, ~3 KB) are loaded for good
            # by the boot's 60 s healthy mark, maybe mid-run: load them before the first figure
            sim.send("import mimi.board.host_sys\r")
            curve = [(soak.done, await soak.heap())]
            soak.mods = await soak.modules()
            sent_ = WARMUP
            while sent_ < WARMUP + per_chat:
                n = min(ROUND, WARMUP + per_chat - sent_)
                await soak.round(sent_, n)
                sent_ += n
                curve.append((soak.done, await soak.heap(curve[-1][1])))
            if curve[-1][1] - curve[0][1] > HEAP_SLACK:
                # A block only a stale word (an idle thread's stack, a register: the GC is
                # conservative) still points at goes once that word is written again; a
                # leak stays. One more message each, and the figure after it is the one judged.
                await soak.round(sent_, 1)
                sent_ += 1
                curve.append((soak.done, await soak.heap(curve[-1][1])))
            mods = await soak.modules()
            soak.mods = (sorted(mods - soak.mods), sorted(soak.mods - mods))
            return curve, sent_

        try:
            curve, sent = asyncio.run(main())
        finally:
            out = sim.output()
            if sys.exc_info()[0]:
                (tmp_path / "sim.log").write_text(out)
                print(out[-6000:], "\nthe whole output:", tmp_path / "sim.log")
    took = time.monotonic() - t0
    before, after = curve[0][1], curve[-1][1]
    print("SOAK %s heap %s: %d messages (%d chats, %d tool calls) in %.0f s; heap in use after warm-up "
          "%d, after the run %d (%+d); curve %s; gone while read on %s" % (
              tag or "64-bit", HEAPS[tag], soak.done, chats, soak.requests // 2, took, before,
              after, after - before, curve, soak.transients))
    assert soak.done == chats * sent
    assert "MemoryError" not in out and "Traceback" not in out, out[-3000:]
    assert soak.violations == []
    st = tg.state()
    assert st["violations"] == []
    for c in TG_CHATS:  # each message answered once
        assert len([m for m in st["sent"] if m["chat_id"] == c]) == sent
    # every turn: a tool call, then the answer
    assert soak.requests == 2 * soak.done, soak.requests
    # growth is what a leak makes; less than after the warm-up is what the warm-up held
    # for a moment (a figure above the others: docs/reliability.md, "Soak")
    assert after - before <= HEAP_SLACK, (curve, "modules loaded, dropped since warm-up:", soak.mods)
    files = image_files(tmp_path / "fs.img")
    sessions = {p: n for p, n in files.items() if p.startswith("/spiffs/sessions/")}
    assert len(sessions) == chats and max(sessions.values()) <= limits.SESSION_FILE_MAX, sessions
    # the usage ledger: an hour's line and one line a day, each within its cap
    assert files[limits.USAGE_PATH] <= (limits.USAGE_DAYS + 1) * limits.USAGE_LINE_MAX, files
