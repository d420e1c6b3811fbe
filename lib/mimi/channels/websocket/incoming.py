# What a WebSocket client's frames run (connection.py's Client.run() loads this when
# bytes arrive and, on a short heap, drops it once they are handled): a frame read and
# answered (ping, close; a broken one closed with its code), a message taken apart (the
# JSON commands: a message for the agent, the usage report, a chart), and the close
# handshake. A client idle, or waiting for its turn's reply, holds none of it.
import json
import asyncio
import mimi
from mimi import limits, log, bus
from mimi.net import wsproto as wp, wsread as wr
from mimi.channels.websocket import gateway as gw, connection as wc
from micropython import const

_ID_OK = const("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


async def frame(c):
    """The next frame of client c (its first byte is in) read and handled -> True when
    the connection is over (closed by either side)."""
    try:
        fin, op, payload = await bus.within(wr.read_frame(c.rd, limits.WS_FRAME_MAX),
                                            limits.WS_FRAME_TIMEOUT_S)
        if op == wp.CLOSE:
            code = wr.close_code(payload)
            c.push(wp.close_payload(wp.NORMAL if code == 1005 else code), wp.CLOSE)
            await _flush(c)
            return True
        if op == wp.PING:
            c.push(payload, wp.PONG)
            return False
        if op == wp.PONG:
            return False
        asm = c.asm or wr.Assembler(limits.WS_FRAME_MAX)  # (kept only while a message is in parts)
        m = asm.feed(fin, op, payload)
        c.asm = asm if asm.op is not None else None
        if m and m[0] == wp.TEXT:
            from mimi.utf8 import valid

            if not valid(m[1]):
                raise wp.ProtocolError(wp.INVALID_DATA, "text is not valid UTF-8")
    except wp.ProtocolError as e:
        log.info("ws", "client %s: %s; closing with %d", c.chat_id, e.reason, e.code)
        await close(c, e.code, e.reason, e.skip)
        return True
    payload = None
    if m:
        _message(c, m[0], m[1])
    return False


async def _flush(c):
    if c.sender:
        try:
            await asyncio.wait_for(c.sender, limits.WS_CLOSE_WAIT_S)
        except Exception:
            pass


async def close(c, code, reason="", skip=0):
    """Our close frame, then wait (briefly) for the peer's, so it reads ours before
    the TCP connection goes (unread data would make the close a reset)."""
    c.push(wp.close_payload(code, reason), wp.CLOSE)
    try:
        await asyncio.wait_for(_linger(c.rd, skip), limits.WS_CLOSE_WAIT_S)
    except Exception:
        pass
    await _flush(c)


async def _linger(rd, skip):
    if skip > limits.WS_DRAIN_MAX:
        return
    await rd.skip(skip)
    while True:
        fin, op, payload = await wr.read_frame(rd, limits.WS_DRAIN_MAX)
        if op == wp.CLOSE:
            return


def _error(c, text, chat_id=None):
    obj = {"type": "error", "content": text}
    if chat_id:
        obj["chat_id"] = chat_id
    c.push(wc.text(obj))


def _message(c, op, data):
    if op != wp.TEXT:
        return _error(c, "only text frames with JSON are accepted")
    from mimi import jsonutil

    try:
        obj = jsonutil.loads(data)  # an escaped lone surrogate comes out as U+FFFD
    except ValueError:
        return _error(c, "invalid JSON")
    if not isinstance(obj, dict):
        return _error(c, "expected a JSON object")
    kind = obj.get("type")
    if kind == "usage":  # the ledger (its text too): tools/chat and the page show it
        try:
            return c.push(wc.text(mimi.run("usage.report usage.file", "report")))
        except Exception as e:  # noqa: B902 - out of memory, a broken ledger file
            return _error(c, "no usage report now: %s %s" % (type(e).__name__, e))
    if kind == "chart":  # a device's history for the page to draw (SVG)
        return c.push(wc.chart([obj.get("name"), obj.get("hours")]))
    if kind != "message":
        return _error(c, "unknown type %s; send {\"type\":\"message\",\"content\":\"...\"}"
                      % json.dumps(kind)[:40])
    content = obj.get("content")
    if not isinstance(content, str) or not content.strip():
        return _error(c, "content must be non-empty text")
    cid = obj.get("chat_id")
    if cid is not None and cid != "":
        cid = chat_id_ok(cid)
        if cid is None:
            return _error(c, "chat_id: 1 to %d of A-Z a-z 0-9 _ -" % limits.WS_CHAT_ID_MAX)
        c.chat_id = cid
    if not bus.inbound.put(bus.Msg(gw.CHANNEL, c.chat_id, content)):
        log.warning("ws", "inbound queue full; told client %s to retry", c.chat_id)
        _error(c, bus.BUSY, chat_id=c.chat_id)


def chat_id_ok(cid):
    """The chat id as a str if acceptable ([A-Za-z0-9_-], at most 31), else None."""
    if isinstance(cid, bool) or not isinstance(cid, (str, int)):
        return None
    cid = str(cid)
    if not 0 < len(cid) <= limits.WS_CHAT_ID_MAX:
        return None
    for ch in cid:
        if ch not in _ID_OK:
            return None
    return cid
