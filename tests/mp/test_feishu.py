# The Feishu/Lark channel under MicroPython: the pbbp2.Frame codec
# (channels/feishupb.py), reply splitting and message types (channels/feishufmt.py),
# the WebSocket client's framing (net/wsclient.py), event handling, settings and
# REPL commands, and the whole channel against the fake open platform
# (tests/fakes/feishu.py): long connection, ACKs, pings, tokens, rate limits.
import json
import asyncio
import binascii
import support
import tghttp
from tghttp import until
from support import raises, Capture
from mimi import bus, limits
from mimi.config import settings as config
from mimi.net import wsproto as wp
from mimi.channels.feishu import frame as pb, format as fmt

FIXTURES = ("fake_feishu", "feishu_frames", "http_env")
HEAPSIZE = "2m"
TIMEOUT = 120

cfg = config.cfg
USER = "ou_a11ce0000000000000000000000000aa"
OTHER = "ou_0b0b0000000000000000000000000bbb"
GROUP = "oc_9r0up000000000000000000000000ccc"


def fs_():
    return support.fixture("fake_feishu")


def setup():
    cfg.load()
    while bus.inbound.get_nowait() or bus.outbound.get_nowait():
        pass


# ---------------------------------------------------------------- pbbp2.Frame

def test_frame_known_bytes_and_roundtrip():
    f = pb.Frame(pb.DATA, 3, [["type", "event"]], b"{}", seq=1, log=2)
    b = pb.encode(f)
    head = bytes([0x08, 1, 0x10, 2, 0x18, 3, 0x20, 1])
    hdr = b"\x0a\x04type\x12\x05event"
    assert b == head + b"\x2a" + bytes([len(hdr)]) + hdr + b"\x42\x02{}", b
    g = pb.decode(b)
    assert (g.seq, g.log, g.service, g.method, g.headers, g.payload) == (1, 2, 3, 1, [["type", "event"]], b"{}")
    assert g.get("type") == "event" and g.get("nope") is None
    # big LogIDs, negative int32, the optional strings, no payload at all
    f = pb.Frame(pb.CONTROL, -7, [["type", "ping"], ["k", "\u4e2d"]], b"", seq=(1 << 64) - 1, log=1 << 40)
    f.encoding, f.ptype, f.log_new = "gzip", "json", "2024abc"
    g = pb.decode(pb.encode(f))
    assert (g.seq, g.log, g.service, g.method) == ((1 << 64) - 1, 1 << 40, -7, 0)
    assert g.headers == [["type", "ping"], ["k", "\u4e2d"]] and g.payload == b""
    assert (g.encoding, g.ptype, g.log_new) == ("gzip", "json", "2024abc")


def test_frame_matches_another_implementation():
    for case in support.fixture("feishu_frames"):
        want = case["frame"]
        raw = binascii.unhexlify(case["hex"])
        g = pb.decode(raw)
        assert (g.seq, g.log, g.service, g.method) == (want["SeqID"], want["LogID"], want["service"], want["method"])
        assert g.headers == want["headers"]
        assert g.payload == (want["payload"] or "").encode()
        assert pb.encode(g) == raw  # the fake's bytes, field for field


def test_frame_skips_unknown_fields_and_refuses_broken_ones():
    good = pb.encode(pb.Frame(pb.DATA, 1, [["type", "event"]], b"x"))
    extra = b"\x78\x05" + b"\x85\x01abcd" + b"\x89\x01" + b"12345678" + b"\x82\x01\x02hi"  # fields 15, 16, 17, 16
    g = pb.decode(good + extra)
    assert g.payload == b"x" and g.get("type") == "event"
    raises(ValueError, pb.decode, good[:-1])  # payload cut short
    raises(ValueError, pb.decode, good + b"\x80")  # varint cut short
    raises(ValueError, pb.decode, b"\x08\x01\x10\x02\x18\x03")  # no method
    raises(ValueError, pb.decode, good + b"\x2a\x04\x0a\x02\xff\xfe")  # header not UTF-8
    raises(ValueError, pb.decode, good + b"\x42\x05" + b"\x80" * 2)  # payload field overruns
    raises(ValueError, pb.decode, b"\x0a\x01x" + good)  # SeqID with a string's wire type
    raises(ValueError, pb.decode, b"\x0b" + good)  # group wire type: not in pbbp2


# ---------------------------------------------------------------- replies

def test_message_type_follows_the_markdown():
    assert fmt.kind("Plain answer. 2*3*4 = 24, snake_case stays.") == fmt.TEXT
    for md in ("This is **bold**.", "see [the docs](https://open.feishu.cn)", "- one\n- two",
               "1. first\n2. second", "> quoted", "```py\nx = 1\n```", "use `code` here", "~~gone~~"):
        assert fmt.kind(md) == fmt.POST, md
    assert fmt.kind("# Title\n\nbody") == fmt.CARD
    assert fmt.kind("| a | b |\n|---|---|\n| 1 | 2 |") == fmt.CARD
    assert fmt.kind("#hashtag is not a heading") == fmt.TEXT
    post = json.loads(fmt.content("**hi** \u4e2d", fmt.POST))
    assert post == {"zh_cn": {"title": "", "content": [[{"tag": "md", "text": "**hi** \u4e2d"}]]}}
    card = json.loads(fmt.content("# T", fmt.CARD))
    assert card == {"schema": "2.0", "body": {"elements": [{"tag": "markdown", "content": "# T"}]}}
    assert json.loads(fmt.content('say "x"\n', fmt.TEXT)) == {"text": 'say "x"\n'}


def _nbytes(s):
    return len(s.encode())


def test_split_on_paragraphs_lines_words_under_the_byte_limit():
    para = " ".join(["word%d" % i for i in range(60)])
    md = "\n\n".join("Para %d. %s" % (i, para) for i in range(6))
    parts = fmt.split(md, 900)
    assert len(parts) > 1 and all(_nbytes(p) <= 900 for p in parts)
    assert all(p.startswith("Para ") for p in parts if "Para" in p[:5])
    assert " ".join(" ".join(parts).split()) == " ".join(md.split())  # nothing lost, in order
    assert fmt.split("short", 900) == ["short"]
    assert fmt.split("  \n\n  ", 900) == []
    # one long line: cut between words
    words = fmt.split("abc " * 500, 300)
    assert all(_nbytes(p) <= 300 and not p.startswith(" ") for p in words)
    assert all(p.split() == ["abc"] * len(p.split()) for p in words)


def test_split_never_inside_a_character():
    text = ("\u4e2d\u6587\U0001F600" * 700)  # no spaces: hard cuts, 3- and 4-byte characters
    parts = fmt.split(text, 1000)
    assert len(parts) > 5 and all(_nbytes(p) <= 1000 for p in parts)
    assert "".join(parts) == text


def test_split_closes_and_reopens_a_code_block():
    code = "\n".join("line_%03d = %d" % (i, i) for i in range(200))
    md = "Here:\n\n```python\n" + code + "\n```\n\nDone."
    parts = fmt.split(md, 1200)
    assert len(parts) > 2 and all(_nbytes(p) <= 1200 for p in parts)
    for p in parts:
        fences = [ln for ln in p.split("\n") if ln.startswith("```")]
        assert len(fences) % 2 == 0, p  # every part is balanced on its own
    assert parts[1].startswith("```python\n")  # the block goes on with its language
    body = "".join(p for p in parts).replace("```python\n", "").replace("\n```", "")
    for i in (0, 57, 199):
        assert "line_%03d = %d" % (i, i) in body


# ---------------------------------------------------------------- WebSocket client

async def test_client_talks_to_a_real_websocket_server():
    """The fake's long connection is the `websockets` library: handshake, masking,
    a ping frame answered with a pong, a clean close."""
    from mimi.net import wsclient

    f = fs_()
    ep = await tghttp.request_json(f["base_url"], "POST", "/callback/ws/endpoint",
                                   {"AppID": f["app_id"], "AppSecret": f["app_secret"]})
    conn = await wsclient.connect(ep["data"]["URL"], 4096)
    await conn.send(pb.encode(pb.Frame(pb.CONTROL, 33554678, [["type", "ping"]])))
    op, data = await conn.recv()
    pong = pb.decode(data)
    assert op == wp.BINARY and pong.get("type") == "pong" and json.loads(pong.payload)["PingInterval"] == 120
    await conn.close()
    st = await tghttp.request_json(f["base_url"], "GET", "/_control/state")
    assert st["pings"] == 1 and st["violations"] == []
    # a URL without a valid ticket is refused with the server's answer
    try:
        await wsclient.connect(ep["data"]["URL"], 4096)  # tickets are single use
        raise AssertionError("no Refused")
    except wsclient.Refused as e:
        assert e.status == 403 and e.headers.get("handshake-msg") == "invalid ticket"
    # switching protocols without the right accept key is not a WebSocket
    from mimi.net.http import ProtocolError

    try:
        await wsclient.connect(f["base_url"].replace("http:", "ws:") + "/_control/bad-accept", 4096)
        raise AssertionError("a wrong accept key was taken")
    except ProtocolError as e:
        assert "accept key" in str(e)


# ---------------------------------------------------------------- events

def _bot():
    from mimi.channels.feishu import longconn as feishu

    b = feishu.Feishu()
    b.bot_id = "ou_b07"
    return b


def _event(text="hi", chat_type="p2p", sender=USER, chat=GROUP, mentions=(), mid="om_1",
           message_type="text", sender_type="user", event_type="im.message.receive_v1"):
    msg = {"message_id": mid, "chat_id": chat, "chat_type": chat_type, "message_type": message_type,
           "content": json.dumps({"text": text})}
    if mentions:
        msg["mentions"] = [{"key": k, "id": {"open_id": o}, "name": n} for k, o, n in mentions]
    return {"schema": "2.0", "header": {"event_id": "e" + mid, "event_type": event_type},
            "event": {"sender": {"sender_id": {"open_id": sender}, "sender_type": sender_type},
                      "message": msg}}


def test_events_p2p_groups_mentions_and_dedup():
    cfg.set("feishu_allow", "%s,%s" % (USER, GROUP))
    b = _bot()
    what, chat, text, meta = b._classify(_event("  hello  "))
    assert (what, chat, text) == ("agent", USER, "hello") and meta["group"] is False
    assert b._classify(_event("again", mid="om_1")) == ("ignore",)  # redelivered
    assert b._classify(_event("x", mid="om_2", sender=OTHER))[:2] == ("stranger", OTHER)
    assert b._classify(_event(mid="om_3", message_type="image"))[:2] == ("text_only", USER)
    assert b._classify(_event(mid="om_4", sender_type="app")) == ("ignore",)
    assert b._classify(_event(mid="om_5", event_type="im.chat.member.bot.added_v1")) == ("ignore",)
    # groups: only when the bot is mentioned; its mention goes, others become names
    assert b._classify(_event("@_user_1 hi", "group", mid="om_6",
                              mentions=[("@_user_1", OTHER, "Bob")])) == ("ignore",)
    what, chat, text, meta = b._classify(_event("@_user_1 ask @_user_2 please", "group", mid="om_7",
                                                mentions=[("@_user_1", "ou_b07", "Mimi"),
                                                          ("@_user_2", OTHER, "Bob")]))
    assert (what, chat, text) == ("agent", GROUP, "ask @Bob please")
    assert meta["group"] is True and meta["open_id"] == USER
    what, chat = b._classify(_event("@_user_1 hi", "group", chat="oc_else", mid="om_8",
                                    mentions=[("@_user_1", "ou_b07", "Mimi")]))[:2]
    assert (what, chat) == ("stranger", "oc_else")
    assert b._classify(_event("@_user_1", "group", mid="om_9", mentions=[("@_user_1", "ou_b07", "M")])) == ("ignore",)
    for i in range(limits.FEISHU_DEDUP):
        b._classify(_event(mid="om_x%d" % i))
    assert b._classify(_event("back", mid="om_1"))[0] == "agent"  # fell out of the ring of 64


def _frame(payload, total, seq, mid="f1"):
    return pb.Frame(pb.DATA, 1, [["type", "event"], ["message_id", mid], ["sum", str(total)],
                                 ["seq", str(seq)]], payload)


def test_events_split_over_frames_are_joined():
    b = _bot()
    assert b._join(_frame(b"abc", 1, 0)) == (b"abc", 0)
    assert b._join(_frame(b"C", 3, 2)) is None and b._join(_frame(b"A", 3, 0)) is None
    assert b._join(_frame(b"B", 3, 1)) == (b"ABC", 0) and b.parts == {}
    assert b._join(_frame(b"x", 99, 0)) == (b"", 0)  # more parts than allowed: dropped (but ACKed)
    assert b._join(_frame(b"x", 2, 5)) == (b"", 0)
    big = b"y" * (limits.FEISHU_PAYLOAD_MAX // 2 + 1)  # too long, and not even JSON
    assert b._join(_frame(big, 2, 0, "f2")) is None and b._join(_frame(big, 2, 1, "f2")) == (b"", 0)
    for i in range(3):  # at most two events wait for their parts
        b._join(_frame(b"p", 2, 0, "w%d" % i))
    assert sorted(b.parts) == ["w1", "w2"]


LONG = "\u4e2d\u6587 \"quoted\" back\\slash\n" * 1000  # 27 KB of UTF-8, escapes in its JSON


def _pieces(data, seed):
    import random

    random.seed(seed)
    i = 0
    while i < len(data):
        k = random.randint(1, 3000)
        yield data[i:i + k]
        i += k


def test_a_long_event_is_read_in_pieces_without_its_text():
    # Issue 25, item 10: a frame over FEISHU_FRAME_MAX ended the long connection. It is
    # read in pieces (big.Reader as wsclient hands them over) and kept without its text.
    from mimi.channels.feishu import big

    ev = _event(LONG, mid="om_long")
    payload = json.dumps(ev).encode()
    assert len(payload) > 2 * limits.FEISHU_FRAME_MAX
    raw = pb.encode(pb.Frame(pb.DATA, 7, [["type", "event"], ["message_id", "fid"], ["sum", "1"]],
                             payload, seq=3, log=1 << 40))
    for seed in range(5):  # pieces of any size, escapes and characters cut anywhere
        r = big.Reader()
        for piece in _pieces(raw, seed):
            r(piece)
        f = r.frame()
        assert (f.seq, f.log, f.service, f.method) == (3, 1 << 40, 7, pb.DATA)
        assert f.get("message_id") == "fid" and len(f.payload) < 1024, f.payload
        got = json.loads(f.payload)
        msg = got["event"]["message"]
        assert msg["content"] == "" and msg["message_id"] == "om_long" and msg["chat_id"] == GROUP
        assert got["event"]["sender"]["sender_id"]["open_id"] == USER
        assert r.payload.size == len(json.dumps(json.dumps({"text": LONG})).encode()) - 2  # as written
    r = big.Reader()
    r(raw[:-5])
    raises(ValueError, r.frame)  # cut short


def test_a_long_event_tells_its_sender_and_is_not_handed_on():
    cfg.set("feishu_allow", "%s,%s" % (USER, GROUP))
    b = _bot()
    what, chat, size, meta = b._classify(_event(LONG, mid="om_l1"), 27000)
    assert (what, chat, size, meta["message_id"]) == ("too_long", USER, 27000, "om_l1")
    assert b._classify(_event(LONG, mid="om_l1"), 27000) == ("ignore",)  # redelivered: once
    assert b._classify(_event(LONG, mid="om_l2", sender=OTHER), 27000)[0] == "stranger"
    # joined from frames past FEISHU_PAYLOAD_MAX: what comes in order goes through big.Strings
    payload = json.dumps(_event(LONG * 2, mid="om_l3")).encode()
    n = 8
    step = -(-len(payload) // n)
    parts = [payload[i * step:(i + 1) * step] for i in range(n)]
    got = None
    for seq in (1, 0, 2, 3, 4, 5, 6, 7):  # one out of order while they are still kept
        got = b._join(_frame(parts[seq], n, seq, "fl"))
        assert (got is None) == (seq != 7), seq
    event = json.loads(got[0])
    assert event["event"]["message"]["content"] == "" and got[1] > limits.FEISHU_PAYLOAD_MAX
    assert b._classify(event, got[1])[:2] == ("too_long", USER)
    assert b.parts == {}


async def test_strangers_told_once_and_groups_get_names():

    cfg.set("feishu_allow", GROUP)
    b = _bot()
    for _ in range(3):
        await b._act("stranger", OTHER, None, {})
    m = bus.outbound.get_nowait()
    assert bus.outbound.get_nowait() is None
    assert m.channel == "feishu" and m.chat_id == OTHER and "allow_feishu(%s)" % OTHER in m.content
    b.names[USER] = "Ann"  # as the contact API answered before
    await b._act("agent", GROUP, "hi all", {"group": True, "open_id": USER, "message_id": "om_1"})
    m = bus.inbound.get_nowait()
    assert (m.chat_id, m.content, m.meta["sender"], m.session) == (GROUP, "hi all", "Ann", "feishu_" + GROUP)


async def test_usage_command_answers_with_the_ledger():
    cfg.set("feishu_allow", USER)
    b = _bot()
    what, chat = b._classify(_event(" /Usage ", mid="om_u"))[:2]
    assert (what, chat) == ("usage", USER)
    await b._act(what, chat, None, {})
    m = bus.outbound.get_nowait()
    assert m.chat_id == USER and m.content.startswith("LLM usage") and bus.inbound.get_nowait() is None


# ---------------------------------------------------------------- settings and REPL

async def test_the_code_loads_only_once_an_app_id_is_set():
    import sys
    from mimi import channels
    from mimi.channels import dispatch

    bus.prepare_loop()
    row = channels.get("feishu")
    channels.TABLE[:] = [row]  # only Feishu here: no gateway, no heartbeat
    ts = dispatch.tasks()
    assert len(ts) == 1 and "mimi.channels.feishu.longconn" not in sys.modules
    waiter = asyncio.create_task(ts[0])
    await asyncio.sleep_ms(10)
    cfg.set("feishu_app_id", "cli_a1b2c3")  # no reboot: it starts (and idles without a secret)
    await until(lambda: "feishu" in dispatch._lanes, "the channel to start")
    assert "mimi.channels.feishu.longconn" in sys.modules
    await until(lambda: waiter.done(), "the waiting task to end")


def test_settings_are_checked_and_the_secret_masked():
    from mimi import repl

    e = raises(ValueError, cfg.set, "feishu_app_id", "12345")
    assert "cli_" in str(e)
    e = raises(ValueError, cfg.set, "feishu_allow", "ou_abc,123")
    assert "ou_..." in str(e) and "'123'" in str(e)
    raises(ValueError, cfg.set, "feishu_allow", "ou_a-b")
    raises(ValueError, cfg.set, "feishu_api_base", "open.larksuite.com")
    with Capture() as c:
        repl.set_feishu_creds("cli_a1b2c3", "s3cr3t-s3cr3t-s3cr3t")
        repl.allow_feishu(USER)
        repl.allow_feishu(" " + GROUP)
        repl.allow_feishu(USER)
        repl.allow_feishu("12345")
        repl.config_show()
    assert cfg.get("feishu_allow") == "%s,%s" % (USER, GROUP)
    assert "already allowed" in c.text and "Error: feishu_allow" in c.text
    assert "s3cr3t-s3cr3t" not in c.text and "s3cr****" in c.text
    assert cfg.get("feishu_api_base") == "https://open.feishu.cn"
    cfg.set("feishu_api_base", "https://open.larksuite.com/")
    assert cfg.get("feishu_api_base") == "https://open.larksuite.com"
    cfg.set("feishu_allow", "")
    assert "allow_feishu(<id>)" in " ".join(cfg.missing())


def test_feishu_send_on_the_repl_checks_first():
    from mimi import repl

    with Capture() as c:
        repl.feishu_send("12345", "hi")
        repl.feishu_send(USER, "hi")
    assert "open_id (ou_...)" in c.text and "set_feishu_creds" in c.text


# ---------------------------------------------------------------- against the fake

async def control(what, obj=None):
    return await tghttp.request_json(fs_()["base_url"], "POST" if obj is not None else "GET",
                                     "/_control/" + what, obj)


def configure():
    f = fs_()
    cfg.update({"feishu_app_id": f["app_id"], "feishu_app_secret": f["app_secret"],
                "feishu_api_base": f["base_url"], "feishu_allow": "%s,%s" % (USER, GROUP)})


async def test_sends_with_token_cache_refresh_and_rate_limits():
    from mimi.channels.feishu import longconn as feishu

    configure()
    b = feishu.Feishu()
    assert await b.send_text(USER, "plain one")
    assert await b.send_text(GROUP, "**rich** two")
    st = await control("state")
    assert st["token_calls"] == 1  # cached
    assert [(m["receive_id_type"], m["msg_type"], m["visible"]) for m in st["sent"]] == [
        ("open_id", "text", "plain one"), ("chat_id", "post", "**rich** two")]
    await control("expire", {})  # Feishu forgets the token early: 99991663, renewed, sent once
    assert await b.send_text(USER, "after expiry")
    await control("fail", {"status": 429, "code": 99991400, "reset": 1})
    assert await b.send_text(USER, "after a rate limit")
    await control("fail", {"status": 400, "code": 230020, "msg": "This operation triggers the frequency limit."})
    assert await b.send_text(USER, "after 230020")
    await control("fail", {"status": 400, "code": 230001, "if_msg_type": "post",
                           "msg": "invalid message content"})
    assert await b.send_text(USER, "**refused as post**")
    st = await control("state")
    assert st["token_calls"] == 2
    assert [m["visible"] for m in st["sent"][2:]] == ["after expiry", "after a rate limit", "after 230020",
                                                      "**refused as post**"]
    assert st["sent"][-1]["msg_type"] == "text"
    codes = [c[2] for c in st["calls"] if c[1] == "/open-apis/im/v1/messages"]
    assert codes == [0, 0, 99991663, 0, 99991400, 0, 230020, 0, 230001, 0], codes
    # a long answer: several messages, each under the limit, in order
    limits.FEISHU_MSG_MAX = 600
    para = "The quick brown fox jumps over the lazy dog. " * 10
    assert await b.send_text(USER, "\n\n".join("Part %d. %s" % (i, para) for i in range(4)))
    st = await control("state")
    parts = st["sent"][6:]
    assert [p["visible"][:7] for p in parts] == ["Part 0.", "Part 1.", "Part 2.", "Part 3."]
    assert st["violations"] == []


def _three_parts():
    """A configured bot whose messages hold 600 bytes, and a reply of three such parts."""
    from mimi.channels.feishu import longconn as feishu

    configure()
    limits.FEISHU_MSG_MAX = 600
    para = "The quick brown fox jumps over the lazy dog. " * 10
    return feishu.Feishu(), "\n\n".join("Part %d. %s" % (i, para) for i in range(3))


async def test_parts_refused_for_good_are_told_once_after_the_reply():
    # a part Feishu refuses for good (here: too long even as text) is not sent again, and
    # the person is told once, after the parts that went, which parts are missing and
    # why; a user who stopped the bot (230053) cannot be told: the refusal is logged
    from mimi import log

    b, reply = _three_parts()
    why = "The length of the message content reaches its limit."
    await control("fail", {"status": 400, "code": 230025, "msg": why, "after": 1})
    assert not await b.send_text(USER, reply)
    st = await control("state")
    got = [m["visible"][:7] if m["visible"].startswith("Part") else m["visible"] for m in st["sent"]]
    assert got == ["Part 0.", "Part 2.", "(part 2 of 3 could not be sent: %s)" % why], got
    assert st["sent"][-1]["msg_type"] == "text"
    n = len([c for c in st["calls"] if c[1] == "/open-apis/im/v1/messages"])
    assert n == 4, n  # 3 parts (none sent twice) and the line
    stopped = "The user has stopped the bot from sending messages."
    await control("fail", {"status": 400, "code": 230053, "msg": stopped, "times": 9})
    assert not await b.send_text(USER, reply)
    st = await control("state")
    assert len(st["sent"]) == 3 and len([c for c in st["calls"] if c[1] == "/open-apis/im/v1/messages"]) == n + 3
    assert stopped in "\n".join(log.recent())
    assert st["violations"] == []


async def _through_a_lane(b, text):
    """A reply pushed through a dispatcher lane (its retry of a reply that found no room
    included) -> what Feishu was sent."""
    from mimi.channels import dispatch
    from mimi.services import wifi

    if not wifi.online():  # the host's always-connected WLAN: online at once (replies wait for it)
        asyncio.create_task(wifi.supervisor.run())
    lane = dispatch.Lane("feishu", b.send)
    lane.push(bus.Msg("feishu", USER, text))
    await until(lambda: lane.task is None, "the lane's task ended")
    return (await control("state"))["sent"]


async def test_a_reply_whose_rest_finds_no_room_is_not_sent_twice():
    # the heap runs out while a later part is made, or before it goes: a part went, so
    # the reply is not handed back to the dispatcher (which would send it again whole,
    # the first part twice), nor is the part left out unsaid: the chat is told
    from mimi.channels import sending
    from mimi.channels.feishu import longconn as feishu

    b, text = _three_parts()
    content, calls = fmt.content, []

    def failing(*a):
        calls.append(1)
        if len(calls) == 2:
            raise MemoryError("memory allocation failed, allocating 1200 bytes")
        return content(*a)

    fmt.content = failing
    try:
        sent = await _through_a_lane(b, text)
    finally:
        fmt.content = content
    seen = [m["visible"][:40] for m in sent]
    assert len(seen) == 2 and seen[0].startswith("Part 0.") and seen[1] == feishu.NO_ROOM[:40], seen
    deliver, calls = sending.deliver, []

    async def no_room(*a):  # (patched in the module the channel loads when it sends)
        calls.append(1)
        if len(calls) == 2:
            raise MemoryError("memory allocation failed, allocating 1200 bytes")
        return await deliver(*a)

    sending.deliver = no_room
    try:
        sent = await _through_a_lane(b, text)
    finally:
        sending.deliver = deliver
    seen = [m["visible"][:40] for m in sent[2:]]
    assert len(seen) == 2 and seen[0].startswith("Part 0.") and seen[1] == feishu.NO_ROOM[:40], seen


async def test_a_message_whose_answer_finds_no_room_went_and_is_not_sent_again():
    from mimi.channels.feishu import longconn as feishu

    configure()
    b = feishu.Feishu()
    api = b._api()
    await api.tenant_token()
    request = api._client().request

    async def unread(*a):
        await request(*a)  # it went; reading the answer found no room
        raise MemoryError("memory allocation failed, allocating 4096 bytes")

    api.client.request = unread
    sent = await _through_a_lane(b, "just once")
    assert [m["visible"] for m in sent] == ["just once"], sent


async def test_nothing_is_sent_to_an_id_outside_feishu_allow():
    # issue 16 item 5: a cron job (cron.json written by hand) for an id that is not
    # allowed must not make the board message it; the channel's own line to a
    # stranger (its id) still goes out
    from mimi import log
    from mimi.channels.feishu import longconn as feishu

    from mimi.services import wifi

    if not wifi.online():  # the host's always-connected WLAN: online at once (replies wait for it)
        asyncio.create_task(wifi.supervisor.run())
    configure()
    b = feishu.Feishu()
    await b.send(bus.Msg("feishu", OTHER, "SPAM from the board"))
    await b._act("stranger", OTHER, None, {})
    await b.send(bus.outbound.get_nowait())
    await b.send(bus.Msg("feishu", USER, "for the owner"))
    st = await control("state")
    assert [(m["receive_id"], m["visible"][:10]) for m in st["sent"]] == [
        (OTHER, "This bot i"), (USER, "for the ow")]
    lines = "\n".join(log.recent())
    assert "not in feishu_allow" in lines and "SPAM" in lines, lines


async def test_long_connection_acks_pings_and_hands_messages_over():
    from mimi.channels.feishu import longconn as feishu
    from mimi.services import wifi

    if not wifi.online():
        asyncio.create_task(wifi.supervisor.run())
    bus.prepare_loop()
    configure()
    await control("config", {"ping_interval": 1, "names": {USER: "Ann"}})
    b = feishu.Feishu()
    task = asyncio.create_task(b.run())
    await until(lambda: b.bot_id, "the bot's identity")
    st = await until(_state_when(lambda s: s["open"] == 1 and s["pings"] >= 1), "connected and pinging")
    assert b.bot_id == fs_()["bot_open_id"] and b.ping_s == limits.FEISHU_PING_MIN_S  # the pong's 1 s, clamped
    mid = (await control("event", {"text": "hello \U0001F600 \u4e2d", "open_id": USER}))["message_id"]
    m = await until(bus.inbound.get_nowait, "the message on bus.inbound")
    assert (m.channel, m.chat_id, m.content) == ("feishu", USER, "hello \U0001F600 \u4e2d")
    assert m.meta["message_id"] == mid and m.meta["group"] is False
    # a group message addressed to the bot, split over three frames
    bot = fs_()["bot_open_id"]
    await control("event", {"text": "@_user_1 status?", "chat_type": "group", "open_id": USER,
                            "chat_id": GROUP, "mentions": [["@_user_1", bot, "Mimi"]], "parts": 3})
    m = await until(bus.inbound.get_nowait, "the group message")
    assert (m.chat_id, m.content, m.meta["sender"]) == (GROUP, "status?", "Ann")
    st = await until(_state_when(lambda s: len(s["acks"]) == 2), "two ACKs")
    assert [a["code"] for a in st["acks"]] == [200, 200] and st["violations"] == []
    assert st["acks"][1]["seq"] in ("0", "1", "2")  # the frame that completed the event
    # settings change: the connection is opened again with them
    n = st["connections"]
    cfg.set("feishu_app_secret", fs_()["app_secret"])
    await until(_state_when(lambda s: s["connections"] == n + 1 and s["open"] == 1), "reconnected")
    task.cancel()


async def test_an_ended_long_connection_is_not_held_while_it_waits_to_reconnect():
    # the long connection the server dropped (with what it holds: a message in parts, its
    # buffers) is let go while the channel waits to connect again, not held by its frame
    import gc
    from mimi import log
    from mimi.channels.feishu import longconn as feishu
    from mimi.services import wifi

    if not wifi.online():
        asyncio.create_task(wifi.supervisor.run())
    bus.prepare_loop()
    configure()
    limits.FEISHU_BACKOFF_MIN_S = 30
    b = feishu.Feishu()
    session, held = b._session, []

    async def hold(conn, service):
        conn.hog = bytearray(40000)  # (what a connection may hold)
        gc.collect()
        held.append(gc.mem_alloc())
        return await session(conn, service)

    b._session = hold
    from mimi.services import loopwatch

    loopwatch.install()  # as the firmware runs it (dispatch.start()): a task it starts (the
    task = asyncio.create_task(loopwatch.watch("feishu", b.run()))  # pinger) lets go once over
    await until(_state_when(lambda s: s["open"] == 1), "connected")
    await control("drop", {})
    await until(lambda: any("reconnecting in" in x for x in log.recent()), "the connection's end")
    gc.collect()
    assert held and gc.mem_alloc() < held[0] - 30000, (held, gc.mem_alloc())
    task.cancel()


def _state_when(pred):
    async def check():
        st = await control("state")
        return st if pred(st) else None
    return check


async def test_a_tenant_without_long_connection_is_told_plainly():
    from mimi.channels.feishu import longconn as feishu
    from mimi import log

    configure()
    await control("config", {"long_connection": False})
    b = feishu.Feishu()
    wait = None
    try:
        await b._connect()
    except Exception as e:
        wait = b._connect_failed(e, 1)
    assert wait == limits.FEISHU_REFUSED_S
    line = [ln for ln in log.recent(5) if "offers no long connection" in ln]
    assert line and fs_()["base_url"] in line[0]


def test_feishu_send_on_the_repl_with_the_loop_stopped():
    """After Ctrl-C no loop runs: feishu_send() sends from the REPL itself."""
    from mimi import repl

    configure()
    with Capture() as c:
        repl.feishu_send(GROUP, "from the **REPL**")
    assert "OK: sent to " + GROUP in c.text, c.text
    st = asyncio.run(control("state"))
    m = st["sent"][-1]
    assert (m["receive_id"], m["msg_type"], m["visible"]) == (GROUP, "post", "from the **REPL**")


async def test_the_api_and_the_long_connection_go_through_the_proxy():
    from mimi.channels.feishu import longconn as feishu

    env = support.fixture("http_env")
    configure()
    cfg.update({"proxy_host": "127.0.0.1", "proxy_port": env["connect"], "proxy_type": "http"})
    b = feishu.Feishu()
    conn, service = await b._connect()  # endpoint and bot info, then the WebSocket
    await conn.close()
    assert await b.send_text(USER, "via the proxy")
    stats = await tghttp.request_json("http://127.0.0.1:%d" % env["control"], "GET", "/stats")
    api = "127.0.0.1:" + fs_()["base_url"].rsplit(":", 1)[1]
    targets = stats["connect"]["targets"]
    assert targets.count(api) == 2, targets  # one API connection, then one for the reply
    assert len(targets) == 3 and targets[1] != api  # the long connection, to its own port
    st = await control("state")
    assert st["sent"][-1]["visible"] == "via the proxy" and st["connections"] == 1
