# The outbound dispatcher (a loop task): takes replies and statuses off
# bus.outbound and hands each to its channel's sender. Every channel has its own
# lane (a short queue and a task while it holds messages), so a slow channel (Telegram
# over TLS) never holds up another; within a channel the order is kept (status before
# reply). An idle lane holds no task.
# It also starts the channels of the table (channels/__init__.py): each configured
# one's code loaded, its sender registered here, its loop task handed to startup.
import asyncio
import mimi
from mimi import bus, log, limits, channels

NO_ROOM = ("Sorry, my answer did not fit in the board's free memory to be sent. It is saved in "
           "this chat: ask me to repeat it, shorter, or try again in a moment.")

_lanes = {}
class Lane:
    def __init__(self, channel, send, owe=None):
        self.channel = channel
        self.send = send
        self.owe = owe
        self.items = []
        self.lost = {}  # chat id -> replies dropped: told once the lane caught up
        self.task = None

    def start(self):
        """The lane's task, while it has messages to send: it ends once they went."""
        if self.task is None and self.items:
            self.task = asyncio.create_task(self.run())

    def push(self, msg):
        last = self.items[-1] if self.items else None
        if last and last.kind == msg.kind == bus.PARTIAL and last.chat_id == msg.chat_id:
            self.items[-1] = msg  # the text so far: the newer one says all the older one did
            return
        if len(self.items) >= limits.DISPATCH_LANE_MAX:
            # Make room by dropping a status first; a reply is dropped with a log line, and
            # its chat told later (run()), once however many it lost, a few chats at most
            for i, m in enumerate(self.items):
                if m.kind != bus.REPLY:
                    self.items.pop(i)
                    break
            else:
                old = self.items.pop(0)
                log.error("dispatch", "%s is not keeping up; dropped %r", self.channel, old)
                n = self.lost.get(old.chat_id, 0)
                if n or len(self.lost) < limits.DISPATCH_LOST_MAX:
                    self.lost[old.chat_id] = n + 1
        self.items.append(msg)
        self.start()

    async def run(self):
        try:
            while self.items or self.lost:
                if self.items:
                    msg = self.items.pop(0)
                else:  # caught up: each chat that lost replies meanwhile is told, once
                    chat, n = self.lost.popitem()
                    msg = bus.Msg(self.channel, chat, mimi.run("channels.sending", "lost", n))
                try:
                    try:
                        await self.send(msg)
                    except MemoryError:
                        await self.no_room(msg)
                except Exception as e:  # (no_room()'s too: the messages behind it wait)
                    log.exception("dispatch", "sending %r" % (msg,), e)
                msg = None
                await asyncio.sleep_ms(0)  # let the channel's own tasks (client senders) run
        finally:
            if self.task is asyncio.current_task():  # (not a newer one: run()'s end cancels)
                self.task = None


    async def no_room(self, msg):
        """A message that found no room in the heap: what can be freed is (the spare
        with it: mimi.spare()) and a reply goes again once; failing that, the person is
        told in a few words, or else by the channel's owe(chat_id) when it has one (with
        what it holds already, later). (A channel sends each message whole or raises
        before any of it went: Telegram's long replies deal with a full heap part by part.)"""
        mimi.spare(False)
        if msg.kind == bus.REPLY:
            for text in (msg.content, NO_ROOM):
                try:
                    await self.send(bus.Msg(msg.channel, msg.chat_id, text, bus.REPLY, msg.meta))
                    break
                except MemoryError:
                    text = None
            if text is None and self.owe:
                self.owe(msg.chat_id)
            log.warning("dispatch", "no room in the heap for a reply to %s:%s; %s", msg.channel, msg.chat_id,
                        "told so" if text is NO_ROOM else "sent after freeing memory" if text
                        else "the channel tells later" if self.owe else "dropped")


def register(channel, send, owe=None):
    """send: `async def send(msg)` for messages whose msg.channel is `channel` (a
    channel of the table: start() registers each one it starts); owe: the channel's
    `owe(chat_id)`, if it has one: a reply found no room to be sent, say so later."""
    channels.get(channel)
    lane = Lane(channel, send, owe)
    _lanes[channel] = lane


def route(msg):
    lane = _lanes.get(msg.channel)
    if lane is None:  # a channel that is not running (not configured)
        if msg.kind == bus.REPLY:
            log.warning("dispatch", "%s is not running; reply to %s only logged: %s",
                        msg.channel, msg.chat_id, bus.pieces(msg.content)[0][:128])
        return
    lane.push(msg)


async def run():
    """The dispatcher task (startup.tasks()). A lane's task starts when it is given
    messages (Lane.push())."""
    try:
        while True:
            route(await bus.outbound.get())
            await asyncio.sleep_ms(0)  # lanes run between messages: they fill only when a channel is slow
    finally:
        for lane in _lanes.values():
            if lane.task:
                lane.task.cancel()
                lane.task = None


_started = []


def start(row):
    """Load the channel's module, register its sender with the dispatcher and return
    its loop task (a coroutine, its steps timed by the stall detector)."""
    import sys
    from mimi.services import loopwatch

    __import__(row.module)
    mod = sys.modules[row.module]
    if row.module.count(".") > 2:  # its package (channels/websocket/): a folder, its __init__ a comment
        mimi.unload(row.module.rpartition(".")[0])
    register(row.name, mod.send, getattr(mod, "owe", None))
    _started.append(row.name)
    return loopwatch.watch(row.name, mod.run())


def _due(cfg):
    return [row for row in channels.TABLE if row.name not in _started and channels.configured(row, cfg)]


def _waiting():
    return [row for row in channels.available() if row.name not in _started]


def tasks():
    """The loop tasks of every configured channel (startup.tasks()), plus, while some
    channel still waits for its setting, a task that starts it once it is set."""
    from mimi.config.settings import cfg

    out = [start(row) for row in _due(cfg)]
    if _waiting():
        out.append(_start_later(cfg))
    return out


async def _start_later(cfg):
    flag = asyncio.ThreadSafeFlag()  # settings may change from any thread
    cfg.watch(lambda keys: flag.set())
    while _waiting():
        await flag.wait()
        for row in _due(cfg):
            asyncio.create_task(start(row))
