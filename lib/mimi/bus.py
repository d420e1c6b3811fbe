# The message bus between the asyncio loop (main thread) and the agent thread.
# Two bounded queues. The unix port has no GIL, so every access holds a _thread
# lock; the loop side sleeps on an asyncio.ThreadSafeFlag (set() is safe from the
# other thread), the agent side polls with time.sleep_ms, which releases the GIL on
# the board. A full queue refuses the message; the caller tells the sender.
import time
import _thread
import asyncio
from mimi import limits

# Message kinds on the outbound queue.
REPLY = "reply"
STATUS = "status"


class Msg:
    __slots__ = ("channel", "chat_id", "content", "kind", "meta")

    def __init__(self, channel, chat_id, content, kind=REPLY, meta=None):
        self.channel = channel
        self.chat_id = str(chat_id)
        self.content = content
        self.kind = kind
        self.meta = meta  # channel-specific routing data (e.g. Telegram message id)

    @property
    def session(self):
        return session_key(self.channel, self.chat_id)

    def __repr__(self):
        return "Msg(%s:%s %s %d chars)" % (self.channel, self.chat_id, self.kind, len(self.content or ""))


PREFIX = {"telegram": "tg", "websocket": "ws", "system": "sys"}


def session_key(channel, chat_id):
    return "%s_%s" % (PREFIX.get(channel, channel), chat_id)


class Queue:
    def __init__(self, size=limits.BUS_QUEUE_LEN):
        self.size = size
        self._items = []
        self._lock = _thread.allocate_lock()
        self.flag = asyncio.ThreadSafeFlag()
        self.dropped = 0

    def __len__(self):
        with self._lock:
            return len(self._items)

    def put(self, msg):
        """Add without blocking; False when the queue is full (nothing added)."""
        with self._lock:
            if len(self._items) >= self.size:
                self.dropped += 1
                return False
            self._items.append(msg)
        self.flag.set()
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
        """For the asyncio loop: the next message, waiting on the flag."""
        while True:
            m = self.get_nowait()
            if m is not None:
                return m
            await self.flag.wait()


inbound = Queue()
outbound = Queue()
