# The message bus between the asyncio loop (main thread) and the agent thread.
# Two bounded queues. The unix port has no GIL, so every access holds a _thread
# lock; the loop side sleeps on an asyncio.ThreadSafeFlag (set() is safe from the
# other thread), the agent side polls with time.sleep_ms, which releases the GIL on
# the board. A full queue refuses the message; the caller tells the sender.
import sys
import time
import _thread
import asyncio
from mimi import limits

# Message kinds on the outbound queue.
REPLY = "reply"
STATUS = "status"
PARTIAL = "partial"  # an answer's text so far while it streams (the REPLY follows)

# What a channel tells its sender when inbound.put() refused the message.
BUSY = "Busy, try again shortly."


class Msg:
    __slots__ = ("channel", "chat_id", "content", "kind", "meta")

    def __init__(self, channel, chat_id, content, kind=REPLY, meta=None):
        from mimi import channels  # the table, above the bus

        channels.get(channel)  # an unknown channel is an error here, not a lost message later
        self.channel = channel
        self.chat_id = str(chat_id)
        self.content = content
        self.kind = kind
        self.meta = meta  # channel-specific routing data (e.g. Telegram message id)

    @property
    def session(self):
        return session_key(self.channel, self.chat_id)

    def __repr__(self):
        return "Msg(%s:%s %s %d chars)" % (self.channel, self.chat_id, self.kind,
                                            sum(len(p) for p in pieces(self.content)))


# A message's text is a str, or, for a long answer (a streamed one, llm/stream.py), a
# tuple of str pieces of about limits.PROMPT_CHUNK each: never one block as big as
# itself, which a short heap does not have. Channels send it piece by piece.
def pieces(content):
    """The text as a tuple of str."""
    return content if isinstance(content, tuple) else (content or "",)


def session_key(channel, chat_id):
    """'<the channel's prefix>_<chat_id>'; ValueError for an unknown channel."""
    from mimi import channels

    return "%s_%s" % (channels.get(channel).prefix, chat_id)


class Queue:
    """per_chat: fair to chats (the inbound queue). A chat's new message goes behind
    the messages of other chats that have fewer queued (round robin: a flooding chat
    waits behind the others), and a chat with per_chat messages queued is refused
    while others still get in."""

    def __init__(self, size=limits.BUS_QUEUE_LEN, per_chat=None):
        self.size = size
        self.per_chat = per_chat
        self._items = []
        self._lock = _thread.allocate_lock()
        self.flag = asyncio.ThreadSafeFlag()
        self.dropped = 0

    def __len__(self):
        with self._lock:
            return len(self._items)

    def put(self, msg):
        """Add without blocking; False when the queue is full (nothing added)."""
        items = self._items
        with self._lock:
            if len(items) >= self.size:
                self.dropped += 1
                return False
            if self.per_chat is None:
                items.append(msg)
            else:
                chat = (msg.channel, msg.chat_id)
                mine = sum(1 for m in items if (m.channel, m.chat_id) == chat)
                if mine >= self.per_chat:
                    self.dropped += 1
                    return False
                # before the first message further down its own chat's line than
                # this one is in its chat's: round robin between the chats
                seen = {}
                at = len(items)
                for n, m in enumerate(items):
                    k = (m.channel, m.chat_id)
                    seen[k] = seen.get(k, 0) + 1
                    if seen[k] > mine + 1:
                        at = n
                        break
                items.insert(at, msg)
        self.flag.set()
        return True

    def put_wait(self, msg, timeout_ms=None, idle_ms=limits.AGENT_IDLE_MS):
        """For the agent thread: put, retrying with short sleeps while the queue is
        full. False only when timeout_ms ran out (None: keep trying)."""
        start = time.ticks_ms()
        while not self.put(msg):
            if timeout_ms is not None and time.ticks_diff(time.ticks_ms(), start) >= timeout_ms:
                return False
            time.sleep_ms(idle_ms)
        return True

    def get_nowait(self):
        with self._lock:
            return self._items.pop(0) if self._items else None

    def get_blocking(self, timeout_ms=None, idle_ms=limits.AGENT_IDLE_MS):
        """For the agent thread: wait (sleeping, not spinning) for a message."""
        start = time.ticks_ms()
        while True:
            m = self.get_nowait()
            if m is not None:
                return m
            if timeout_ms is not None and time.ticks_diff(time.ticks_ms(), start) >= timeout_ms:
                return None
            time.sleep_ms(idle_ms)

    async def get(self):
        """For the asyncio loop: the next message, waiting on the flag. One task per
        queue only (a ThreadSafeFlag has a single waiter)."""
        prepare_loop()
        while True:
            m = self.get_nowait()
            if m is not None:
                return m
            await self.flag.wait()


async def ring(flag, ms):
    """Sets flag (an asyncio.ThreadSafeFlag) after ms: a waiter's deadline, as
    `ring = asyncio.create_task(bus.ring(flag, ms))`, `await flag.wait()`, then
    `ring.cancel()`. asyncio.wait_for_ms(flag.wait(), ms) runs the wait as a task of
    its own beside a runner task: two tasks and their frames, ~0.2 KB more (32-bit)
    for as long as it waits, made again at every wait."""
    await asyncio.sleep_ms(ms)
    flag.set()


# Deadlines without asyncio.wait_for(): it runs the awaited coroutine as a task of its
# own beside a runner task, 0.3 KB (32-bit) more than the wait itself for as long as it
# waits (a WebSocket client's ping wait: all the time). within() is one small task
# that cancels the waiting one and a frame: 0.17 KB. (A `with` form would hold 64 B
# less per wait, but its class costs 160 B resident.)
async def within(aw, secs):
    """aw awaited in this task -> its result; after secs it is cancelled (as wait_for
    cancels its task) and asyncio.TimeoutError raised instead; a cancel from
    elsewhere stays a CancelledError."""
    timer = asyncio.create_task(alarm(asyncio.current_task(), secs))
    try:
        return await aw
    except asyncio.CancelledError:
        if timer.done():
            raise asyncio.TimeoutError
        raise
    finally:
        timer.cancel()


async def alarm(task, secs):
    """Cancels task after secs: within()'s alarm (and net/asynchttp.py's, written out)."""
    await asyncio.sleep(secs)
    task.cancel()


async def wait_event(ev, secs):
    """Wait for ev (an asyncio.Event) at most secs -> True when it was set."""
    try:
        await within(ev.wait(), secs)
        return True
    except asyncio.TimeoutError:
        return False


def prepare_loop():
    """Unix port only: call before any ThreadSafeFlag is waited on in a new loop.

    MicroPython's select.poll on unix (POSIX optimisation in extmod/modselect.c)
    keeps fd entries in an array; when the array is reallocated it "moves" the
    pollfd pointer of every entry, including non-fd objects whose pointer is
    NULL, so a waiting ThreadSafeFlag + the 5th (9th, ...) socket = SIGSEGV.
    Growing the array once, while only fds are registered, keeps it from ever
    growing again under the loop's socket count. The esp32 port has no such array."""
    if sys.platform != "linux":
        return
    q = asyncio.core._io_queue
    if getattr(q, "mimi_grown", False):
        return
    for v in q.map.values():
        if isinstance(v[2], asyncio.ThreadSafeFlag):
            return  # too late to grow safely; call prepare_loop() earlier
    n = limits.POLL_PREGROW
    base = 1 << 20  # never a real fd; registered with no events and removed at once
    for i in range(n):
        q.poller.register(base + i, 0)
    for i in range(n - 1, -1, -1):  # last slot first: max_used shrinks back to 0
        q.poller.unregister(base + i)
    q.mimi_grown = True


inbound = Queue(per_chat=limits.BUS_CHAT_QUEUED)
outbound = Queue()
