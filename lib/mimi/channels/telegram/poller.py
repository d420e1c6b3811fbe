# Telegram channel: the getUpdates long poll on the asyncio loop. What goes out
# (replies, answers to commands and strangers, "typing") is send.py (this package),
# loaded at the first message out, with the formatter (format.py) it needs.
#
# One keep-alive connection to tg_api_base for the long poll (busy for up to 30 s
# at a time); send.py opens a second one while a reply is on its way, so a reply
# never waits for a poll to end. Access: only chats in tg_allow reach the agent, and
# only they are sent to; a stranger is told its chat id (see channels.tell_again)
# and nothing else happens: no LLM call, no file write. While WiFi is down the poller
# waits and replies wait in the dispatcher's lane (bounded); they go out, in order,
# once the supervisor is online again.
#
# (The module's table holds 29 names, Telegram's class 11 and the Telegram object's 17: one
# more of each makes the table a step bigger on a frozen board's heap, 48-64 B. What a
# function alone needs, it imports there.)
import asyncio
import mimi
from mimi import limits, log, bus, channels
from mimi.config.settings import cfg
from mimi.net import tls
from mimi.services import wifi, ntp

TAG = "tg"
CHANNEL = "telegram"


_quiet = {}  # chat id (str) -> ticks_ms until which Telegram refuses calls for it (a 429)


def quiet(chat_id):
    """ms left before Telegram takes calls for chat_id again (0: now): a 429's
    retry_after holds for every method on that chat."""
    key = str(chat_id)
    t = _quiet.get(key)
    if t is None:
        return 0
    import time

    left = time.ticks_diff(t, time.ticks_ms())
    if left <= 0:
        del _quiet[key]
        return 0
    return left


class Api:
    """Bot API calls over one keep-alive AsyncClient. A call for a chat that Telegram
    answered 429 waits out its retry_after first (quiet())."""

    def __init__(self, base, token, timeout_s, client=None):
        self.base = base
        self.token = token
        if client is None:
            from mimi.net import http

            # ca=None: the client verifies against the board's root bundle (limits.CA_BUNDLE)
            client = http.AsyncClient(base, proxy=http.proxy_from_config(cfg), timeout_s=timeout_s,
                                      bufsize=limits.TG_RECV_BUF)
        self.client = client
        self.stale = False  # the network went away: the keep-alive socket is dead

    async def call(self, method, params=None, deadline_s=limits.TG_SEND_TIMEOUT_S, sink=None, form=None,
                   chat=None):
        """-> the result; ApiError for Telegram's refusals. params: a dict, or the body
        made already (send.py: a text in pieces, its chat id in chat). sink: reads the
        answer as it arrives (getUpdates' Updates, send.py's Echo); when it took it, its
        .result is returned. form: (Content-Type, body) sent instead of params as JSON
        (a photo: telegram/photo.py)."""
        if chat is None and isinstance(params, dict):
            chat = params.get("chat_id")
        if chat is not None:
            while quiet(chat):
                await asyncio.sleep_ms(quiet(chat))
        r = self._request(method, params, form, deadline_s, sink)
        params = form = None  # not held while the answer is awaited
        return _answer(await r, sink, chat)

    def _request(self, method, params, form, deadline_s, sink):
        # (a function of its own: the body, path and headers it makes are not left
        # behind in call()'s frame while the answer is awaited)
        if form is None:
            import json

            form = "application/json", params if isinstance(params, tuple) else json.dumps(params or {}).encode()
        return self.client.request("POST", "/bot%s/%s" % (self.token, method), headers={"Content-Type": form[0]},
                                   body=form[1], deadline_s=deadline_s, sink=sink, ready=self._ready)

    async def _ready(self):
        # Under the client's lock (the reconnect must not cut a call in flight)
        if self.stale:  # after an outage a request on the old socket would time out
            self.stale = False
            self.client.close()
        if tls.must_yield():  # the agent's LLM call needs the room for its TLS connection
            self.client.close()
            while tls.must_yield():
                await asyncio.sleep_ms(limits.TLS_YIELD_POLL_MS)

    def close(self):
        try:
            self.client.close()
        except Exception:
            pass


def _answer(r, sink, chat):
    """The result of Telegram's answer r (read whole, or by the sink: its .result when
    it took the answer, else the answer's first bytes); or the ApiError for its refusal
    raised (apierror.py: loaded by the first, which quiets the chat after a 429: quiet())."""
    status = r.status
    if sink is not None and status == 200 and sink.seen:
        return getattr(sink, "result", None)
    from mimi import jsonutil

    try:
        obj = jsonutil.loads(r.body if sink is None else sink.head)
    except ValueError:
        obj = None
    if isinstance(obj, dict) and status == 200 and obj.get("ok"):
        return obj.get("result")
    from mimi.channels.telegram.apierror import refused

    raise refused(status, obj, chat, _quiet)


def allowed(chat_id):
    return str(chat_id) in cfg.get("tg_allow").split(",")


def after(pre, key):
    """Where the value of `key` (b'"name"') starts in the first bytes of an answer, or -1."""
    i = pre.find(key)
    if i < 0:
        return -1
    i += len(key)
    while i < len(pre) and pre[i] in b" :\t\r\n":
        i += 1
    return i


def number(pre, key):
    """The number `key` has in the first bytes of an answer ('{"update_id":123,...'), or None."""
    i = j = after(pre, key)
    while 0 <= j < len(pre) and 48 <= pre[j] <= 57:
        j += 1
    return int(pre[i:j]) if j > i else None


class Updates:
    """A getUpdates answer read as it arrives (the HTTP client's sink): each update of
    "result" is copied into one buffer (grown as an update needs, up to `most`: what
    the heap spares) and decoded and classified alone, so a batch never sits in RAM
    whole. An update bigger than that, or one that does not decode, is skipped by its
    update_id (read from its first bytes); once the text kept for the agent passes
    `budget`, the rest is left for the next poll (not confirmed, so nothing is lost).
    The empty answer of an idle poll is taken here; any other is read by
    updates.py, loaded for it and dropped after the poll."""

    def __init__(self, bot, most, budget):
        self.bot = bot
        self.most = most
        self.budget = budget
        self.head = b""  # the first bytes of the body: an error answer is read from them
        self.acts = []  # [(update_id, action or None)] in order
        self.full = False
        self.left = None  # (update_id, chat id) of the first update not taken for want of room
        self.seen = False  # a "result" array was there
        self.idle = True  # nothing but the start of an empty answer so far (the decoder's state: updates.start)

    def __call__(self, mv):
        b = bytes(mv)
        if self.idle:  # so far the start of the empty answer: no decoder needed yet
            self.head += b
            # (a long poll that saw no update; Telegram's JSON is compact)
            if b'{"ok":true,"result":[]}'.startswith(self.head):
                self.seen = self.head == b'{"ok":true,"result":[]}'
                return
            self.idle = False
            b, self.head = self.head, b""  # the decoder reads it all from the start
            self.seen = False
            channels.load("telegram.updates").start(self)
        channels.load("telegram.updates").feed(self, b)


class Telegram:
    def __init__(self):
        self.poll_api = None
        self.send_api = None
        self.bot_id = None
        self.username = None
        self.offset = 0
        self.saved_offset = None  # as in /tg_offset.json (None: no file yet; there, it is rewritten in place)
        self.unsaved = 0  # updates taken since the offset was last written
        self.limit = limits.TG_POLL_LIMIT  # updates asked for (fewer after a batch cut short)
        self.stuck = 0  # polls in a row that took no update for want of room
        self.owed = {}  # chat id -> its turn's progress message id or None: its reply found no room (owe())
        self.polling = None  # the task while its getUpdates is in flight (run()); None again once cut
        self.recent = []  # keys (small ints) of the (chat, message_id) pairs handled last
        self.strangers = {}  # chat id -> time told (tgsend)
        self.typing = {}  # chat id -> renewal task (tgsend)
        self.paused = False  # the poller is waiting for WiFi
        self.changed = asyncio.ThreadSafeFlag()
        cfg.watch(self._on_config)
        self.llm = asyncio.ThreadSafeFlag()  # set when the agent's LLM call starts or ends
        tls.watch(self.llm.set)

    def _on_config(self, keys):
        if "tg_token" in keys or "tg_api_base" in keys or "proxy_host" in keys:
            self.changed.set()

    # ---------------------------------------------------------------- polling
    async def run(self):
        backoff = limits.TG_BACKOFF_MIN_S
        conflict = limits.TG_CONFLICT_MIN_S
        while True:
            token = cfg.get("tg_token")
            if not (token and wifi.online() and ntp.clock_ready()):
                # no token, WiFi down, or the clock not set yet: connect.py's wait (its
                # code held only while it waits) -> whether the backoff starts again
                try:
                    if await channels.load("telegram.connect").wait(self, token):
                        backoff = limits.TG_BACKOFF_MIN_S
                finally:
                    mimi.drop("channels.telegram.connect")
                    import gc  # (as mimi.run(): what is made next fills its room, low)

                    gc.collect()
                continue  # the settings may have changed meanwhile
            try:
                if self.poll_api is None or token != self.poll_api.token or self.poll_api.base != cfg.get("tg_api_base"):
                    mimi.run("channels.telegram.connect", "connect", self, token)
                if self.username is None:
                    # (here, not in connect.py: the connection this opens is kept, and
                    # would be made above connect.py's code, leaving its room a hole)
                    me = await self.poll_api.call("getMe")
                    self.username = me.get("username") or ""
                    self.bot_id = str(me.get("id") or self.bot_id)
                    me = None  # (not kept by this frame for good)
                    log.info(TAG, "bot @%s ready, polling", self.username)
                if self.owed:  # (connect.py's: loaded for it)
                    await channels.load("telegram.connect").say_owed(self)
                    mimi.drop("channels.telegram.connect")
                batch = Updates(self, *self._room())
                # getUpdates, run in this task (its guard cuts it: see _guard()); unless
                # the agent's LLM call needs the memory for its TLS connection (net/tls.py:
                # a board without room for two): then no poll starts
                while tls.must_yield():
                    await asyncio.sleep_ms(limits.TLS_YIELD_POLL_MS)
                self.polling = asyncio.current_task()
                guard = asyncio.create_task(self._guard())
                try:
                    _answer(await self._get_updates(batch), batch, None)
                except asyncio.CancelledError:
                    if self.polling is not None:  # not cut: the poller itself is being stopped
                        raise
                    self.poll_api.close()  # the request was cut: the connection is out of step
                    continue  # its updates come with the next poll
                finally:
                    self.polling = None
                    guard.cancel()
                    guard = None
                    mimi.drop("channels.telegram.updates")  # (loaded when the answer had updates)
                wifi.healthy()
                backoff = limits.TG_BACKOFF_MIN_S
                conflict = limits.TG_CONFLICT_MIN_S
                # a batch cut short: that many next time; else back up towards the most
                self.limit = max(1, len(batch.acts)) if batch.full else min(2 * self.limit, limits.TG_POLL_LIMIT)
                if batch.acts or batch.full:  # (updates.py: the batch is not held by this frame meanwhile)
                    batch = channels.load("telegram.updates").handle(self, batch, backoff)
                    batch = await batch
                    mimi.drop("channels.telegram.updates")
                    if batch:  # none taken: not at once again
                        await asyncio.sleep(batch)
                else:
                    self.stuck = 0
            except asyncio.CancelledError:
                raise
            except MemoryError:  # no import here: the failure path would need room too
                batch = None  # (what the failed poll took: not held through the wait)
                self._free()
                log.warning(TAG, "polling found no room in the heap; retry in %d s", backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, limits.TG_BACKOFF_MAX_S)
            except Exception as e:  # Telegram's refusals, network, TLS, timeouts (connect.py)
                batch = None
                try:
                    wait, on_change, backoff, conflict = mimi.run("channels.telegram.connect", "failed", self,
                                                                  e, backoff, conflict)
                except MemoryError:  # (its code did not load)
                    self._free()
                    wait, on_change, backoff = backoff, False, min(backoff * 2, limits.TG_BACKOFF_MAX_S)
                if on_change:
                    await bus.wait_event(self.changed, wait)
                elif wait:
                    await asyncio.sleep(wait)

    def _get_updates(self, batch):
        # The request, awaited by run() itself (Api.call's frame is not needed: no chat
        # to wait for); a function of its own: the parameters it makes are not left
        # behind in run()'s frame while the poll waits
        return self.poll_api._request("getUpdates", {
            "offset": self.offset, "timeout": limits.TG_POLL_TIMEOUT_S,
            "limit": self.limit, "allowed_updates": ["message"]},
            None, limits.TG_POLL_TIMEOUT_S + limits.TG_HTTP_SLACK_S, batch)

    async def _guard(self):
        """While a poll is in flight (a task of its own, with the poll's deadline the only
        other one: bus.within): when the agent's LLM call starts and the board has no room
        for two TLS connections, the idle send connection is closed and the poll cut."""
        while True:
            await self.llm.wait()
            if tls.must_yield():
                if self.send_api and not self.send_api.client.lock.locked():
                    self.send_api.client.close()
                task, self.polling = self.polling, None  # (None: cut; owe() may have cut it already)
                if task is not None:
                    task.cancel()
                return

    def owe(self, chat_id):
        """A reply to chat_id found no room in the heap to be sent, even after freeing
        (send.py's NO_ROOM did not go either): the poller says so itself before its next
        poll, on its own connection (its code resident, its buffer held), the poll in
        flight cut for it; in place of the turn's progress message when it has one (the
        answer so far, stale), the chat's Status let go (its send connection can close)."""
        st = self.typing.pop(chat_id, None)
        if self.owed.get(chat_id) is None:  # (one each: replies go only to the chats of tg_allow)
            self.owed[chat_id] = st.message_id if st is not None else None
        task, self.polling = self.polling, None  # (None: cut)
        if task is not None:
            task.cancel()

    def _free(self):
        """No room in the heap for a poll: what Telegram can give back is (the idle send
        connection and sending code, the spare: mimi.spare()), and one update is asked
        for at a time."""
        if not self.typing and self.send_api is not None:
            self.send_api.close()
            self.send_api = None
        for name in ("channels.telegram.send", "channels.telegram.echo", "channels.telegram.status",
                     "channels.telegram.format"):
            mimi.drop(name)
        self.limit = 1
        mimi.spare(False)  # (taken again by the next turn: worker.handle())

    def _room(self):
        """(bytes of the biggest update taken, text bytes kept for the agent) for the
        next batch: what the heap can spare now."""
        import gc

        free = gc.mem_free()
        if free < 3 * limits.TG_UPDATE_MAX:  # garbage counts as used until a collection:
            gc.collect()  # a figure taken just before one skipped (lost) a 280-byte message
            free = gc.mem_free()
        return min(limits.TG_UPDATE_MAX, free // 3), free // 4

    async def send(self, msg):
        """The dispatcher's sender for channel "telegram": only to chats in tg_allow (a
        cron.json written by hand could name another)."""
        if not allowed(msg.chat_id):
            log.error(TAG, "not sent to chat %s, which is not in tg_allow: %s", msg.chat_id,
                      bus.pieces(msg.content)[0][:60])
            return
        st = self.typing.get(msg.chat_id)
        if st is not None and (msg.kind == bus.PARTIAL or msg.kind == bus.STATUS):
            return await st.event(self, msg)  # (status.py's: the turn runs without send.py)
        await channels.load("telegram.send").send(self, msg)


bot = None


def install():
    """Create the channel (once)."""
    global bot
    if bot is None:
        bot = Telegram()
    return bot


def run():
    """The poller task (started by dispatch.start())."""
    return install().run()


async def send(msg):
    """The dispatcher's sender (registered by dispatch.start())."""
    await install().send(msg)


def owe(chat_id):
    """The dispatcher's last word for a reply that found no room (Telegram.owe())."""
    install().owe(chat_id)


def __getattr__(name):
    if name == "ApiError":  # (apierror.py: loaded by the first refusal)
        from mimi.channels.telegram.apierror import ApiError

        return ApiError
    raise AttributeError(name)
