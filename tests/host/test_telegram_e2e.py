"""Telegram end to end: the simulator (tools/sim) + fake Telegram Bot API + fake LLM.
The chat goes through the poller, the agent thread, the dispatcher and back."""
import subprocess
import time

from conftest import ROOT, micropython_bin
from simproc import Sim, llm_settings

ALLOWED = 42


def start_sim(tmp_path, tg, llm):
    """The simulator with Telegram on the fake (ready once the log says it polls)."""
    return Sim.start(tmp_path, "ws_port=0", "tg_api_base=" + tg["base_url"],
                     "tg_token=" + tg["token"], "tg_allow=%d" % ALLOWED, *llm_settings(llm))


def sent_to(st, chat):
    return [m for m in st["sent"] if m["chat_id"] == chat]


def n_sent(tg, chat, n, shows=None):
    """Once chat has n messages (the n-th showing `shows`: a streamed answer is shown
    unfinished first, then edited into the final text)."""
    return tg.wait(lambda s: len(sent_to(s, chat)) >= n and (
        shows is None or sent_to(s, chat)[n - 1]["visible"] == shows), 90)


def test_telegram_chat_end_to_end(tmp_path, fake_telegram, fake_anthropic):
    tg, llm = fake_telegram, fake_anthropic
    tg.configure(retain=True)
    with start_sim(tmp_path, tg, llm) as sim:
        sim.wait_for(r"tg: .*polling")
        # 1. an allowed chat gets its answer, with "typing" first (the fake LLM sends the
        # emoji as an escaped surrogate pair: it must arrive as one character)
        llm.script({"text": "Hello **there** \u4e2d <&> \U0001F600"})
        tg.update(chat_id=ALLOWED, text="hi \U0001F600")
        st = n_sent(tg, ALLOWED, 1, "Hello there \u4e2d <&> \U0001F600")
        m = sent_to(st, ALLOWED)[0]
        assert m["parse_mode"] == "HTML" and m["visible"] == "Hello there \u4e2d <&> \U0001F600", m
        assert st["actions"] and st["actions"][0]["chat_id"] == ALLOWED
        assert st["actions"][0]["t"] <= m["t"]
        assert len(llm.requests) == 1
        assert llm.requests[0]["body"]["messages"][-1]["content"] in (
            "hi \U0001F600", [{"type": "text", "text": "hi \U0001F600"}])

        # 2. an unknown chat is told its id; the LLM sees nothing
        tg.update(chat_id=777, text="let me in")
        st = n_sent(tg, 777, 1)
        assert "allow_chat(777)" in sent_to(st, 777)[0]["visible"]
        assert len(llm.requests) == 1

        # 3. a 9,000-character answer arrives as 3 ordered messages of <= 4096
        para = ("The quick brown fox jumps over the lazy dog, again and again. " * 49).strip()
        llm.script({"text": "\n\n".join("Part %d. %s" % (i, para) for i in range(3))})
        tg.update(chat_id=ALLOWED, text="long please")
        st = n_sent(tg, ALLOWED, 4)
        parts = sent_to(st, ALLOWED)[1:4]
        assert [p["visible"][:7] for p in parts] == ["Part 0.", "Part 1.", "Part 2."]
        assert all(len(p["visible"]) <= 4096 for p in parts)
        assert sum(len(p["visible"]) for p in parts) > 9000

        # 4. Telegram refuses the entities once: the same part goes out as plain text, once
        # (the answer streamed: the message showing it so far is edited into the final)
        tg.fail("editMessageText", 400, if_parse_mode=True)
        llm.script({"text": "**formatted** answer"})
        tg.update(chat_id=ALLOWED, text="format")
        st = n_sent(tg, ALLOWED, 5, "formatted answer")
        m = sent_to(st, ALLOWED)[4]
        assert m["parse_mode"] is None and m["text"] == "formatted answer"
        refused = [c for c in st["calls"] if c["method"] == "editMessageText"
                   and c["params"].get("parse_mode") and "formatted" in c["params"]["text"]]
        assert len(refused) == 1

        # 5. 429 (on a send) and 409 (on the poll) are survived
        tg.fail("sendMessage", 429, retry_after=1)
        tg.fail("getUpdates", 409)
        llm.script({"text": "still here"})
        tg.update(chat_id=ALLOWED, text="are you there?")
        st = n_sent(tg, ALLOWED, 6, "still here")
        assert "409 Conflict" in sim.output()

        # 6. /reset clears the session: the next turn's history starts over
        tg.update(chat_id=ALLOWED, text="/reset")
        st = n_sent(tg, ALLOWED, 7)
        assert "cleared" in sent_to(st, ALLOWED)[6]["visible"].lower()
        llm.script({"text": "fresh"})
        tg.update(chat_id=ALLOWED, text="who am I?")
        n_sent(tg, ALLOWED, 8, "fresh")
        msgs = llm.requests[-1]["body"]["messages"]
        assert len(msgs) == 1, msgs
    # the session file on the flash image holds only the turn after /reset
    snippet = ("import sys\nsys.path[:] = [%r]\nfrom mimi import board\nboard.mount_image(%r)\n"
               "print(open('/spiffs/sessions/tg_%d.jsonl').read())\n"
               % (str(ROOT / "lib"), str(tmp_path / "fs.img"), ALLOWED))
    r = subprocess.run([micropython_bin(), "-c", snippet], capture_output=True, text=True,
                       timeout=60, cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "who am I?" in r.stdout and "fresh" in r.stdout
    assert "long please" not in r.stdout and "hi " not in r.stdout
    calls_before = len(llm.requests)
    sent_before = len(tg.state()["sent"])

    # 7. after a restart nothing is processed twice (the fake would hand every old
    # update to a bot that lost its offset)
    with start_sim(tmp_path, tg, llm) as sim:
        sim.wait_for(r"tg: .*polling")
        llm.script({"text": "after restart"})
        tg.update(chat_id=ALLOWED, text="back?")
        st = n_sent(tg, ALLOWED, 9, "after restart")
        assert len(st["sent"]) == sent_before + 1
        assert len(llm.requests) == calls_before + 1
        polls = [c for c in st["calls"] if c["method"] == "getUpdates"]
        assert all(int(c["params"].get("offset", 0)) > 0 for c in polls[-2:])

        # 8. a streamed answer (~10 tokens/s): one message, shown as plain text while it
        # grows and edited at most once a second, then the formatted final version
        words = " ".join("w%d" % i for i in range(30))
        llm.script({"text": words + " **done**", "pace": 10})
        t0 = time.time()
        tg.update(chat_id=ALLOWED, text="stream")
        st = tg.wait(lambda s: any(m["visible"] == words + " done" for m in sent_to(s, ALLOWED)), 90)
        m = sent_to(st, ALLOWED)[-1]
        assert len(st["sent"]) == sent_before + 2 and m["parse_mode"] == "HTML", m
        first = [c["params"]["text"] for c in st["calls"] if c["method"] == "sendMessage"][-1]
        edits = [e for e in st["edits"] if e["message_id"] == m["message_id"]]
        shown = [first] + [e["text"] for e in edits[:-1]]  # plain text while it streamed
        assert first != m["visible"] and all(words.startswith(v) for v in shown), shown
        assert edits[-1]["parse_mode"] == "HTML" and all(not e["parse_mode"] for e in edits[:-1])
        # a message and its edits, at most one a second (+ the final): never one per token
        assert 1 <= len(edits) <= 2 + (time.time() - t0), shown
