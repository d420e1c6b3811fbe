# Telegram's sending side, loaded at the first message out (channels/telegram/poller.py is
# the resident poller): replies as Telegram HTML in parts, the answers to commands
# and to strangers, "typing", and retries that cannot duplicate a message.
#
# The send connection is opened at the first message and closed once a reply (or
# an answer) is out and no chat waits with "typing": between turns only the long
# poll's connection is open (one TLS session at rest, no second client buffer), and
# this module and the formatter are dropped (loaded again for the next message).
import asyncio
import mimi
from mimi import limits, log, bus, channels
from mimi.channels.telegram import poller as tg
from mimi.channels.telegram.echo import call
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


def _rest(bot):
    """A message is out: unless a chat still waits, close the send connection and drop
    this module (loaded again for the next message)."""
    if not bot.typing:
        if bot.send_api is not None:
            bot.send_api.close()
            bot.send_api = None
        mimi.drop("channels.telegram.send")
        mimi.drop("channels.telegram.echo")
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
            if await _finish(st, _api(bot), html, lambda: fmt.render_plain(runs)):
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


async def _finish(st, api, html, plain):
    """The answer's first part (Telegram HTML, and a function making its plain text
    for when the entities are refused; str or lists of str pieces) in place of the
    status.Status st's message. -> True when it is there; False when there was none or
    the edit failed (then it is deleted: send the part). A 429 is waited out (Api.call)
    and the edit made again: the chat is left with one message holding the answer,
    never the raw partial above it."""
    if st.message_id is None or api is None:
        return False
    p = {"chat_id": st.chat_id, "message_id": st.message_id, "text": html,
         "parse_mode": "HTML"}
    tries = 0
    while True:
        try:
            await call(api, "editMessageText", p)
            st.message_id = None
            return True
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: B902 - sent the usual way instead
            if isinstance(e, tg.ApiError) and "not modified" in e.description:
                st.message_id = None
                return True
            if isinstance(e, tg.ApiError) and e.entities and "parse_mode" in p:
                del p["parse_mode"]
                p["text"] = plain()
                continue
            if await _again(e, tries):
                tries += 1
                continue
            log.warning(TAG, "answer into the progress message for %s: %s", st.chat_id, e)
            break
    await _delete(st, api)
    return False


async def _delete(st, api):
    """status.Status st's message deleted (the answer is sent as parts instead, or its
    turn is over)."""
    if st.message_id is None or api is None:
        return
    tries = 0
    while True:
        try:
            await api.call("deleteMessage", {"chat_id": st.chat_id, "message_id": st.message_id})
            break
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: B902 - left behind: only a stale line
            if await _again(e, tries):
                tries += 1
                continue
            log.warning(TAG, "deleting the progress message for %s: %s", st.chat_id, e)
            break
    st.message_id = None


async def _again(e, tries):
    """Try a call once more after e? For Telegram's refusals that say nothing about the
    message (429: Api.call waits its retry_after; a busy gateway: a short wait here),
    up to SEND_RETRIES times."""
    if tries >= limits.SEND_RETRIES or not isinstance(e, tg.ApiError):
        return False
    if e.code == 429:
        return True
    if e.code in (500, 502, 503, 504):
        await asyncio.sleep(1 << tries)
        return True
    return False


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
            await _delete(st, _api(bot))  # (what it says is of a turn that is over)
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
    try:
        if isinstance(msg.content, tuple):  # a long reply: a list, whose pieces _feed() lets go
            msg.content = list(msg.content)
        await text(bot, chat_id, msg.content, reply_to, hold=True, status=st)
    except MemoryError:
        # nothing of it went (text()): the dispatcher sends it again after freeing, or
        # its apology, or owe()s the chat; the turn's progress message, still there (the
        # answer so far), is the chat's again for that, to become the answer, not stay stale
        if st is not None and st.message_id is not None:
            bot.typing[chat_id] = st
            st.lock.release()  # (its typing task is cancelled: the next try takes it)
        raise
    _rest(bot)
