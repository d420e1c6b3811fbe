# A message sent or edited on Telegram (send.py's parts and lines of ours, status.py's
# progress message): call() writes a text in pieces as they are sent and reads the echo
# for its message_id alone. Its own module, so that a turn's step shown loads this, not
# the whole sending side.
import json
import mimi
from mimi import limits, log
from mimi.channels.telegram import poller as tg


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
        log.warning(tg.TAG, "%s went out; no room in the heap to read the answer", method)
        return {"message_id": None}


def _json(text):
    """A part's pieces as a JSON string's content, escaped as they are sent (one
    piece's copy at a time, not the part's: 4 KB less while a long answer's part goes)."""
    escaped = mimi.load("mimi.net.httpbody").escaped  # (the agent's requests load it too)

    return escaped(text, json.dumps)
