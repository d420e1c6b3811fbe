"""Feishu end to end: the simulator (tools/sim) + the fake Feishu open platform
(tests/fakes/feishu.py: endpoint, a real WebSocket with protobuf frames, token and
message APIs) + the fake LLM. Events go through the long connection, the agent
thread, the dispatcher and back out through the message API."""
import json
import time

from simproc import Sim, llm_settings

USER = "ou_a11ce0000000000000000000000000aa"
BOB = "ou_b0b00000000000000000000000000bbb"
STRANGER = "ou_5tra9e00000000000000000000000eee"
GROUP = "oc_9r0up000000000000000000000000ccc"


def start_sim(tmp_path, fs, llm, allow="%s,%s,%s" % (USER, BOB, GROUP), console=False):
    return Sim.start(tmp_path, "ws_port=0", "feishu_api_base=" + fs["base_url"],
                     "feishu_app_id=" + fs["app_id"], "feishu_app_secret=" + fs["app_secret"],
                     "feishu_allow=" + allow, "heartbeat_min=0", *llm_settings(llm), console=console)


def sent_to(st, rid):
    return [m for m in st["sent"] if m["receive_id"] == rid]


def n_sent(fs, rid, n):
    return fs.wait(lambda s: len(sent_to(s, rid)) >= n, 90)


def user_texts(req):
    out = []
    for m in req["body"]["messages"]:
        if m["role"] == "user":
            c = m["content"]
            out.append(c if isinstance(c, str) else "".join(b.get("text", "") for b in c if b.get("type") == "text"))
    return out


def test_feishu_chat_end_to_end(tmp_path, fake_feishu, fake_anthropic):
    fs, llm = fake_feishu, fake_anthropic
    fs.configure(names={USER: "Ann", BOB: "Bob"})
    with start_sim(tmp_path, fs, llm) as sim:
        sim.wait_for(r"feishu: long connection open")
        # 1. a p2p message: answered as rich text, the event ACKed
        llm.script({"text": "Hello **there** \u4e2d\u6587 \U0001F600"})
        mid = fs.event("hi \U0001F600", open_id=USER)
        st = n_sent(fs, USER, 1)
        m = sent_to(st, USER)[0]
        assert (m["receive_id_type"], m["msg_type"]) == ("open_id", "post")
        assert m["visible"] == "Hello **there** \u4e2d\u6587 \U0001F600"
        assert [a["code"] for a in st["acks"]] == [200]
        assert user_texts(llm.requests[0])[-1] == "hi \U0001F600"

        # 2. the same event again (Feishu redelivers what it thinks was lost): ACKed,
        # not answered; the next message shows nothing ran in between
        fs.event("hi \U0001F600", open_id=USER, message_id=mid)
        fs.event("plain please", open_id=USER)
        st = n_sent(fs, USER, 2)
        assert sent_to(st, USER)[1]["visible"] == "Echo: plain please"
        assert sent_to(st, USER)[1]["msg_type"] == "text"
        assert len(llm.requests) == 2 and len(st["acks"]) == 3

        # 3. a group: ignored unless the bot is mentioned; then answered in the group,
        # the speaker's name on the message, the prompt told it is a group
        bot = fs["bot_open_id"]
        fs.event("@_user_1 nobody asked you", chat_type="group", open_id=USER, chat_id=GROUP,
                 mentions=[("@_user_1", BOB, "Bob")])
        llm.script({"text": "All systems go."})
        fs.event("@_user_1 what's up?", chat_type="group", open_id=USER, chat_id=GROUP,
                 mentions=[("@_user_1", bot, "MimiClaw")])
        st = n_sent(fs, GROUP, 1)
        g = sent_to(st, GROUP)[0]
        assert (g["receive_id_type"], g["visible"]) == ("chat_id", "All systems go.")
        req = llm.requests[2]
        assert user_texts(req)[-1] == "Ann: what's up?"
        system = json.dumps(req["body"]["system"])
        assert "chat_type: group" in system and "source_channel: feishu" in system
        fs.event("@_user_2 and you @_user_1?", chat_type="group", open_id=BOB, chat_id=GROUP,
                 mentions=[("@_user_1", bot, "MimiClaw"), ("@_user_2", USER, "Ann")])
        n_sent(fs, GROUP, 2)
        assert user_texts(llm.requests[3])[-2:] == ["Ann: what's up?", "Bob: @Ann and you ?"]
        assert len(llm.requests) == 4

        # 4. a stranger gets one line with its id and how to allow it; the model sees nothing
        fs.event("let me in", open_id=STRANGER)
        st = n_sent(fs, STRANGER, 1)
        assert "allow_feishu(%s)" % STRANGER in sent_to(st, STRANGER)[0]["visible"]
        fs.event("please?", open_id=STRANGER)
        fs.event("barrier", open_id=USER)
        st = n_sent(fs, USER, 3)
        assert len(sent_to(st, STRANGER)) == 1 and len(llm.requests) == 5

        # 5. the tenant token expires early: the send is refused once, renewed, delivered
        before = st["token_calls"]
        fs.expire_tokens()
        fs.event("still there?", open_id=USER)
        st = n_sent(fs, USER, 4)
        assert sent_to(st, USER)[3]["visible"] == "Echo: still there?"
        assert st["token_calls"] == before + 1
        codes = [c[2] for c in st["calls"] if c[1] == "/open-apis/im/v1/messages"]
        assert codes[-2:] == [99991663, 0]

        # 6. Feishu ends the long connection: the firmware comes back on its own
        fs.drop()
        st = fs.wait(lambda s: s["connections"] == 2 and s["open"] == 1, 60)
        assert st["endpoint_calls"] == 2
        fs.event("back?", open_id=USER)
        st = n_sent(fs, USER, 5)
        assert sent_to(st, USER)[4]["visible"] == "Echo: back?"

        # 7. a long answer: several messages in order, each within the part limit
        para = ("The quick brown fox jumps over the lazy dog, again and again. " * 80).strip()  # ~5 KB
        llm.script({"text": "\n\n".join("Part %d. %s" % (i, para) for i in range(4))})
        fs.event("long please", open_id=USER)
        st = n_sent(fs, USER, 9)
        parts = sent_to(st, USER)[5:9]
        assert [p["visible"][:7] for p in parts] == ["Part 0.", "Part 1.", "Part 2.", "Part 3."]
        assert all(len(p["visible"].encode()) <= 8192 for p in parts)
        assert st["violations"] == [] and llm.violations == []
        assert st["pings"] >= 2  # one per connection, at least
        out = sim.output()
    assert "Traceback" not in out, out[-3000:]


def test_cron_and_heartbeat_results_reach_a_feishu_owner(tmp_path, fake_feishu, fake_anthropic):
    """No Telegram: the first id of feishu_allow is the owner, who gets the heartbeat's
    findings and system reminders; a job made in a Feishu chat answers there."""
    fs, llm = fake_feishu, fake_anthropic
    with start_sim(tmp_path, fs, llm, allow=USER, console=True) as sim:
        sim.wait_for(r"feishu: long connection open")
        # a reminder set in the chat fires as a turn in that chat
        at = int(time.time()) + 6
        llm.script({"text": "", "tool_calls": [{"name": "cron_add", "input": {
                        "name": "pong", "schedule_type": "at", "at_epoch": at,
                        "message": "Time is up: say pong"}}]},
                   {"text": "Scheduled."}, {"text": "pong!"})
        fs.event("Say pong in 6 seconds", open_id=USER)
        st = n_sent(fs, USER, 2)
        assert [m["visible"] for m in sent_to(st, USER)] == ["Scheduled.", "pong!"]
        assert user_texts(llm.requests[2])[-1] == "Time is up: say pong"
        # the heartbeat's findings go to the owner
        sim.send("tool_exec('write_file', '{\"path\": \"/spiffs/HEARTBEAT.md\", "
                 "\"content\": \"- [ ] water the plants\"}')\r")
        sim.wait_for(r"OK: wrote")
        llm.script({"text": "Time to water the plants."})
        sim.send("heartbeat_trigger()\r")
        sim.wait_for(r"answer goes to feishu:" + USER)
        st = n_sent(fs, USER, 3)
        assert sent_to(st, USER)[2]["visible"] == "Time to water the plants."
        # a reminder made on the REPL (system job, deliver=true): to the owner, no LLM turn
        calls = len(llm.requests)
        sim.send("tool_exec('cron_add', '{\"name\": \"stretch\", \"schedule_type\": \"at\", "
                 "\"at_epoch\": %d, \"message\": \"Stretch!\", \"deliver\": true}')\r" % (int(time.time()) + 3))
        sim.wait_for(r"OK: Added")
        st = n_sent(fs, USER, 4)
        assert sent_to(st, USER)[3]["visible"] == "Stretch!"
        assert len(llm.requests) == calls
        assert st["violations"] == []
        # the owner can also be written to from the REPL
        sim.send("feishu_send('%s', 'hello from the board')\r" % USER)
        st = n_sent(fs, USER, 5)
        assert sent_to(st, USER)[4]["visible"] == "hello from the board"


def test_lark_tenant_without_long_connection_says_so(tmp_path, fake_feishu, fake_anthropic):
    fake_feishu.configure(long_connection=False)
    with start_sim(tmp_path, fake_feishu, fake_anthropic) as sim:
        line = sim.read_until(r"offers no long connection")
    assert fake_feishu["base_url"] in line and "Lark" in line


def test_a_message_over_16_kb_is_answered_and_the_connection_stays(tmp_path, fake_feishu, fake_anthropic):
    """Issue 25, item 10: 9,000 CJK characters (27 KB of UTF-8) in one message dropped
    the long connection without a word; Feishu sends an event that was not ACKed again
    after a reconnect, which dropped it again, and the owner's next message was not
    answered either. The event is read in bounded pieces and ACKed, the sender is told
    it was too long, the connection stays, and the next message is answered."""
    fs, llm = fake_feishu, fake_anthropic
    fs.configure(redeliver=True)
    with start_sim(tmp_path, fs, llm) as sim:
        sim.wait_for(r"feishu: long connection open")
        text = "\u4e2d\u6587\u6d4b\u8bd5" * 2250  # 9,000 characters, 27,000 bytes
        mid = fs.event(text, open_id=USER)
        st = n_sent(fs, USER, 1)
        told = sent_to(st, USER)[0]["visible"]
        assert "too long" in told and "(26 KB; I can take about 16 KB)" in told, told
        assert len(st["acks"]) == 1 and st["connections"] == 1 and st["redelivered"] == 0, st
        # the same event redelivered (as after a reconnect): ACKed, not told again
        fs.push(fs.event_payload(text, open_id=USER, message_id=mid)[1])
        fs.event("and now?", open_id=USER)
        st = n_sent(fs, USER, 2)
        assert sent_to(st, USER)[1]["visible"] == "Echo: and now?", sent_to(st, USER)
        assert len(st["acks"]) == 3 and st["connections"] == 1 and st["violations"] == []
        assert len(llm.requests) == 1  # the long message never reached the model
        out = sim.output()
    assert "Traceback" not in out, out[-3000:]
