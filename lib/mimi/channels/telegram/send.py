# Telegram's sending side, loaded at the first message out (channels/telegram/poller.py is
# the resident poller): replies as Telegram HTML in parts, the answers to commands
# and to strangers, "typing", and retries that cannot duplicate a message.
#
# The send connection is opened at the first message and closed once a reply (or
# an answer) is out and no chat waits with "typing": between turns only the long
# poll's connection is open (one TLS session at rest, no second client buffer), and
# this module and the formatter are dropped (loaded again for the next message).
import json
import asyncio
import mimi
from mimi import limits, log, bus, channels
from mimi.channels.telegram import poller as tg
from mimi.services import wifi

TAG = tg.TAG
ANSWERS = {
    "/start": (
        "Hi, I'm MimiClaw, a small AI assistant living on a microcontroller.\n\n"
        "Just write to me. I can answer questions, search the web, tell the time, keep "
        "notes and long-term memory, read and write files on my flash, schedule reminders "
        "(cron) and switch GPIO pins.\n\n"
        "/help - what I understand\n/reset - forget this conversation"),
    "/help": (
        "Commands:\n"
        "/start - introduction\n"
        "/help - this list\n"
        "/reset - clear this chat's conversation history\n"
        "/usage - LLM calls, tokens and cost so far, and the limits\n"
        "/chart NAME [hours] - a device's history as a picture\n\n"
        "Anything else you write goes to the assistant. Text only for now."),
}
TEXT_ONLY = "I can only read text messages for now."
NO_ROOM = ("Sorry, the rest of my answer did not fit in the board's free memory to be sent. "
           "It is saved in this chat: ask me to repeat it, shorter.")
NOT_READ = ("Sorry, I could not read your message: the board is short of memory right now. "
            "Please send it again in a minute.")
BUSY = "I'm busy with other messages, try again shortly."
RESET_DONE = "Conversation cleared. Let's start fresh."
STRANGER = ("This bot is private. Your chat id is %s.\n"
            "Its owner can allow you on the board's REPL with: allow_chat(%s)")


class Echo:
    """The answer to a message sent or edited, read as it arrives (Api.call's sink): its
    first TG_ERROR_MAX bytes kept (an error, a short message); Telegram echoes the
    message whole (4 KB of text and more), of which only message_id is used: seen when
    the answer was longer and ok, or when its first TG_ECHO_PEEK bytes say ok and hold
    the id (the rest is not kept), its id in .result."""
    seen = False
    result = None

    def __init__(self):
        self.head = b""

    def __call__(self, mv):
        h = self.head
        if self.seen:
            return
        if len(h) < limits.TG_ECHO_PEEK:  # an ok answer's message_id comes first: its
            # first bytes are looked at before 1 KB of the echo is copied for nothing
            p = h + bytes(mv[:limits.TG_ECHO_PEEK - len(h)])
            i = tg.after(p, b'"ok"')
            j = k = tg.after(p, b'"message_id"')
            while 0 <= j < len(p) and 48 <= p[j] <= 57:
                j += 1
            if i >= 0 and p[i:i + 4] == b"true" and k < j < len(p):
                self.head, self.seen, self.result = p, True, {"message_id": int(p[k:j])}
                return
            p = None
        if len(h) < limits.TG_ERROR_MAX:
            self.head = h = h + bytes(mv[:limits.TG_ERROR_MAX - len(h)])
        if len(h) >= limits.TG_ERROR_MAX:
            i = tg.after(h, b'"ok"')  # (no copy of the head: a short heap is short now)
            self.seen = i >= 0 and h[i:i + 4] == b"true"
            self.result = {"message_id": tg.number(h, b'"message_id"')}


async def call(api, method, params):
    """api.call(method, params) for a message: a "text" made of pieces (a list of str,
    format.py's) written piece by piece, never joined; the echo read by an Echo. Out of
    memory once the request went out: it was sent ({"message_id": None}), not again."""
    text, chat = params.get("text"), params.get("chat_id")
    if isinstance(text, list):
        head = json.dumps({k: v for k, v in params.items() if k != "text"})
        params = (head[:-1], ', "text": "' if len(head) > 2 else '"text": "', _json(text), '"}')
    buf = api.client._buf
    if buf is not None:  # (what it says of the previous request on this connection)
        buf.sent = False
    try:
        return await api.call(method, params, sink=Echo(), chat=chat)
    except MemoryError:
        buf = api.client._buf
        if buf is None or not buf.sent:  # it did not go: the caller may send it again
            raise
        params = None
        api.client.close()  # the answer was not read: the connection is out of step
        log.warning(TAG, "%s went out; no room in the heap to read the answer", method)
        return {"message_id": None}


def _json(text):
    """A part's pieces as a JSON string's content, escaped as they are sent (one
    piece's copy at a time, not the part's: 4 KB less while a long answer's part goes)."""
    escaped = mimi.load("mimi.net.httpbody").escaped  # (the agent's requests load it too)

    return escaped(text, json.dumps)


def _rest(bot):
    """A message is out: unless a chat still waits, close the send connection and drop
    this module (loaded again for the next message)."""
    if not bot.typing:
        if bot.send_api is not None:
            bot.send_api.close()
            bot.send_api = None
        mimi.drop("channels.telegram.send")
        mimi.drop("channels.telegram.status")
        mimi.drop("channels.sending")


def _api(bot):
    """The send connection (None without a bot token): status.py's, which the turn's
    "typing" uses while this module may be gone."""
    return channels.load("telegram.status").api(bot)


def _refused(e):
    """Did Telegram (or its gateway) answer that it did not take the message?"""
    return isinstance(e, tg.ApiError) and (e.code == 429 or e.code in (502, 503, 504))


async def _send(bot, params, hold=False):
    """One sendMessage (channels/sending.py: retries that cannot duplicate; hold keeps a
    reply through an outage); raises the last error."""
    from mimi.channels import sending

    async def attempt():
        api = _api(bot)
        if api is None:
            raise tg.ApiError(0, "no connection to Telegram (no bot token)")
        return await call(api, "sendMessage", params)

    def lost():  # the network went away: each Api reconnects before its next call
        mimi.run("channels.telegram.connect", "network_lost", bot)

    async def online():  # at once when online; after an outage, reconnect first
        if not wifi.online():
            lost()
            await wifi.wait_online()

    return await sending.deliver(attempt, _refused, hold, TAG, online, lost)


async def plain(bot, chat_id, text):
    """One line of ours, as plain text, not held through an outage. -> sent?"""
    try:
        await _send(bot, {"chat_id": chat_id, "text": text})
        return True
    except Exception as e:
        log.error(TAG, "sending to %s failed: %s", chat_id, e)
        return False


async def text(bot, chat_id, markdown, reply_to=None, hold=False, status=None):
    """Markdown (a str, or a text in pieces: bus.pieces(), or a list of them: _feed()) ->
    HTML parts in order, each made and sent in pieces (format.parts(): no block as big
    as a part); a part whose entities Telegram refuses is sent again as plain text; any
    other failure is logged, never re-sent (hold: see _send), and the chat told once
    after the last part which were refused for good (unless it cannot be reached). status: the turn's
    status.Status, whose message (when shown) becomes the first part. -> True when
    every part went out."""
    if _api(bot) is None:
        log.warning(TAG, "no connection to Telegram; reply to %s dropped", chat_id)
        return False
    fmt = channels.load("telegram.format")
    went = [0]  # parts out
    try:
        return await _parts(bot, chat_id, fmt, markdown, reply_to, hold, status, went)
    except MemoryError:
        if not went[0]:
            raise  # nothing of it went out: the dispatcher makes room and tries again
        fmt = None  # part of the reply went out: sent again, it would repeat that
        log.error(TAG, "no room in the heap for the rest of a reply to %s", chat_id)
        if not await plain(bot, chat_id, NO_ROOM):
            bot.owe(chat_id)
        return False
    finally:
        fmt = None
        mimi.drop("channels.telegram.format")  # loaded for each reply, not kept between them


async def _parts(bot, chat_id, fmt, markdown, reply_to, hold, status, went):
    ok = True
    n, lost, why = 0, [], None  # parts made; those refused for good, and the first reason
    for runs in fmt.parts(_feed(markdown, went) if isinstance(markdown, list) else markdown or "",
                          limits.TG_MSG_MAX):
        n += 1
        html = fmt.render_html(runs)
        if status is not None:
            status, st = None, status
            if await st.finish(_api(bot), html, lambda: fmt.render_plain(runs)):
                reply_to = None
                went[0] += 1
                continue
        params = {"chat_id": chat_id, "text": html, "parse_mode": "HTML"}
        html = None
        if reply_to:
            params["reply_parameters"] = {"message_id": reply_to, "allow_sending_without_reply": True}
            reply_to = None
        while True:  # (twice for a part whose entities Telegram refuses: as plain text)
            try:
                await _send(bot, params, hold)
                went[0] += 1
            except MemoryError as e:
                params = None
                sent = await _smaller(bot, chat_id, fmt, runs, hold, went)
                if sent is False:
                    raise e  # text() says the rest did not fit (or the dispatcher tries again)
                if not sent:
                    ok = False
            except tg.ApiError as e:
                if e.entities and "parse_mode" in params:
                    log.warning(TAG, "Telegram refused the HTML (%s); sending plain text", e.description)
                    params.pop("parse_mode")
                    params["text"] = fmt.render_plain(runs)
                    continue
                log.error(TAG, "sending to %s failed: %s", chat_id, e)
                ok = False
                if not _gone(e):
                    lost.append(n)
                    why = why or e.description
            except Exception as e:
                log.error(TAG, "sending to %s failed: %s %s", chat_id, type(e).__name__, e)
                ok = False
            break
    if lost:  # the chat is told, once, that its reply has a hole
        from mimi.channels import sending

        await plain(bot, chat_id, sending.missing(lost, n, why))
    return ok


def _gone(e):
    """Did Telegram refuse because nothing can reach the chat (blocked, left, no rights)?"""
    d = e.description
    return e.code == 403 or "chat not found" in d or "rights to send" in d


def _feed(pieces, went):
    """A reply's pieces (a list) for the formatter. Once a part went out (the reply is
    then never sent again), each piece read is let go from the list: the parts sent
    hold no heap (a 10 KB answer's 8 KB while its third part goes); the formatter keeps
    what it still needs of them."""
    k = 0
    for i in range(len(pieces)):
        if went[0]:
            while k < i:
                pieces[k] = None
                k += 1
        yield pieces[i]


async def _smaller(bot, chat_id, fmt, runs, hold, went):
    """A part that found no room in the heap: the spare given back (mimi.spare()) and
    what can be freed is, then the part goes again as plain text in pieces of
    TG_MSG_SHORT (each counted in went[0]). -> False when one of them found no room
    either (the rest is not sent); None when one failed otherwise (logged, as _parts()
    does a part's)."""
    mimi.spare(False)
    sent = True
    for part in fmt.recut(runs, limits.TG_MSG_SHORT):
        try:
            await _send(bot, {"chat_id": chat_id, "text": fmt.render_plain(part)}, hold)
            went[0] += 1
        except MemoryError:
            return False
        except Exception as e:
            log.error(TAG, "sending to %s failed: %s %s", chat_id, type(e).__name__, e)
            sent = None
    log.warning(TAG, "a part to %s sent in smaller pieces (no room in the heap)", chat_id)
    return sent


async def act(bot, what, chat_id, arg=None):
    """The poller's answers: "stranger", "text_only", "busy", "reset", "usage", "reply"
    (arg: the command)."""
    if what == "stranger":
        if not channels.tell_again(bot.strangers, chat_id, limits.TG_STRANGER_S, limits.TG_STRANGERS_MAX):
            return
        log.info(TAG, "message from chat %s, which is not in tg_allow", chat_id)
        await plain(bot, chat_id, STRANGER % (chat_id, chat_id))
    elif what == "text_only":
        await plain(bot, chat_id, TEXT_ONLY)
    elif what == "busy":
        await plain(bot, chat_id, BUSY)
    elif what == "not_read":
        await plain(bot, chat_id, NOT_READ)
    elif what == "reply":
        await text(bot, chat_id, ANSWERS[arg])
    elif what == "usage":
        await plain(bot, chat_id, channels.usage_text())
    elif what == "chart":
        await channels.load("telegram.photo").chart(bot, chat_id, arg)
    elif what == "reset":
        from mimi.memory import sessions

        key = bus.session_key(tg.CHANNEL, chat_id)
        sessions.clear(key)
        log.info(TAG, "session %s cleared by /reset", key)
        await plain(bot, chat_id, RESET_DONE)
    _rest(bot)


async def send(bot, msg):
    """The dispatcher's messages for an allowed chat: "typing" for a status, the answer
    so far while it streams (the turn's status message, at once, edited at most every
    TG_STREAM_EDIT_S, TG_EDIT_MIN_S in a group; a version over TG_MSG_MAX is left out:
    the final one is split), the reply (held through an outage, never dropped; in a
    group, a reply to the message; its first part in place of the status message)."""
    chat_id = msg.chat_id
    meta = msg.meta or {}
    reply_to = meta.get("message_id") if meta.get("group") else None
    st = bot.typing.get(chat_id)
    if "chart" in meta:  # a chart the agent sends (device_history): a picture, the turn goes on
        await channels.load("telegram.photo").chart(bot, chat_id, meta["chart"])
        _rest(bot)
        return
    if msg.kind == bus.PARTIAL or msg.kind == bus.STATUS and st is not None and "step" in meta:
        if st is not None:  # the answer so far, or a step of the running turn: status.py's
            await st.event(bot, msg)
        return
    if st is not None:  # the turn's end: its reply, or the next turn's start (the reply never came)
        del bot.typing[chat_id]
        await st.lock.acquire()  # its calls are done: the task is cancelled between them
        st.task.cancel()  # (never released: nothing else uses it)
        if msg.kind == bus.STATUS:
            await st.delete(_api(bot))  # (what it says is of a turn that is over)
            st = None
    if msg.kind == bus.STATUS:
        if not wifi.online() or _api(bot) is None:
            return
        status = channels.load("telegram.status")
        await status.action(bot, chat_id)  # awaited: typing shows before a fast reply
        st = bot.typing[chat_id] = status.Status(chat_id, reply_to)
        st.task = asyncio.create_task(status.typing(bot, st))
        status.between()
        return
    if isinstance(msg.content, tuple):  # a long reply: a list, whose pieces _feed() lets go
        msg.content = list(msg.content)
    await text(bot, chat_id, msg.content, reply_to, hold=True, status=st)
    _rest(bot)
