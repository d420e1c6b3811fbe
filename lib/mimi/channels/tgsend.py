# Telegram's sending side, loaded at the first message out (channels/telegram.py is
# the resident poller): replies as Telegram HTML in parts, the answers to commands
# and to strangers, "typing", and retries that cannot duplicate a message.
#
# The send connection is opened at the first message and closed once a reply (or
# an answer) is out and no chat waits with "typing": between turns only the long
# poll's connection is open (one TLS session at rest, no second client buffer), and
# this module and the formatter are dropped (loaded again for the next message).
import time
import asyncio
import mimi
from mimi import limits, log, bus, channels
from mimi.channels import telegram as tg
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
        "/reset - clear this chat's conversation history\n\n"
        "Anything else you write goes to the assistant. Text only for now."),
}
TEXT_ONLY = "I can only read text messages for now."
BUSY = "I'm busy with other messages, try again shortly."
RESET_DONE = "Conversation cleared. Let's start fresh."
STRANGER = ("This bot is private. Your chat id is %s.\n"
            "Its owner can allow you on the board's REPL with: allow_chat(%s)")


def _api(bot):
    """The send connection (None without a bot token)."""
    if bot.send_api is None and bot.poll_api is not None:
        bot.send_api = tg.Api(bot.poll_api.base, bot.token, limits.TG_SEND_TIMEOUT_S)
    return bot.send_api


def _rest(bot):
    """A message is out: unless a chat still waits, close the send connection and drop
    this module (loaded again for the next message)."""
    if not bot.typing:
        if bot.send_api is not None:
            bot.send_api.close()
            bot.send_api = None
        mimi.drop("channels.tgsend")
        mimi.drop("channels.sending")


def _refused(e):
    """Did Telegram (or its gateway) answer that it did not take the message?"""
    return isinstance(e, tg.ApiError) and (e.code == 429 or e.code in (502, 503, 504))


async def _send(bot, params, hold=False, method="sendMessage"):
    """One sendMessage (or editMessageText) (channels/sending.py: retries that cannot
    duplicate; hold keeps a reply through an outage); raises the last error."""
    from mimi.channels import sending

    async def attempt():
        api = _api(bot)
        if api is None:
            raise tg.ApiError(0, "no connection to Telegram (no bot token)")
        return await api.call(method, params)

    return await sending.deliver(attempt, _refused, hold, TAG, bot._online, bot._network_lost)


async def plain(bot, chat_id, text):
    """One line of ours, as plain text, not held through an outage. -> sent?"""
    try:
        await _send(bot, {"chat_id": chat_id, "text": text})
        return True
    except Exception as e:
        log.error(TAG, "sending to %s failed: %s", chat_id, e)
        return False


async def text(bot, chat_id, markdown, reply_to=None, hold=False, edit=None):
    """Markdown -> HTML parts in order; a part whose entities Telegram refuses is
    sent again as plain text; any other failure is logged, never re-sent (hold: see
    _send). edit: a message id whose text the first part replaces (the answer shown
    while it streamed; sent anew if that edit fails). -> True when every part went out."""
    if _api(bot) is None:
        log.warning(TAG, "no connection to Telegram; reply to %s dropped", chat_id)
        return False
    parts = channels.load("tgformat").split(markdown or "", limits.TG_MSG_MAX)
    mimi.drop("channels.tgformat")  # loaded for each reply, not kept between them
    ok = True
    for html, plain_ in parts:
        params = {"chat_id": chat_id, "text": html, "parse_mode": "HTML"}
        method = "sendMessage"
        if edit:
            params["message_id"], method, edit = edit, "editMessageText", None
        elif reply_to:
            params["reply_parameters"] = {"message_id": reply_to, "allow_sending_without_reply": True}
            reply_to = None
        try:
            await _send(bot, params, hold, method)
            continue
        except tg.ApiError as e:
            if method != "sendMessage" and not e.entities:
                if "not modified" in e.description:  # it shows this text already
                    continue
                log.warning(TAG, "editing the answer in %s failed (%s); sending it", chat_id, e.description)
                params.pop("message_id")
                try:
                    await _send(bot, params, hold)
                    continue
                except Exception as e2:
                    e = e2
            if not getattr(e, "entities", False):
                log.error(TAG, "sending to %s failed: %s", chat_id, e)
                ok = False
                continue
            log.warning(TAG, "Telegram refused the HTML (%s); sending plain text", e.description)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            log.error(TAG, "sending to %s failed: %s %s", chat_id, type(e).__name__, e)
            ok = False
            continue
        params.pop("parse_mode")
        params["text"] = plain_
        try:
            await _send(bot, params, hold, "editMessageText" if "message_id" in params else "sendMessage")
        except Exception as e:
            log.error(TAG, "plain-text resend to %s failed: %s", chat_id, e)
            ok = False
    return ok


async def act(bot, what, chat_id, arg=None):
    """The poller's answers: "stranger", "text_only", "busy", "reset", "reply" (arg:
    the command)."""
    if what == "stranger":
        if not channels.tell_again(bot.strangers, chat_id, limits.TG_STRANGER_S, limits.TG_STRANGERS_MAX):
            return
        log.info(TAG, "message from chat %s, which is not in tg_allow", chat_id)
        await plain(bot, chat_id, STRANGER % (chat_id, chat_id))
    elif what == "text_only":
        await plain(bot, chat_id, TEXT_ONLY)
    elif what == "busy":
        await plain(bot, chat_id, BUSY)
    elif what == "reply":
        await text(bot, chat_id, ANSWERS[arg])
    elif what == "reset":
        from mimi.memory import sessions

        key = bus.session_key(tg.CHANNEL, chat_id)
        sessions.clear(key)
        log.info(TAG, "session %s cleared by /reset", key)
        await plain(bot, chat_id, RESET_DONE)
    _rest(bot)


async def _action(bot, chat_id):
    try:
        await _api(bot).call("sendChatAction", {"chat_id": chat_id, "action": "typing"})
    except asyncio.CancelledError:
        raise
    except Exception as e:
        log.warning(TAG, "typing for %s failed: %s", chat_id, e)


async def _typing(bot, chat_id):
    start = time.ticks_ms()
    try:
        while time.ticks_diff(time.ticks_ms(), start) < limits.TG_TYPING_MAX_S * 1000:
            await asyncio.sleep(limits.TG_TYPING_S)
            if bot.poll_api is None:
                break
            if wifi.online():
                await _action(bot, chat_id)
    finally:
        if bot.typing.get(chat_id) is asyncio.current_task():
            del bot.typing[chat_id]


async def _partial(bot, msg):
    """The answer so far, as plain text: a message sent at first, then edited at most
    every TG_EDIT_MS (TG_EDIT_GROUP_MS in a group: Telegram allows a group 20 a minute);
    a version over TG_MSG_MAX is left out (the final one is split). Any failure only
    skips this version."""
    meta = msg.meta or {}
    live = bot.live.get(msg.chat_id)
    now = time.ticks_ms()
    gap = limits.TG_EDIT_GROUP_MS if meta.get("group") else limits.TG_EDIT_MS
    if (live and time.ticks_diff(now, live[1]) < gap) or len(memoryview(msg.content)) > limits.TG_MSG_MAX:
        return  # (UTF-8 bytes are never fewer than Telegram's UTF-16 units)
    params = {"chat_id": msg.chat_id, "text": msg.content}
    try:
        if live:
            params["message_id"] = live[0]
            live[1] = now
            await _api(bot).call("editMessageText", params)
        else:
            if meta.get("group") and meta.get("message_id"):
                params["reply_parameters"] = {"message_id": meta["message_id"],
                                              "allow_sending_without_reply": True}
            bot.live[msg.chat_id] = [(await _api(bot).call("sendMessage", params))["message_id"], now]
    except asyncio.CancelledError:
        raise
    except Exception as e:
        if isinstance(e, tg.ApiError) and e.retry_after and live:
            live[1] = time.ticks_add(now, e.retry_after * 1000)  # Telegram's own pace
        log.warning(TAG, "showing the answer so far in %s failed: %s", msg.chat_id, e)


async def send(bot, msg):
    """The dispatcher's messages for an allowed chat: "typing" for a status, the answer
    so far while it streams, the reply (held through an outage, never dropped; in a
    group, a reply to the message; replacing the answer so far)."""
    chat_id = msg.chat_id
    if msg.kind == bus.PARTIAL:
        if _api(bot) is not None and wifi.online():
            await _partial(bot, msg)
        return
    if msg.kind == bus.STATUS:
        if chat_id in bot.typing or not wifi.online() or _api(bot) is None:
            return
        await _action(bot, chat_id)  # awaited: typing shows before a fast reply
        bot.typing[chat_id] = asyncio.create_task(_typing(bot, chat_id))
        return
    t = bot.typing.pop(chat_id, None)
    if t is not None:
        t.cancel()
    meta = msg.meta or {}
    live = bot.live.pop(chat_id, None)
    await text(bot, chat_id, msg.content, meta.get("message_id") if meta.get("group") else None, hold=True,
               edit=live[0] if live else None)
    _rest(bot)
