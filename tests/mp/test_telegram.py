# The Telegram channel (lib/mimi/channels/telegram.py) against the fake Bot API
# (tests/fakes/telegram.py): poller, access control, commands, replies. The agent
# is not needed: what reaches it is read from bus.inbound.
import json
import asyncio
import mimi
import support
from tghttp import until
from mimi import bus, limits, fs, log
from mimi.config import settings as config
from mimi.channels import dispatch
from mimi.channels.telegram import poller as telegram
from mimi.services import wifi
from test_wifi import Clock, FakeWLAN
from tgbot import (cfg, ALLOWED, CHAT, tg, control, state, update, fail, setup, make_bot,  # noqa: F401
                   started, inbound, sent_to, _confirmed, CJK, _flood_then_owner)

FIXTURES = ("fake_telegram",)
HEAPSIZE = "2m"
TIMEOUT = 120


async def test_allowed_text_reaches_agent_and_offset_saved():
    b, task = await started()
    uid = await update(chat_id=ALLOWED, text="hello \ud83d\ude00 \u4e2d\u6587")
    m = await inbound()
    assert m.channel == "telegram" and m.chat_id == str(ALLOWED) and m.session == "tg_42"
    assert m.content == "hello \U0001F600 \u4e2d\u6587", repr(m.content)  # surrogates joined
    assert m.meta["message_id"] == 1
    # the offset was written before the message was handed over
    d = json.loads(support.read(limits.TG_OFFSET_PATH))
    assert d["offset"] == uid + 1
    st = await until(lambda: _confirmed(uid), "offset confirmed")
    calls = [c for c in st["calls"] if c["method"] == "getUpdates"]
    p = calls[-1]["params"]
    assert p["timeout"] == limits.TG_POLL_TIMEOUT_S and p["allowed_updates"] == ["message"]
    assert p["limit"] <= 10
    assert st["sent"] == []
    task.cancel()


async def test_stranger_told_once_nothing_else():
    b, task = await started()
    await update(chat_id=777, text="hi")
    st = await until(lambda: _sent_n(1), "reply to stranger")
    m = st["sent"][0]
    assert m["chat_id"] == 777 and "777" in m["text"] and "allow_chat(777)" in m["text"]
    uid = await update(chat_id=777, text="again")
    await until(lambda: _confirmed(uid), "second poll")
    await update(chat_id=ALLOWED, text="marker")
    await inbound()  # the allowed message got through; the stranger's did not
    assert bus.inbound.get_nowait() is None
    st = await state()
    assert len(sent_to(st, 777)) == 1
    task.cancel()


async def test_stranger_writes_no_file():
    b, task = await started()
    uid = await update(chat_id=778, text="hi")
    await until(lambda: _sent_n(1), "reply to stranger")
    await until(lambda: _confirmed(uid), "confirmed")
    assert not fs.exists(limits.TG_OFFSET_PATH)
    assert not fs.exists("/spiffs/sessions/tg_778.jsonl")
    task.cancel()


async def _sent_n(n):
    st = await state()
    return st if len(st["sent"]) >= n else None


async def test_commands():
    from mimi.memory import sessions

    sessions.append("tg_42", "user", "remember me")
    sessions.append("tg_42", "assistant", "ok")
    sessions.flush()
    assert sessions.load("tg_42")
    b, task = await started()
    await update(chat_id=ALLOWED, text="/start")
    await update(chat_id=ALLOWED, text="/help")
    await update(chat_id=ALLOWED, text="/reset")
    st = await until(lambda: _sent_n(3), "three answers")
    texts = [m["visible"] for m in st["sent"]]
    assert "/reset" in texts[0] and "MimiClaw" in texts[0]
    assert "/help" in texts[1]
    assert "cleared" in texts[2].lower()
    assert sessions.load("tg_42") == []
    assert bus.inbound.get_nowait() is None
    task.cancel()


async def test_non_text_gets_text_only():
    b, task = await started()
    await update(chat_id=ALLOWED, kind="photo")
    await update(chat_id=ALLOWED, kind="sticker")
    await update(chat_id=ALLOWED, kind="voice")
    st = await until(lambda: _sent_n(3), "three answers")
    assert all("text" in m["text"].lower() for m in st["sent"])
    assert bus.inbound.get_nowait() is None
    task.cancel()


async def test_group_mention_or_reply_only():
    cfg.set("tg_allow", "42,-100")
    b, task = await started()
    await update(chat_id=-100, chat_type="group", from_id=5, text="just chatting")
    await update(chat_id=-100, chat_type="group", from_id=5, text="@%s what time is it?" % tg()["username"])
    m = await inbound()
    assert m.chat_id == "-100" and m.content == "what time is it?", m.content
    assert m.meta["group"] and m.meta["sender"] == "Ann"  # history lines carry the speaker
    await update(chat_id=-100, chat_type="group", from_id=6, first_name="Bob", text="and now?",
                 reply_to_bot=True)
    m = await inbound()
    assert m.content == "and now?" and m.meta["sender"] == "Bob"
    # a group outside tg_allow that does not address the bot: silence
    await update(chat_id=-200, chat_type="group", from_id=5, text="hello all")
    await update(chat_id=-200, chat_type="group", from_id=5, text="@%s hi" % tg()["username"])
    st = await until(lambda: _sent_n(1), "stranger group told")
    assert st["sent"][0]["chat_id"] == -200
    assert bus.inbound.get_nowait() is None
    task.cancel()


async def test_busy_when_inbound_full():
    for i in range(bus.inbound.size):
        assert bus.inbound.put(bus.Msg("websocket", "x%d" % i, "fill"))
    b, task = await started()
    await update(chat_id=ALLOWED, text="hi")
    st = await until(lambda: _sent_n(1), "busy reply")
    assert "busy" in st["sent"][0]["text"].lower()
    task.cancel()


async def test_reply_typing_split_and_order():
    b, task = await started()
    await update(chat_id=ALLOWED, text="hi")
    await inbound()
    await b.send(bus.Msg("telegram", ALLOWED, "working", kind=bus.STATUS))
    para = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 54).strip()
    text = "\n\n".join(["**Part %d** " % i + para for i in range(3)])
    assert len(text) > 9000
    await b.send(bus.Msg("telegram", ALLOWED, text))
    st = await state()
    assert st["actions"], st
    a = st["actions"][0]
    assert a["chat_id"] == ALLOWED and a["action"] == "typing", a
    assert a["t"] <= st["sent"][0]["t"]
    assert len(st["sent"]) == 3, [m["visible"][:30] for m in st["sent"]]
    for i, m in enumerate(st["sent"]):
        assert m["parse_mode"] == "HTML" and m["visible"].startswith("Part %d" % i)
        assert len(m["visible"]) <= 4096
    assert CHAT not in b.typing  # typing stops with the reply
    import sys  # and the sending code is not kept between replies

    assert "mimi.channels.telegram.send" not in sys.modules and "mimi.channels.telegram.format" not in sys.modules
    assert b.send_api is None
    task.cancel()


async def test_a_reply_whose_rest_finds_no_room_is_not_sent_twice():
    # the heap runs out while the second part is made (outside its sending): the first
    # part went, so the reply is not handed back to the dispatcher (which would send it
    # again whole, the first part twice); the chat is told that the rest did not fit
    await _second_part_finds_no_room(False)


async def test_a_part_sent_again_as_plain_text_counts_as_sent():
    # the same when the first part went again as plain text (its HTML refused): it
    # counted as not sent, and the dispatcher sent the reply again whole
    await _second_part_finds_no_room(True)


async def _second_part_finds_no_room(refused):
    from mimi import channels

    b, task = await started()
    await update(chat_id=ALLOWED, text="hi")
    await inbound()
    para = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 54).strip()
    text = "\n\n".join(["**Part %d** " % i + para for i in range(3)])
    fmt = channels.load("telegram.format")
    render, calls = fmt.render_html, []

    def failing(runs):
        calls.append(1)
        if len(calls) == 2:
            raise MemoryError("memory allocation failed, allocating 4097 bytes")
        return render(runs)

    fmt.render_html = failing
    if refused:
        await fail(method="sendMessage", status=400, if_parse_mode=True)
    st = await _through_a_lane(b, text)
    seen = [(m["parse_mode"], m["visible"][:40]) for m in st["sent"]]
    assert len(st["sent"]) == 2 and st["sent"][0]["visible"].startswith("Part 0"), seen
    assert st["sent"][0]["parse_mode"] == (None if refused else "HTML"), seen
    assert st["sent"][1]["visible"].startswith("Sorry, the rest of my answer did not fit"), seen
    task.cancel()


async def _through_a_lane(b, text):
    """The reply pushed through a dispatcher lane (its retry of a reply that found no room
    included) -> the fake's state once nothing more comes."""
    lane = dispatch.Lane("telegram", b.send, b.owe)
    lane.start()  # nothing to send: no task
    assert lane.task is None
    lane.push(bus.Msg("telegram", ALLOWED, text))
    await until(lambda: lane.task is None, "the lane's task ended")  # all sent: the task ended
    await asyncio.sleep_ms(300)  # (nothing more comes)
    return await state()


async def test_a_plain_text_resend_that_finds_no_room_is_not_lost():
    # the first part's HTML is refused and its plain text finds no room in the heap
    # before it goes: the part goes in smaller pieces, as one whose HTML found no room
    # does (it was logged and dropped, the person left with the rest of the reply)
    from mimi.channels import sending

    b, task = await started()
    await update(chat_id=ALLOWED, text="hi")
    await inbound()
    para = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 54).strip()
    text = "\n\n".join(["**Part %d** " % i + para for i in range(3)])
    deliver, calls = sending.deliver, []

    async def failing(*a):
        calls.append(1)
        if len(calls) == 2:  # the plain text, after the refused HTML
            raise MemoryError("memory allocation failed, allocating 4097 bytes")
        return await deliver(*a)

    sending.deliver = failing
    await fail(method="sendMessage", status=400, if_parse_mode=True)
    try:
        st = await _through_a_lane(b, text)
    finally:
        sending.deliver = deliver
    seen = [(m["parse_mode"], m["visible"][:40]) for m in st["sent"]]
    assert [v[:6] for _, v in seen[-2:]] == ["Part 1", "Part 2"], seen
    assert len(seen) > 3 and all(p is None for p, _ in seen[:-2]), seen
    assert "".join(m["visible"] for m in st["sent"][:-2]).replace(" ", "") == \
        ("Part 0 " + para).replace(" ", ""), seen  # (cut at spaces)
    task.cancel()


async def test_a_message_that_found_no_room_before_it_went_is_not_taken_as_sent():
    # the send connection's last request ("typing") went out; the next one finds no room
    # before a byte of it is written: it must not be taken as sent (seen at 208 KB: the
    # apology reported sent, Telegram never saw it)
    from mimi import channels

    b, task = await started()
    await update(chat_id=ALLOWED, text="hi")
    await inbound()
    tgsend = channels.load("telegram.send")
    api = tgsend._api(b)
    await api.call("sendChatAction", {"chat_id": ALLOWED, "action": "typing"})
    request = api.client.request

    async def no_room(*args, **kw):
        raise MemoryError("memory allocation failed, allocating 216 bytes")

    api.client.request = no_room
    try:
        await tgsend.call(api, "sendMessage", {"chat_id": ALLOWED, "text": "sorry"})
        got = "taken as sent"
    except MemoryError:
        got = "raised"
    finally:
        api.client.request = request
    assert got == "raised"
    task.cancel()


async def test_entity_error_falls_back_to_plain_once():
    b, task = await started()
    await update(chat_id=ALLOWED, text="hi")
    await inbound()
    await fail(method="sendMessage", status=400, if_parse_mode=True)
    await b.send(bus.Msg("telegram", ALLOWED, "a **bold** claim & [link](https://e.org)"))
    st = await state()
    assert len(st["sent"]) == 1
    m = st["sent"][0]
    assert m["parse_mode"] is None and m["text"] == "a bold claim & link (https://e.org)", m
    # another error is not retried as plain text
    await fail(method="sendMessage", status=403, description="Forbidden: bot was blocked by the user")
    await b.send(bus.Msg("telegram", ALLOWED, "second"))
    st = await state()
    assert len(st["sent"]) == 1
    assert len([c for c in st["calls"] if c["method"] == "sendMessage"]) == 3
    task.cancel()


async def test_only_entity_errors_are_retried_as_plain_text():
    # SPEC §8: "retried as plain text only when Telegram rejects the entities". A 400
    # for anything else (too long, chat gone, empty text) must not go out again without
    # its formatting: it would fail again, or worse, show the user markup-less text.
    b, task = await started()
    await update(chat_id=ALLOWED, text="hi")
    await inbound()
    # The chat is told the reply was refused (plain text), unless the chat is gone.
    for why in ("Bad Request: message is too long", "Bad Request: chat not found",
                "Bad Request: message text is empty"):
        await fail(method="sendMessage", status=400, description=why)
        await b.send(bus.Msg("telegram", ALLOWED, "a **bold** claim"))
    st = await state()
    assert [m["text"] for m in st["sent"]] == [
        "(this reply could not be sent: Bad Request: message is too long)",
        "(this reply could not be sent: Bad Request: message text is empty)"], st["sent"]
    sends = [c for c in st["calls"] if c["method"] == "sendMessage"]
    assert len(sends) == 5 and [c["params"].get("parse_mode") for c in sends] == ["HTML", None, "HTML", "HTML", None]
    lines = "\n".join(log.recent())
    assert "message is too long" in lines and "plain text" not in lines
    # the entity error itself still is (the guard is not simply "never")
    await fail(method="sendMessage", status=400, if_parse_mode=True)
    await b.send(bus.Msg("telegram", ALLOWED, "a **bold** claim"))
    st = await state()
    assert [m["text"] for m in st["sent"][2:]] == ["a bold claim"]
    task.cancel()


async def test_nothing_is_sent_to_a_chat_outside_tg_allow():
    # issue 16 item 5: a cron.json written by hand (or by an older firmware) named a
    # chat that is not allowed, and the board messaged it. The sender checks too.
    b, task = await started()
    await update(chat_id=777, text="hi")  # a stranger the fake knows: sending would work
    await until(lambda: _sent_n(1), "the stranger told its id")
    await update(chat_id=ALLOWED, text="hi")
    await inbound()
    dispatch.register("telegram", b.send)
    dtask = asyncio.create_task(dispatch.run())
    for kind in (bus.STATUS, bus.REPLY):
        assert bus.outbound.put(bus.Msg("telegram", "777", "SPAM from the board", kind))
    assert bus.outbound.put(bus.Msg("telegram", str(ALLOWED), "for the owner"))
    st = await until(lambda: _sent_n(2), "the allowed reply")
    assert [(m["chat_id"], m["visible"]) for m in st["sent"]] == [
        (777, st["sent"][0]["visible"]), (ALLOWED, "for the owner")]
    assert st["actions"] == []
    lines = "\n".join(log.recent())
    assert "not in tg_allow" in lines and "SPAM" in lines, lines
    dtask.cancel()
    task.cancel()


async def test_send_429_retry_after_honoured():
    b, task = await started()
    await update(chat_id=ALLOWED, text="hi")
    await inbound()
    await fail(method="sendMessage", status=429, retry_after=1)
    await b.send(bus.Msg("telegram", ALLOWED, "after the wait"))
    st = await state()
    sends = [c for c in st["calls"] if c["method"] == "sendMessage"]
    assert len(sends) == 2 and len(st["sent"]) == 1
    assert sends[1]["t"] - sends[0]["t"] >= 0.9
    task.cancel()


async def test_poll_survives_409_429_502():
    b, task = await started()
    await fail(method="getUpdates", status=409)
    await fail(method="getUpdates", status=429, retry_after=1)
    await fail(method="getUpdates", status=502)
    await update(chat_id=ALLOWED, text="still there?")
    m = await inbound()
    assert m.content == "still there?"
    task.cancel()


async def test_offset_survives_restart():
    saves = []  # whether each save of the offset rewrote the file in place
    write = fs.write_atomic

    def spy(path, data, dirs=True, replace=False):
        if path == limits.TG_OFFSET_PATH:
            saves.append(replace)
        return write(path, data, dirs, replace)

    fs.write_atomic = spy
    try:
        b, task = await started()
        await update(chat_id=ALLOWED, text="one")
        await inbound()
        await update(chat_id=ALLOWED, text="one more")
        await inbound()
        task.cancel()
        mimi.run("channels.telegram.connect", "close", b)
        # a new instance (as after a reboot) starts from the saved offset
        b2, task2 = await started()
        await update(chat_id=ALLOWED, text="two")
        m = await inbound()
        assert m.content == "two"
        assert bus.inbound.get_nowait() is None
        task2.cancel()
    finally:
        fs.write_atomic = write
    # made once (a temporary file renamed: a new file), then rewritten in place, also
    # by the instance that found it at its start (a rename in / read the flash ~300 times)
    assert saves == [False, True, True], saves


async def test_duplicate_message_dropped():
    b, task = await started()
    upd = {"message": {"message_id": 9, "date": 1, "text": "dup",
                       "chat": {"id": ALLOWED, "type": "private"}, "from": {"id": ALLOWED}}}
    await control("update", {"raw": upd})
    await control("update", {"raw": upd})
    await inbound()
    await update(chat_id=ALLOWED, text="after")
    m = await inbound()
    assert m.content == "after"
    task.cancel()


async def test_no_token_idle_until_set():
    cfg.set("tg_token", "")
    b = make_bot()
    task = asyncio.create_task(b.run())
    await asyncio.sleep_ms(300)
    st = await state()
    assert st["calls"] == []
    import sys

    # the waits (token, WiFi, clock) are connect.py's, held only meanwhile
    assert "mimi.channels.telegram.connect" in sys.modules
    cfg.set("tg_token", tg()["token"])
    await until(lambda: b.username, "getMe after the token was set")
    await until(lambda: b.polling, "polling")
    assert "mimi.channels.telegram.connect" not in sys.modules
    task.cancel()


async def test_typing_renewed_until_reply():
    limits.TG_TYPING_S = 1
    b, task = await started()
    await update(chat_id=ALLOWED, text="hi")
    await inbound()
    await b.send(bus.Msg("telegram", ALLOWED, "working", kind=bus.STATUS))
    await until(lambda: _actions_n(3), "typing renewed")
    await b.send(bus.Msg("telegram", ALLOWED, "done"))
    n = len((await state())["actions"])
    await asyncio.sleep_ms(2500)
    st = await state()
    assert len(st["actions"]) == n  # no typing after the reply
    assert st["sent"][-1]["visible"] == "done"
    task.cancel()


async def _progress_turn(b, answer, steps=(("web_search", "weather Lisbon"),)):
    """A turn whose progress message shows at the first renewal (after 0 s), then its
    steps, then the answer. -> the fake's state."""
    limits.TG_TYPING_S = 1
    limits.TG_PROGRESS_AFTER_S = 0
    limits.TG_EDIT_MIN_S = 0
    await update(chat_id=ALLOWED, text="hi")
    await inbound()
    await b.send(bus.Msg("telegram", ALLOWED, "working", kind=bus.STATUS))
    await until(lambda: _sent_n(1), "the progress message")
    for step, detail in steps:
        await b.send(bus.Msg("telegram", ALLOWED, "working", bus.STATUS, {"step": step, "detail": detail}))
    # shown at once, or at the next renewal when one was under way
    await until(lambda: _edits_n(len(steps)), "the steps shown")
    await b.send(bus.Msg("telegram", ALLOWED, answer))
    return await state()


def test_a_step_is_said_in_its_tool_words():
    from mimi.channels.telegram import status

    st = status.Status(ALLOWED)
    for step, detail, said in (("web_search", "x", "searching the web: x"), ("gpio_read_all", "", "reading the pins"),
                               ("gpio_read", "", "reading a pin"), ("get_current_time", "", "checking the time"),
                               ("device_read", "t", "working on device_read: t"), ("read", "", "working on read")):
        st.step(step, detail)
        assert st.text == said + "\u2026", (step, st.text)


async def test_a_slow_turn_shows_one_progress_message_that_becomes_the_answer():
    b, task = await started()
    st = await _progress_turn(b, "**Sunny** and " + "more. " * 900)  # two parts
    assert len(st["sent"]) == 2 and st["deleted"] == [], st["sent"]
    first, second = st["sent"]
    assert first["visible"].startswith("Sunny and more.") and first["parse_mode"] == "HTML"
    edits = [e["text"] for e in st["edits"]]
    assert len(edits) == 2 and edits[0] == "searching the web: weather Lisbon\u2026", edits
    assert edits[1].startswith("<b>Sunny</b> and more.")  # the first part, edited into place
    assert second["visible"].startswith("more.") and not second.get("edited")
    assert CHAT not in b.typing and b.send_api is None
    task.cancel()


async def test_a_long_answer_in_pieces_goes_out_as_the_whole_would():
    # a long streamed answer is a tuple of str pieces (bus.pieces()): formatted, sent and
    # its echo read in pieces (Telegram echoes each message whole: only message_id is
    # kept), its first part edited into the progress message, and on an entity error its
    # part goes again as plain text
    b, task = await started()
    para = ("Lorem *ipsum* dolor sit amet, consectetur adipiscing elit. " * 54).strip()
    text = "\n\n".join(["**Part %d** " % i + para for i in range(3)])
    pieces = tuple(text[i:i + 700] for i in range(0, len(text), 700))
    st = await _progress_turn(b, pieces)
    shown = [m for m in st["sent"] if not m.get("deleted")]
    assert [m["visible"][:6] for m in shown] == ["Part 0", "Part 1", "Part 2"], st["sent"]
    assert "".join(m["visible"] for m in shown).replace("\n", "") == \
        text.replace("**", "").replace("*", "").replace("\n", "")
    assert shown[0]["edited"] and all(m["parse_mode"] == "HTML" for m in shown)
    await fail(method="sendMessage", status=400, if_parse_mode=True)
    await b.send(bus.Msg("telegram", ALLOWED, pieces))
    st = await state()
    plain = [m for m in st["sent"] if not m.get("deleted")][3:]
    assert plain[0]["parse_mode"] is None and plain[0]["visible"].startswith("Part 0 Lorem ipsum dolor")
    assert [m["visible"][:6] for m in plain] == ["Part 0", "Part 1", "Part 2"]
    task.cancel()


async def test_a_long_answer_lets_its_pieces_go_as_its_parts_go_out():
    # once a part went out the reply is never sent again: each piece the formatter has
    # read is let go (send._feed), so the parts sent hold no heap
    b, task = await started()
    para = ("Lorem *ipsum* dolor sit amet, consectetur adipiscing elit. " * 54).strip()
    text = "\n\n".join(["**Part %d** " % i + para for i in range(3)])
    pieces = tuple(text[i:i + 700] for i in range(0, len(text), 700))
    await update(chat_id=ALLOWED, text="hi")
    await inbound()
    msg = bus.Msg("telegram", ALLOWED, pieces)
    await b.send(msg)
    st = await state()
    assert [m["visible"][:6] for m in st["sent"]] == ["Part 0", "Part 1", "Part 2"], st["sent"]
    assert "".join(m["visible"] for m in st["sent"]).replace("\n", "") == \
        text.replace("**", "").replace("*", "").replace("\n", "")
    assert msg.content[:-1] == [None] * (len(pieces) - 1), msg.content
    task.cancel()


async def test_a_turn_past_the_typing_limit_still_ends_in_its_progress_message():
    # TG_TYPING_MAX_S (5 minutes; 1 s here) ends the "typing", not the turn: its progress
    # message stays the chat's, the steps and the answer so far still edit it, and the
    # answer takes its place. The chat's Status went with the typing: a step started a
    # second progress message, the partials were dropped, and the answer came below the
    # progress messages left standing.
    limits.TG_TYPING_S = 1
    limits.TG_PROGRESS_AFTER_S = 0
    limits.TG_EDIT_MIN_S = 0
    limits.TG_TYPING_MAX_S = 1
    b, task = await started()
    await update(chat_id=ALLOWED, text="hi")
    await inbound()
    await b.send(bus.Msg("telegram", ALLOWED, "working", kind=bus.STATUS))
    typing = b.typing[CHAT].task
    await until(lambda: _sent_n(1), "the progress message")
    await until(typing.done, "the typing's end")
    n = len((await state())["actions"])
    await b.send(bus.Msg("telegram", ALLOWED, "working", bus.STATUS, {"step": "web_search", "detail": "weather Porto"}))
    await b.send(bus.Msg("telegram", ALLOWED, "It is sunny", bus.PARTIAL))
    await b.send(bus.Msg("telegram", ALLOWED, "**Sunny** in Lisbon"))
    st = await state()
    assert [m["visible"] for m in st["sent"] if not m.get("deleted")] == ["Sunny in Lisbon"], st["sent"]
    assert len(st["sent"]) == 1 and st["deleted"] == [], st["sent"]
    edits = [e["text"] for e in st["edits"]]
    assert edits == ["searching the web: weather Porto\u2026", "It is sunny", "<b>Sunny</b> in Lisbon"], edits
    assert len(st["actions"]) == n  # no typing after the limit
    assert CHAT not in b.typing and b.send_api is None
    task.cancel()


async def _chatting():
    """The bot started, its typing renewed every second and a progress message shown at
    once, and a message from the allowed chat taken: a turn can begin."""
    limits.TG_TYPING_S = 1
    limits.TG_PROGRESS_AFTER_S = 0
    b, task = await started()
    await update(chat_id=ALLOWED, text="hi")
    await inbound()
    return b, task


async def test_a_turn_whose_reply_never_came_leaves_no_progress_message_to_the_next():
    # a turn's first status while the chat still has the last one's (its reply never
    # reached the chat): that progress message goes, the new turn has its own
    b, task = await _chatting()
    await b.send(bus.Msg("telegram", ALLOWED, "working", kind=bus.STATUS))
    await until(lambda: _sent_n(1), "the progress message")
    old = b.typing[CHAT]
    await b.send(bus.Msg("telegram", ALLOWED, "working", kind=bus.STATUS))
    assert b.typing[CHAT] is not old and old.task.done()
    await until(lambda: _sent_n(2), "the new turn's progress message")
    await b.send(bus.Msg("telegram", ALLOWED, "the answer"))
    st = await state()
    assert [m["visible"] for m in st["sent"] if not m.get("deleted")] == ["the answer"], st["sent"]
    assert st["deleted"] == [[ALLOWED, st["sent"][0]["message_id"]]]
    assert CHAT not in b.typing and b.send_api is None
    task.cancel()


async def test_a_progress_message_that_cannot_take_the_answer_is_deleted():
    b, task = await started()
    await fail(method="editMessageText", status=400, times=2,
               description="Bad Request: message can't be edited")
    st = await _progress_turn(b, "answer", ())
    assert [m["visible"] for m in st["sent"] if not m.get("deleted")] == ["answer"]
    assert st["deleted"] == [[ALLOWED, st["sent"][0]["message_id"]]]
    task.cancel()


async def test_parts_refused_for_good_are_told_once_after_the_reply():
    # a part Telegram refuses for good (a 400 other than bad entities) is not sent again,
    # and the person is told once, after the parts that went, which parts are missing
    # and why; a chat that blocked the bot (403) cannot be told: the refusal is logged
    limits.TG_MSG_MAX = 600
    b, task = await started()
    await update(chat_id=ALLOWED, text="hi")
    await inbound()
    para = "The quick brown fox jumps over the lazy dog. " * 10
    reply = "\n\n".join("Part %d. %s" % (i, para) for i in range(4))
    await fail(method="sendMessage", status=400, description="Bad Request: message is too long", after=1, times=2)
    await b.send(bus.Msg("telegram", ALLOWED, reply))
    st = await state()
    got = [m["text"][:7] if m["text"].startswith("Part") else m["text"] for m in st["sent"]]
    assert got == ["Part 0.", "Part 3.", "(parts 2, 3 of 4 could not be sent: Bad Request: message is too long)"], got
    assert st["sent"][-1]["entities"] in (None, [])  # plain text: its words as Telegram gave them
    n = len([c for c in st["calls"] if c["method"] == "sendMessage"])
    assert n == 5, n  # 4 parts (none sent twice) and the line
    # blocked: each part refused, nothing said (the line would be refused too)
    await fail(method="sendMessage", status=403, description="Forbidden: bot was blocked by the user", times=9)
    await b.send(bus.Msg("telegram", ALLOWED, reply))
    st = await state()
    assert len(st["sent"]) == 3
    assert len([c for c in st["calls"] if c["method"] == "sendMessage"]) == n + 4
    assert "bot was blocked" in "\n".join(log.recent())
    task.cancel()


async def test_a_refused_progress_message_is_not_tried_again():
    b, task = await _chatting()
    await fail(method="sendMessage", status=400, description="Bad Request: not enough rights")
    await b.send(bus.Msg("telegram", ALLOWED, "working", kind=bus.STATUS))
    await until(lambda: _actions_n(3), "typing renewed")
    await b.send(bus.Msg("telegram", ALLOWED, "the answer"))
    st = await state()
    assert [m["visible"] for m in st["sent"]] == ["the answer"]
    assert len([c for c in st["calls"] if c["method"] == "sendMessage"]) == 2
    task.cancel()


async def test_usage_command():
    b, task = await started()
    await update(chat_id=ALLOWED, text="/usage")
    st = await until(lambda: _sent_n(1), "the usage report")
    assert st["sent"][0]["visible"].startswith("LLM usage") and bus.inbound.get_nowait() is None
    task.cancel()


async def _edits_n(n):
    st = await state()
    return st if len(st["edits"]) >= n else None


async def _actions_n(n):
    st = await state()
    return st if len(st["actions"]) >= n else None


async def _fast(ms):  # the supervisor's checks and backoff, without the real waits
    await asyncio.sleep_ms(min(ms, 20))


def _polls(st):
    return len([c for c in st["calls"] if c["method"] == "getUpdates"])


async def test_offline_pauses_polling_and_keeps_replies():
    wcfg = config.Config("/wifi-tg.json")
    wcfg.update({"wifi_ssid": "home", "wifi_pass": "password1"})
    router = FakeWLAN(Clock())  # test_wifi's scripted network.WLAN
    router.aps["home"] = ("password1", "192.168.1.50")
    wifi.supervisor = wifi.Supervisor(wlan=router, cfg=wcfg, sleep_ms=_fast)
    wtask = asyncio.create_task(wifi.supervisor.run())
    await until(wifi.online, "WiFi up")
    await control("config", {"max_poll_s": 0.2})  # short long polls: the poller loops often
    b, task = await started()
    dispatch.register("telegram", b.send)
    dtask = asyncio.create_task(dispatch.run())
    await update(chat_id=ALLOWED, text="before")
    assert (await inbound()).content == "before"

    ap = router.aps.pop("home")  # the router goes away
    router.drop()
    await until(lambda: not wifi.online(), "WiFi down")
    await until(lambda: b.paused, "poller paused")
    st = await state()
    polls, conns = _polls(st), st["connections"]
    await update(chat_id=ALLOWED, text="while offline")
    assert bus.outbound.put(bus.Msg("telegram", ALLOWED, "working", bus.STATUS))
    assert bus.outbound.put(bus.Msg("telegram", ALLOWED, "reply **one**"))
    assert bus.outbound.put(bus.Msg("telegram", ALLOWED, "reply two"))
    await until(lambda: [m.content for m in dispatch._lanes["telegram"].items] == ["reply two"],
                "reply one held by the sender, reply two queued behind it")
    await asyncio.sleep_ms(500)
    st = await state()
    assert _polls(st) == polls, "polled while offline"
    assert st["sent"] == [] and st["actions"] == []  # nothing tried, nothing dropped
    assert bus.inbound.get_nowait() is None
    assert wifi.supervisor.retries > 0  # still trying to reconnect

    router.aps["home"] = ap
    await until(wifi.online, "WiFi back")
    st = await until(lambda: _sent_n(2), "held replies delivered")
    assert [m["visible"] for m in st["sent"]] == ["reply one", "reply two"]
    assert st["sent"][0]["parse_mode"] == "HTML"
    assert (await inbound()).content == "while offline"  # polling resumed
    st = await state()
    assert st["connections"] >= conns + 2  # both keep-alive connections were renewed
    lines = "\n".join(log.recent())
    assert "polling paused" in lines and "polling resumes" in lines
    assert "dropped" not in lines
    for t in (task, dtask, wtask):
        t.cancel()


async def test_unreachable_api_holds_the_reply_until_it_gets_through():
    b, task = await started()
    await update(chat_id=ALLOWED, text="hi")
    await inbound()
    assert b.send_api is None  # opened for a message out, closed after it
    b.send_api = telegram.Api("http://127.0.0.1:1", tg()["token"], 5)  # connection refused
    sender = asyncio.create_task(b.send(bus.Msg("telegram", ALLOWED, "kept for later")))
    await until(lambda: "\n".join(log.recent()).count("sending failed") >= 2,
                "two refused connections")
    assert not sender.done()  # still holding the reply
    assert (await state())["sent"] == []
    b.send_api = telegram.Api(tg()["base_url"], tg()["token"], 5)  # Telegram reachable again
    await until(lambda: sender.done(), "the held reply sent")
    st = await state()
    assert [m["visible"] for m in st["sent"]] == ["kept for later"]
    assert b.send_api is None
    # an immediate answer (not an agent reply) still gives up after a few tries
    from mimi.channels.telegram import send as tgsend

    b.send_api = telegram.Api("http://127.0.0.1:1", tg()["token"], 5)
    limits.SEND_RETRIES = 1
    assert not await tgsend.plain(b, ALLOWED, "not held")
    task.cancel()


async def test_no_https_before_the_clock_is_set():
    # The board starts at 2000-01-01 and mbedTLS checks certificate dates: polling
    # waits for SNTP instead of failing handshakes (the host clock is always valid).
    from mimi import board
    from mimi.board.clock import VALID_AFTER

    before = len((await state())["calls"])
    skew = board.clock.skew
    board.clock.skew -= board.clock.unix() - (VALID_AFTER - 86400)  # "never set"
    try:
        b = make_bot()
        task = asyncio.create_task(b.run())
        await asyncio.sleep(1)
        assert len((await state())["calls"]) == before and b.username is None
    finally:
        board.clock.skew = skew
    await until(lambda: b.username, "getMe once the clock is valid")
    task.cancel()


async def test_poll_yields_to_the_llm_call_only_where_memory_is_tight():
    # issue 12: a board without room for two TLS connections: while the agent's LLM call
    # runs, the long poll in flight is cut and no new one starts; with room (PSRAM)
    # nothing waits. tls.claim() runs on the agent thread: its effect is played here.
    from mimi.net import tls
    from mimi.board import host

    await control("config", {"max_poll_s": 30})
    b, task = await started()
    await until(lambda: _poll_open(), "a long poll in flight")

    def llm(n):
        tls.busy = n
        for fn in tls._watchers:
            fn()

    llm(1)  # plenty of room: the poll goes on
    await asyncio.sleep_ms(200)
    assert b.polling is not None
    llm(0)
    host.SIM_C_HEAP = limits.TLS_CONN_ROOM - 1  # no PSRAM: one connection's room left
    try:
        llm(1)
        await until(lambda: b.polling is None, "the poll cut")  # (None once cut; the next waits)
        polls = _polls(await state())
        await update(chat_id=ALLOWED, text="during the LLM call")
        await asyncio.sleep_ms(500)
        assert _polls(await state()) == polls  # no poll while the call runs
        assert bus.inbound.get_nowait() is None
        llm(0)
        assert (await inbound()).content == "during the LLM call"  # nothing lost
    finally:
        host.SIM_C_HEAP = None
        tls.busy = 0
    task.cancel()


async def test_a_reply_owed_cuts_the_poll_in_flight_and_is_said_first():
    # the dispatcher's last word (owe()): the long poll in flight is cut (it runs in the
    # poller's own task), the chat told on the poll connection, and polling goes on

    await control("config", {"max_poll_s": 30})
    b, task = await started()
    await update(chat_id=ALLOWED, text="hi")  # (the fake knows a chat once it wrote)
    await inbound()
    await until(lambda: b.polling, "the next long poll in flight")
    polls = _polls(await state())
    b.owe(ALLOWED)
    st = await until(lambda: _sent_n(1), "the owed apology")  # (not after the 30 s poll)
    assert st["sent"][0]["text"].startswith("Sorry, my answer did not fit in the board's free memory") \
        and not b.owed
    await until(lambda: _polls_after(polls + 1), "the next long poll")
    assert not task.done()
    task.cancel()


async def _polls_after(n):
    return _polls(await state()) >= n


async def _poll_open():
    st = await state()
    return _polls(st) > 0


async def test_a_batch_over_the_body_cap_does_not_stop_telegram():
    # issue 16 item 4: ten such updates from a stranger made a batch over the 256 KB
    # body cap: TooLarge on every poll, the offset never moved, the owner was never
    # answered. The answer is read update by update now.
    st = await _flood_then_owner()
    assert [m["chat_id"] for m in st["sent"]] == [666]  # the stranger told once


async def test_too_big_and_malformed_updates_are_skipped_not_their_batch_mates():
    # issue 16 item 4: a malformed update raised after the offset had moved, so the
    # messages batched with it were lost; one too big to take stopped the poll
    raw = [
        {"message": {"message_id": 1, "date": 1, "text": "x", "chat": "str"}},
        {"message": [1, 2]},
        {"message": {"message_id": 2, "date": 1, "chat": {"id": -100, "type": "group"},
                     "from": "str", "text": "@%s hi" % tg()["username"]}},
        {"message": {"message_id": 3, "date": 1, "chat": {"id": ALLOWED, "type": "private"},
                     "text": "x" * (limits.TG_UPDATE_MAX + 100)}},
        {"message": {"message_id": 4, "date": 1, "chat": {"id": ALLOWED, "type": "private"},
                     "text": ["not", "text"]}},
    ]
    cfg.set("tg_allow", "42,-100")
    await update(chat_id=ALLOWED, text="first")
    for r in raw:
        await control("update", {"raw": r})
    last = await update(chat_id=ALLOWED, text="last")
    b, task = await started()
    assert (await inbound()).content == "first"
    assert (await inbound()).content == "last"
    st = await until(lambda: _confirmed(last), "every update confirmed")
    assert [m["visible"] for m in st["sent"]] == ["I can only read text messages for now."]  # the list "text"
    lines = "\n".join(log.recent())
    assert lines.count("skipped") == 3, lines  # chat "str", from "str", too big ([1, 2]: ignored)
    assert "AttributeError" in lines and "more than the" in lines
    assert bus.inbound.get_nowait() is None
    task.cancel()


async def test_a_batch_is_cut_to_what_the_heap_can_spare():
    # the text kept for the agent is capped per batch (a quarter of the free heap);
    # what does not fit is not confirmed and comes with the next poll, with a
    # smaller limit asked for
    for i in range(5):
        await update(chat_id=ALLOWED, text="message %d %s" % (i, "y" * 100))
    b = make_bot()
    b._room = lambda: (limits.TG_UPDATE_MAX, 250)
    # (all five may be polled before this test takes the first: one chat's cap on queued
    # messages, BUS_CHAT_QUEUED = 4, would refuse the fifth; that refusal is tested elsewhere)
    bus.inbound.per_chat = 5
    task = asyncio.create_task(b.run())
    got = []
    try:
        for _ in range(5):
            got.append((await inbound()).content[:9])
    finally:
        bus.inbound.per_chat = limits.BUS_CHAT_QUEUED
    assert got == ["message %d" % i for i in range(5)]
    assert bus.inbound.get_nowait() is None
    st = await state()
    limits_asked = [c["params"]["limit"] for c in st["calls"] if c["method"] == "getUpdates"]
    assert limits_asked[:2] == [10, 3], limits_asked
    task.cancel()


async def test_streamed_answer_edits_one_message_then_the_final_replaces_it():
    b, task = await started()
    await update(chat_id=ALLOWED, text="hi")
    await inbound()

    async def turn(*partials):
        await b.send(bus.Msg("telegram", ALLOWED, "working", kind=bus.STATUS))
        for text in partials:
            if text is None:  # the edit slot comes again
                await asyncio.sleep_ms(limits.TG_STREAM_EDIT_S * 1000 + 50)
            else:
                await b.send(bus.Msg("telegram", ALLOWED, text, kind=bus.PARTIAL))

    # shown at once (no progress delay), then edited at most every TG_STREAM_EDIT_S; a
    # version over TG_MSG_MAX is left out; the formatted answer is edited into its place
    await turn("The", "The answer", None, "The answer is", "x" * (limits.TG_MSG_MAX + 1))
    await b.send(bus.Msg("telegram", ALLOWED, "The answer is **42**."))
    st = await state()
    assert len(st["sent"]) == 1 and st["sent"][0]["visible"] == "The answer is 42.", st["sent"]
    assert st["sent"][0]["parse_mode"] == "HTML" and st["sent"][0]["entities"][0]["type"] == "bold"
    first = [c["params"]["text"] for c in st["calls"] if c["method"] == "sendMessage"]
    assert first == ["The"], first  # "The answer" came too soon: skipped
    assert [e["text"] for e in st["edits"]] == ["The answer is", "The answer is <b>42</b>."], st["edits"]
    assert CHAT not in b.typing
    # the message shown so far is gone (deleted by the user): the answer comes anew
    await turn("Again")
    await fail(method="editMessageText", status=400, description="Bad Request: message to edit not found")
    await b.send(bus.Msg("telegram", ALLOWED, "Again, in full."))
    st = await state()
    assert [m["visible"] for m in st["sent"]][1:] == ["Again", "Again, in full."], st["sent"]
    # the same text as shown: Telegram's "not modified" is no failure, nothing is re-sent
    await turn("Same")
    await b.send(bus.Msg("telegram", ALLOWED, "Same"))
    st = await state()
    assert [m["visible"] for m in st["sent"]][3:] == ["Same"], st["sent"]
    assert not st["deleted"][1:], st["deleted"]
    task.cancel()


def _shown(st):
    """The bot's messages left in the chat, as a person sees them."""
    return [m["visible"] for m in st["sent"] if m["chat_id"] == ALLOWED and not m.get("deleted")]


async def _streamed_turn(b, *partials):
    await update(chat_id=ALLOWED, text="hi")
    await inbound()
    await b.send(bus.Msg("telegram", ALLOWED, "working", kind=bus.STATUS))
    for text in partials:
        await asyncio.sleep_ms(limits.TG_STREAM_EDIT_S * 1000 + 50)  # the edit slot comes again
        await b.send(bus.Msg("telegram", ALLOWED, text, kind=bus.PARTIAL))


async def test_429_on_the_final_edit_waits_its_retry_after_and_leaves_one_message():
    # Issue 25, item 14: an edit of the streamed answer answered 429 retry_after=N; the
    # final formatted edit was sent anyway before N s (Telegram refuses it: the fake
    # notes it as a violation), and when deleteMessage was refused too the raw partial
    # stayed above the answer. Every call for the chat waits out the retry_after, and
    # the chat ends with exactly one message, the answer.
    b, task = await started()
    await _streamed_turn(b, "The answer")
    await fail(method="editMessageText", status=429, retry_after=3)
    await asyncio.sleep_ms(limits.TG_STREAM_EDIT_S * 1000 + 50)  # the edit slot comes again
    await b.send(bus.Msg("telegram", ALLOWED, "The answer is", kind=bus.PARTIAL))  # (refused: wait 3 s)
    await b.send(bus.Msg("telegram", ALLOWED, "The answer is **42**."))
    st = await state()
    assert st["violations"] == [], st["violations"]
    assert _shown(st) == ["The answer is 42."], st["sent"]
    assert [m["parse_mode"] for m in st["sent"]] == ["HTML"]
    assert CHAT not in b.typing
    task.cancel()


async def test_429_on_deleting_the_progress_message_waits_and_deletes_it():
    b, task = await started()
    await _streamed_turn(b, "raw partial")
    await fail(method="editMessageText", status=400, description="Bad Request: message can't be edited")
    await fail(method="deleteMessage", status=429, retry_after=2)
    await b.send(bus.Msg("telegram", ALLOWED, "the **answer**"))
    st = await state()
    assert st["violations"] == [], st["violations"]
    assert _shown(st) == ["the answer"], st["sent"]
    # typing and progress on a chat Telegram holds off are left out, not sent early
    await _streamed_turn(b, "one")
    await fail(method="sendChatAction", status=429, retry_after=2)
    await b.send(bus.Msg("telegram", ALLOWED, "working", kind=bus.STATUS))
    await b.send(bus.Msg("telegram", ALLOWED, "one two", kind=bus.PARTIAL))
    await b.send(bus.Msg("telegram", ALLOWED, "one two three"))
    st = await state()
    assert st["violations"] == [], st["violations"]
    assert _shown(st)[-1] == "one two three" and len(_shown(st)) == 2, st["sent"]
    task.cancel()


def test_an_idle_poll_loads_no_decoder():
    # The empty answer of a long poll that saw nothing is taken by the resident Updates;
    # any other answer goes, from its first byte, through channels/tgupdates.py
    import sys

    b = telegram.Telegram()
    for pieces in ([b'{"ok":true,"result":[]}'], [b'{"ok":tr', b'ue,"result":[]}']):
        u = telegram.Updates(b, 4096, 4096)
        for p in pieces:
            u(memoryview(p))
        assert u.seen and u.acts == [] and "mimi.channels.telegram.updates" not in sys.modules
    body = (b'{"ok":true,"result":[{"update_id":7,"message":{"message_id":1,'
            b'"chat":{"id":42,"type":"private"},"text":"hi"}}]}')
    u = telegram.Updates(b, 4096, 4096)
    for k in range(0, len(body), 5):  # cut inside the empty answer's first bytes too
        u(memoryview(body[k:k + 5]))
    assert u.seen and [(uid, a[0], a[2]) for uid, a in u.acts] == [(7, "agent", "hi")], u.acts
    assert "mimi.channels.telegram.updates" in sys.modules
    u = telegram.Updates(b, 4096, 4096)  # an error answer: read from its head
    u(memoryview(b'{"ok":false,"error_code":409,"description":"Conflict"}'))
    assert not u.seen and u.head.startswith(b'{"ok":false') and u.acts == []


def test_room_for_a_batch_counts_garbage_as_free():
    # gc.mem_free() counts garbage as used until a collection: taken just before one,
    # the room for the next batch came out at 229 bytes with most of the heap garbage,
    # and a 280-byte message was skipped for good (found by the soak, tests/host/test_soak.py)
    import gc

    bot = telegram.Telegram()
    gc.collect()
    real = gc.mem_free()
    junk = []
    while gc.mem_free() > 8 * 1024:  # garbage until the heap looks full; small blocks once
        # near: 1 KB that no gap fits makes a collection, and the loop starts over for ever
        junk.append(bytearray(1024 if gc.mem_free() > 64 * 1024 else 8))
        if len(junk) > 8:
            junk = []
    junk = None
    assert gc.mem_free() <= 8 * 1024
    most, text = bot._room()
    assert most == min(limits.TG_UPDATE_MAX, real // 3) or most > real // 4, (most, real)
    assert text > real // 5, (text, real)
