# One editable status message per Telegram turn (loaded with send.py, which keeps a
# Status per chat while a turn runs), and the "typing" renewed beside it (typing():
# here, so that on a short heap send.py can go between the turn's messages while its
# LLM calls run). A turn still running after TG_PROGRESS_AFTER_S shows ONE short
# message ("searching the web: weather Lisbon…"), edited as the agent's steps go by (at most one edit per TG_EDIT_MIN_S, the
# latest text wins), and the answer's first part is edited into its place (or it is
# deleted and the answer sent as usual: send.py's _finish(), with the reply). Anything
# else that wants a message it edits as a turn goes (streamed text) uses the same
# object: say(text), update(api). Calls on one Status hold its `lock`.
import time
import asyncio
import mimi
from mimi import limits, log, bus, channels
from mimi.channels.telegram import poller as tg
from mimi.services import wifi
from micropython import const

# A tool's words, one "\n<tool>\t<words>" row each: one bytes constant, not a dict of str
# objects a .mpy would make in the heap for every turn the module is loaded.
_STEPS = const(b"\nweb_search\tsearching the web\nget_current_time\tchecking the time"
               b"\nread_file\treading a file\nwrite_file\twriting a file\nedit_file\tediting a file"
               b"\nlist_dir\tlooking at the files\ncron_add\tscheduling\ncron_list\treading the schedule"
               b"\ncron_remove\tchanging the schedule\ngpio_write\tswitching a pin"
               b"\ngpio_read\treading a pin\ngpio_read_all\treading the pins\n")


class Status:
    def __init__(self, chat_id, reply_to=None):
        self.chat_id = chat_id
        self.reply_to = reply_to  # a group's message the turn answers
        self.start = time.ticks_ms()
        # ms into the turn before the message shows: a slow turn's progress; 0 for
        # text that should show at once (an answer streaming in)
        self.delay = limits.TG_PROGRESS_AFTER_S * 1000
        self.every = limits.TG_EDIT_MIN_S  # s between edits (less for an answer streaming in)
        self.text = "thinking\u2026"  # what it should say
        self.shown = None  # what it says
        self.message_id = None  # None: not sent (yet)
        self.after = 0  # ticks_ms before which it is not sent or edited again
        self.gave_up = False  # Telegram refused it: no more tries this turn
        self.lock = asyncio.Lock()
        self.task = None  # the "typing" task that goes with it (tgsend.py)

    def step(self, step, detail=""):
        """An agent step (a tool and what it works on) as the message's text."""
        k = b"\n" + step.encode() + b"\t"
        i = _STEPS.find(k)
        words = str(_STEPS[i + len(k):_STEPS.find(b"\n", i + 1)], "utf-8") if i >= 0 else "working on " + step
        self.say("%s: %s\u2026" % (words, detail) if detail else words + "\u2026")

    def say(self, text):
        self.text = text

    def due(self):
        now = time.ticks_ms()
        return not self.gave_up and self.text != self.shown and \
            time.ticks_diff(now, self.start) >= self.delay and \
            time.ticks_diff(now, self.after) >= 0

    async def event(self, bot, msg):
        """A message of the running turn (the poller hands it here: send.py is not loaded
        for it): the answer so far, shown at once and edited at most every
        TG_STREAM_EDIT_S (TG_EDIT_MIN_S in a group; a version over TG_MSG_MAX is left
        out: the final one is split), or a step, which the message says once shown. A
        turn's first status (no step) means this one's turn is over, its reply never
        came: send.py ends it and starts the new one."""
        meta = msg.meta or {}
        if msg.kind == bus.PARTIAL:  # (UTF-8 bytes are never fewer than Telegram's UTF-16 units)
            if len(memoryview(msg.content)) <= limits.TG_MSG_MAX:
                self.delay, self.every = 0, limits.TG_EDIT_MIN_S if meta.get("group") else limits.TG_STREAM_EDIT_S
                self.say(msg.content)
                if not self.lock.locked() and wifi.online():
                    async with self.lock:
                        await self.update(api(bot))
        elif "step" in meta:
            self.step(meta["step"], meta.get("detail"))
            if self.message_id is not None and not self.lock.locked():
                async with self.lock:
                    await self.update(api(bot))
        else:
            return await channels.load("telegram.send").send(bot, msg)
        between()

    async def update(self, api):
        """Send the message, or edit it to the latest text, when that is due. Never raises:
        progress is a nicety, and a refused one is not tried again this turn; while
        Telegram holds the chat off (a 429) it is left for later, not waited for."""
        if api is None or not self.due() or tg.quiet(self.chat_id):
            return
        text = self.text
        wait = self.every
        from mimi.channels.telegram.echo import call

        try:
            if self.message_id is None:
                p = {"chat_id": self.chat_id, "text": text}
                if self.reply_to:
                    p["reply_parameters"] = {"message_id": self.reply_to,
                                             "allow_sending_without_reply": True}
                self.message_id = (await call(api, "sendMessage", p))["message_id"]
            else:
                await call(api, "editMessageText", {"chat_id": self.chat_id,
                                                    "message_id": self.message_id, "text": text})
            self.shown = text
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: B902 - a progress line never fails a turn
            if isinstance(e, tg.ApiError) and e.code == 429:
                wait = min(e.retry_after or wait, limits.TG_RETRY_AFTER_MAX_S)
            else:
                self.gave_up = True
            log.warning(tg.TAG, "progress message for %s: %s", self.chat_id, e)
        self.after = time.ticks_add(time.ticks_ms(), wait * 1000)


def between():
    """A message of a running turn is out (its status, a step, the answer so far): on a
    short heap what sent it (echo.py, which update() loads for its call(); send.py)
    goes until the next one, so that the turn's LLM calls have its room."""
    if mimi.short():
        mimi.drop("channels.telegram.send")
        mimi.drop("channels.telegram.echo")
        mimi.drop("channels.sending")


def api(bot):
    """The send connection (None without a bot token)."""
    if bot.send_api is None and bot.poll_api is not None:
        bot.send_api = tg.Api(bot.poll_api.base, bot.poll_api.token, limits.TG_SEND_TIMEOUT_S)
    return bot.send_api


async def action(bot, chat_id):
    if tg.quiet(chat_id):  # Telegram holds the chat off (a 429): no typing until it is over
        return
    try:
        await api(bot).call("sendChatAction", {"chat_id": chat_id, "action": "typing"})
    except asyncio.CancelledError:
        raise
    except Exception as e:
        log.warning(tg.TAG, "typing for %s failed: %s", chat_id, e)


async def typing(bot, st):
    """While a turn runs: "typing" renewed (Telegram drops it after 5 s) and, once the
    turn is slow, its progress message; for TG_TYPING_MAX_S at most. The Status stays
    the chat's after that, until its turn ends (send.py: the reply, or the next turn's
    first status): the steps and the answer so far still edit its message, and the
    answer takes its place. With no message shown there is nothing for it to take: the
    Status goes, so a turn that ends with no reply (a refused cron turn, an empty answer)
    leaves none holding the sending connection."""
    while time.ticks_diff(time.ticks_ms(), st.start) < limits.TG_TYPING_MAX_S * 1000:
        await asyncio.sleep(limits.TG_TYPING_S)
        if bot.poll_api is None:
            break
        if wifi.online():
            async with st.lock:
                await action(bot, st.chat_id)
                await st.update(api(bot))
            between()
    if st.message_id is None and bot.typing.get(st.chat_id) is st:
        del bot.typing[st.chat_id]
