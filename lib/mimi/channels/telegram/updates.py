# Reading a getUpdates answer that has updates in it, for the resident poller
# (channels/telegram/poller.py: its Updates object holds the state, these functions work on
# it): each update copied into one buffer as it arrives, decoded and classified
# alone; then the batch handled (handle(): the offset saved, each action taken).
# Loaded when such an answer comes in and dropped after the poll, so an idle bot
# (its long polls answered "no updates") holds none of this code.
import json
import asyncio
from mimi import limits, log, jsonutil, bus, fs, channels
from mimi.channels.telegram.poller import TAG, CHANNEL, allowed, number

IGNORE = ("ignore", None, None, None, None)


def start(u):
    """The decoder's state, on the Updates object u (poller.py)."""
    u.cap = u.most
    u.depth = 0  # JSON nesting: 1 the answer, 2 "result", 3 an update
    u.instr = u.esc = False
    u.buf = None
    u.size = 0  # bytes of the current update so far
    u.pre = b""  # its first bytes (its update_id even when skipped)
    u.kept = 0


def feed(u, b):
    """Updates.__call__: the answer's next bytes b."""
    if len(u.head) < limits.TG_ERROR_MAX:
        u.head += b[:limits.TG_ERROR_MAX - len(u.head)]
    n = len(b)
    i = 0
    q = -1  # the next quote at or after i while in a string (n: none in b)
    a = 0 if u.depth >= 3 else -1  # where the current update's bytes start in b
    while i < n:
        if u.instr:  # jump to the closing quote; an escape hides the byte after it
            if u.esc:
                u.esc = False
                i += 1
                continue
            if q < i:
                q = b.find(b'"', i)
                if q < 0:
                    q = n
            e = b.find(b"\\", i, q)
            if e >= 0:
                u.esc = True
                i = e + 1
            else:
                u.instr = q == n
                i = q + 1
            continue
        c = b[i]
        if c == 34:  # "
            u.instr = True
        elif c == 123 or c == 91:  # { [
            u.depth += 1
            if u.depth == 2:
                u.seen = True
            elif u.depth == 3:
                a = i
                u.size = 0
                u.pre = b""
        elif c == 125 or c == 93:  # } ]
            u.depth -= 1
            if u.depth == 2 and a >= 0:
                _take(u, b, a, i + 1)
                a = -1
                _done(u)
        i += 1
    if a >= 0:
        _take(u, b, a, n)

def _take(u, b, a, z):
    if len(u.pre) < limits.TG_UPDATE_HEAD:
        u.pre += b[a:min(z, a + limits.TG_UPDATE_HEAD - len(u.pre))]
    k = u.size
    u.size += z - a
    if u.full or u.size > u.most:
        return
    if u.buf is None or len(u.buf) < u.size:  # grown as an update needs it
        buf = None
        for n in (min(u.most, max(u.size, 2 * k, limits.TG_UPDATE_MIN)), u.size):
            try:  # ... or to just what it needs so far when the heap has no more
                buf = bytearray(n)
                break
            except MemoryError:
                pass
        if buf is None:
            if not k and u.buf is None:  # not even that: the batch waits (poller.run)
                u.full = True
            u.most = k  # this one is skipped
            return
        if k:
            buf[:k] = memoryview(u.buf)[:k]
        u.buf = buf
    u.buf[k:u.size] = memoryview(b)[a:z]

def chat_of(pre):
    """The chat id in the first bytes of an update, or None."""
    i = pre.find(b'"chat"')
    return number(pre[i:], b'"id"') if i >= 0 else None


def _not_read(u, uid):
    """The action for an update skipped for want of room: its sender told to send it
    again (when the chat is known and allowed)."""
    chat = chat_of(u.pre)
    return ("not_read", str(chat), None, {}, uid) if chat is not None and allowed(chat) else None


def _done(u):
    if u.full:  # not taken: it comes again with the next poll
        if u.left is None:  # the first one: its id and chat, to skip it and say so (poller.run)
            u.left = (number(u.pre, b'"update_id"'), chat_of(u.pre))
        return
    uid = number(u.pre, b'"update_id"')
    act = None
    most, u.most = u.most, u.cap  # a failed growth skipped this one only
    if u.size > most:
        log.warning(TAG, "update %s skipped: %d bytes, more than the %d this heap takes now",
                    uid, u.size, most)
        act = _not_read(u, uid)
    else:
        try:
            upd = jsonutil.loads(memoryview(u.buf)[:u.size])
            if not isinstance(upd["update_id"], int):  # uid stays what number() read
                raise ValueError("update_id %r" % (upd["update_id"],))
            uid = upd["update_id"]
            act = classify(u.bot, upd)
        except MemoryError:
            log.warning(TAG, "update %s skipped: no room in the heap to decode it", uid)
            act = _not_read(u, uid)
        except Exception as e:  # noqa: B902 - malformed JSON or fields
            log.warning(TAG, "update %s skipped: %s %s", uid, type(e).__name__, e)
            act = None
    u.acts.append((uid, act))
    if act and act[2]:
        u.kept += len(act[2])
        u.full = u.kept >= u.budget
        if u.full:
            u.buf = None


def classify(bot, upd):
    """An update -> (action, chat_id, text, meta, key); no side effects. key tells
    the same message sent twice. Raises on malformed fields (the caller skips it)."""
    msg = upd.get("message")
    edited = False
    if not isinstance(msg, dict):
        msg = upd.get("edited_message")  # not requested, but be safe
        if not isinstance(msg, dict):
            return IGNORE
        edited = True
    chat = msg.get("chat") or {}
    if chat.get("id") is None:
        return IGNORE
    chat_id = str(chat.get("id"))
    key = (int(chat_id) * 1000003 + int(msg.get("message_id"))) & 0x3FFFFFFF  # a small int
    text = msg.get("text")
    group = chat.get("type") in ("group", "supergroup")
    meta = {"message_id": msg.get("message_id"), "group": group}
    if group:
        who = msg.get("from") or {}
        meta["sender"] = " ".join(x for x in (who.get("first_name"), who.get("last_name"))
                                  if isinstance(x, str)) or who.get("username") or str(who.get("id"))
        text, addressed = _addressed(bot, msg, text)
        if not addressed:
            return IGNORE
    if not allowed(chat_id):
        return ("stranger", chat_id, None, meta, key)
    if edited or not isinstance(text, str):
        return ("text_only", chat_id, None, meta, key)
    text = text.strip()
    cmd = text.split(None, 1)[0].lower() if text.startswith("/") else ""
    if cmd and "@" in cmd:
        cmd, _, who = cmd.partition("@")
        if bot.username and who != bot.username.lower():
            return IGNORE  # a command for another bot
    if cmd in ("/start", "/help"):
        return ("reply", chat_id, cmd, meta, key)
    if cmd == "/reset":
        return ("reset", chat_id, None, meta, key)
    if cmd == "/usage":
        return ("usage", chat_id, None, meta, key)
    if cmd == "/chart":
        return ("chart", chat_id, text, meta, key)
    if not text:
        return IGNORE
    return ("agent", chat_id, text, meta, key)

def _addressed(bot, msg, text):
    """Group chats: only messages that mention the bot, reply to it, or are commands."""
    reply = msg.get("reply_to_message") or {}
    to_bot = str((reply.get("from") or {}).get("id")) == str(bot.bot_id)
    if not isinstance(text, str):
        return text, to_bot
    if bot.username:
        tag = "@" + bot.username.lower()
        low = text.lower()
        i = low.find(tag)
        if i >= 0 and not low.startswith("/"):
            return (text[:i] + text[i + len(tag):]).strip(), True
    return text, to_bot or text.startswith("/")


# ---- the batch, after the poll (poller.run())

async def handle(bot, batch, backoff):
    """The actions of a poll's batch (an Updates) taken -> seconds to wait before the
    next poll: 0, or backoff when none of them could be taken (no room in the heap to
    read one, or no usable update_id). An update that found no room for TG_STUCK_TRIES
    polls is skipped, and its sender, when allowed, told to send it again."""
    acts, stuck, left = batch.acts, batch.full, batch.left
    batch = None  # (its update buffer not held while the actions are taken)
    before = bot.offset
    await _batch(bot, acts)
    if bot.offset != before:
        bot.stuck = 0
        return 0
    bot.stuck += 1
    if stuck and left and left[0] is not None and bot.stuck > limits.TG_STUCK_TRIES:
        uid, chat = left
        log.error(TAG, "update %s skipped: no room in the heap to read it (%d polls)", uid, bot.stuck)
        bot.stuck = 0
        bot.offset = uid + 1
        save_offset(bot)
        if chat is not None and allowed(chat):
            await channels.load("telegram.send").act(bot, "not_read", str(chat))
        return 0
    log.warning(TAG, "no update taken from a batch (%s); retry in %d s",
                "no room in the heap" if stuck else "no usable update_id", backoff)
    if stuck:
        bot._free()
    return backoff


async def _batch(bot, acts):
    """Handle one getUpdates batch ([(update_id, action)]). The offset is saved
    BEFORE any message is handed to the agent: after a crash an update is lost
    rather than answered twice (a second LLM turn and a duplicate reply are worse
    than asking again). Batches with nothing for the agent are not written every
    time (flash wear, and a stranger must not be able to make the board write)."""
    todo = []
    for uid, act in acts:
        if uid is None or uid < bot.offset:
            continue
        bot.offset = uid + 1
        if act is not None and act[0] != "ignore":
            todo.append(act)
    bot.unsaved += len(acts)
    if any(a[0] in ("agent", "reset") for a in todo) or bot.unsaved >= limits.TG_OFFSET_SAVE_EVERY:
        save_offset(bot)
    for a in todo:
        if a[4] in bot.recent:
            continue  # Telegram sent it again (an offset lost): handled once
        bot.recent.append(a[4])
        if len(bot.recent) > limits.TG_DEDUP:
            bot.recent.pop(0)
        try:
            await _act(bot, a)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            log.exception(TAG, "handling an update failed", e)


async def _act(bot, a):
    what, chat_id, text, meta, _ = a
    if what == "agent":
        if bus.inbound.put(bus.Msg(CHANNEL, chat_id, text, meta=meta)):
            return
        log.warning(TAG, "inbound queue full; chat %s told to retry", chat_id)
        what = "busy"
    await channels.load("telegram.send").act(bot, what, chat_id, text)


def save_offset(bot):
    """The update offset written to the flash (when it moved since the last time)."""
    if bot.offset == bot.saved_offset:
        return
    try:
        # (in place once the file is there: a rename in / read the flash ~300 times, this ~25)
        fs.write_atomic(limits.TG_OFFSET_PATH, json.dumps({"bot": bot.bot_id, "offset": bot.offset}),
                        False, bot.saved_offset is not None)
        bot.saved_offset = bot.offset
        bot.unsaved = 0
    except OSError as e:
        log.error(TAG, "saving the update offset failed: %s", e)
