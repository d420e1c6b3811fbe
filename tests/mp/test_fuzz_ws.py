# Fuzzing the WebSocket gateway (issue 16, item 3): mutated frames through the frame
# reader and the message assembler (net/wsproto.py), then mutated upgrade requests
# and frame sequences through the real gateway on a loopback socket. The gateway must
# answer an HTTP error with a readable body, an error message or a close frame with a
# valid code, never leave the client hanging, and the next legitimate client's message
# must reach the agent. Seed and case count: tests/mp/fuzz.py.
import json
import asyncio
import fuzz
from mimi import bus, limits, log, net
from mimi.config import settings as config
from mimi.utf8 import valid
from mimi.channels import dispatch
from mimi.channels.websocket import gateway as websocket
from mimi.net import wsproto as wp, wsread as wr
from mimi.net import httpserver as hs
from mimi.net.httpserver import Reader

HEAPSIZE = "512k"
TIMEOUT = 300
KEY = b"\x01\x02\x03\x04"
TOKEN = "tok123-gateway"
OPS = (0, 1, 1, 1, 2, 8, 9, 10, 3, 11, 15)


def setup():
    config.cfg.load()
    config.cfg.set("ws_port", 0)
    config.cfg.set("ws_token", TOKEN)
    log.mute = True


class Bytes:
    """A stream with readexactly() over fixed bytes (EOFError at the end)."""

    def __init__(self, data):
        self.data = data

    async def readexactly(self, n):
        if len(self.data) < n:
            raise EOFError
        out, self.data = self.data[:n], self.data[n:]
        return out


def payload(r):
    obj = {"type": "message", "content": r.pick(fuzz.WORDS) or "hi"}
    if r.chance(30):
        obj["chat_id"] = fuzz.junk(r)
    if r.chance(60):
        obj = fuzz.mutate(r, obj)
    data = fuzz.dumps(obj)
    return fuzz.garble(r, data) if r.chance(40) else data


def hostile_frame(r, masked=True):
    op = r.pick(OPS)
    data = payload(r) if op in (0, 1, 2) else r.pick((b"", b"\x03\xe8", b"\x03\xe8bye", b"\x00",
                                                       b"\x13\x88", b"\x0b\xb8", b"x" * 200))
    fin = r.chance(80)
    if r.chance(5):
        data = b"y" * (limits.WS_FRAME_MAX + r.below(100))
    f = wp.frame(op, data, fin, KEY if masked and r.chance(95) else None)
    if r.chance(5):
        f = bytes([f[0] | r.pick((0x10, 0x20, 0x40))]) + f[1:]
    if r.chance(5):
        b = bytearray(f)
        b[r.below(len(b))] = r.below(256)
        f = bytes(b)
    return f


async def test_fuzz_frame_reader():
    what = "ws frames"
    for n, r in fuzz.cases(2000, what):
        data = b"".join(hostile_frame(r) for _ in range(r.below(6) + 1))
        if r.chance(20):
            data = data[:r.below(len(data) + 1)]
        s = Bytes(data)
        asm = wr.Assembler(limits.WS_FRAME_MAX)
        try:
            while True:
                fin, op, p = await wr.read_frame(s, limits.WS_FRAME_MAX)
                if op == wp.CLOSE:
                    wr.close_code(p)
                elif op in (wp.CONT, wp.TEXT, wp.BINARY):
                    m = asm.feed(fin, op, p)
                    if m and len(m[1]) > limits.WS_FRAME_MAX:
                        fuzz.fail(what, n, "a message over the cap: %d bytes" % len(m[1]), data)
        except EOFError:
            pass
        except wp.ProtocolError as e:
            if e.code not in (wp.PROTOCOL, wp.TOO_BIG) or not e.reason:
                fuzz.fail(what, n, "close code %r %r" % (e.code, e.reason), data)
        except Exception as e:  # noqa: B902 - any other escape is the finding
            fuzz.crash(what, n, e, data)


# ---- through the gateway ---------------------------------------------------

def request(path="/?token=" + TOKEN, extra=""):
    return ("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n%s\r\n"
            % (path, websocket.port, extra)).encode()


LINES = (b"GET / HTTP/1.1", b"POST /?token=x HTTP/1.1", b"GET /?token=%zz%00%ff HTTP/1.1",
         b"GET /chat?token=" + TOKEN.encode() + b" HTTP/1.1", b"GET  HTTP/1.1", b"G\xffT / HTTP/1.1",
         b"Origin: null", b"Origin: http://evil.example", b"Origin: http://127.0.0.1:1",
         b"Authorization: Bearer " + TOKEN.encode(), b"Authorization: Bearer", b"Authorization: \xed\xa0\x80",
         b"Sec-WebSocket-Version: 8", b"Sec-WebSocket-Key: short", b"Upgrade: h2c", b"Connection: close",
         b": empty", b"no colon", b"X: " + b"x" * 5000, b"Host: \xc0\x80", b"\x00\x01\x02")


def hostile_request(r):
    lines = request().split(b"\r\n")[:-2]
    for _ in range(r.below(3) + 1):
        k = r.below(4)
        if k == 0 and len(lines) > 1:
            del lines[r.below(len(lines))]
        elif k == 1:
            lines.insert(r.below(len(lines) + 1), r.pick(LINES))
        elif k == 2:
            i = r.below(len(lines))
            lines[i] = fuzz.garble(r, lines[i])
        else:
            lines[r.below(len(lines))] = r.pick(LINES)
    return b"\r\n".join(lines) + b"\r\n\r\n"


async def read_all(rd, what, n, sent):
    """Everything the gateway sends until it closes: its HTTP answer or frames."""
    out = b""
    try:
        while True:
            d = await asyncio.wait_for(rd.read(4096), 10)
            if not d:
                return out
            out += d
            if closed(out):  # both close frames are through: the client may go
                return out
    except asyncio.TimeoutError:
        fuzz.fail(what, n, "the gateway left the client hanging; got %r" % out[:200], sent)
    except OSError:  # reset after the close: what came before counts
        return out


def closed(data):
    """Has the gateway sent its close frame (after its 101 answer)?"""
    head, sep, s = data.partition(b"\r\n\r\n")
    if not sep or b" 101 " not in head:
        return False
    s = Bytes(s)
    try:
        while True:
            if await_frame(s)[1] == wp.CLOSE:
                return True
    except (EOFError, wp.ProtocolError):
        return False


def check_http(what, n, data, sent):
    head, _, body = data.partition(b"\r\n\r\n")
    status = head.split(b" ", 2)
    if len(status) < 2 or status[0] != b"HTTP/1.1" or not status[1].isdigit():
        fuzz.fail(what, n, "answer %r" % data[:200], sent)
    code = int(status[1])
    if code == 101:
        return True
    if not 400 <= code < 600 and code != 200 or not valid(body) or not body.strip():
        fuzz.fail(what, n, "answer %r" % data[:300], sent)
    return False


def check_frames(what, n, data, sent):
    s = Bytes(data)
    while s.data:
        try:
            fin, op, p = await_frame(s)
        except EOFError:
            break
        if op == wp.CLOSE:
            code = wr.close_code(p)
            if code not in (wp.NORMAL, wp.PROTOCOL, wp.INVALID_DATA, wp.TOO_BIG) and code < 3000:
                fuzz.fail(what, n, "close code %d" % code, sent)
            return
        if op == wp.TEXT:
            obj = json.loads(p)
            if obj.get("type") != "error" or not valid(obj.get("content", "")) or not obj["content"]:
                fuzz.fail(what, n, "frame %r" % p[:200], sent)
        elif op not in (wp.PONG, wp.PING):
            fuzz.fail(what, n, "frame op %d" % op, sent)
    # the client sent its close frame last: the gateway answers every ending with one,
    # unless a frame declared more bytes than were sent (it waited, then let go)
    if whole(b"".join(sent[1]) + wp.frame(wp.CLOSE, wp.close_payload(wp.NORMAL), mask_key=KEY)):
        fuzz.fail(what, n, "the connection ended without a close frame", sent)


def whole(data):
    """Are these frames complete (or does the gateway stop reading them at one it
    refuses before its end)?"""
    s = Bytes(data)
    try:
        while s.data:
            await_frame(s, limits.WS_FRAME_MAX, True)
    except EOFError:
        return False
    except wp.ProtocolError:
        pass
    return True


def await_frame(s, limit=1 << 20, need_mask=False):
    """read_frame on fixed bytes, without a loop (it never waits on them)."""
    g = wr.read_frame(s, limit, need_mask)
    try:
        g.send(None)
    except StopIteration as e:
        return e.value
    raise AssertionError("read_frame waited")


async def shut(w):
    """Close the socket (MicroPython's StreamWriter.close() alone leaves it open)."""
    w.close()
    try:
        await w.wait_closed()
    except OSError:
        pass


async def legit(n, what, sent):
    websocket._fails.clear()  # the same address: a wrong token's back-off would refuse it
    r, w = await asyncio.open_connection("127.0.0.1", websocket.port)
    net.nodelay(w.s)  # no delayed-ACK waits on loopback
    w.write(request())
    await w.drain()
    rd = Reader(r)
    head = await asyncio.wait_for(hs.read_head(rd, 4096), 10)
    if b" 101 " not in head:
        fuzz.fail(what, n, "the next client got %r" % head, sent)
    text = "legit %d" % n
    w.write(wp.frame(wp.TEXT, json.dumps({"type": "message", "content": text}), mask_key=KEY))
    await w.drain()
    for _ in range(1000):
        m = bus.inbound.get_nowait()
        if m is not None and m.content == text:
            break
        await asyncio.sleep_ms(2)
    else:
        fuzz.fail(what, n, "the next client's message never reached the agent", sent)
    w.write(wp.frame(wp.CLOSE, wp.close_payload(wp.NORMAL), mask_key=KEY))
    await w.drain()
    await read_all(r, what, n, sent)
    await shut(w)


async def test_fuzz_gateway():
    dispatch.register("websocket", websocket.send)
    asyncio.create_task(dispatch.run())
    asyncio.create_task(websocket.run())
    while websocket.port is None:
        await asyncio.sleep_ms(5)
    limits.WS_FRAME_TIMEOUT_S = 1  # a frame that declared more than was sent: not 30 s
    what = "ws gateway"
    for n, r in fuzz.cases(60, what):
        websocket._fails.clear()  # a wrong token's back-off: each case starts afresh
        while bus.inbound.get_nowait():
            pass
        upgrade = r.chance(40)
        sent = hostile_request(r) if upgrade else request()
        frames = [] if upgrade else [hostile_frame(r) for _ in range(r.below(5) + 1)]
        cut = not upgrade and r.chance(10)  # a frame left unfinished, then the socket closed
        rs, w = await asyncio.open_connection("127.0.0.1", websocket.port)
        net.nodelay(w.s)
        w.write(sent)
        for f in frames:
            w.write(f[:r.below(len(f))] if cut and f is frames[-1] else f)
        if not cut:
            w.write(wp.frame(wp.CLOSE, wp.close_payload(wp.NORMAL), mask_key=KEY))
        await w.drain()
        if cut:
            await shut(w)
        else:
            data = await read_all(rs, what, n, (sent, frames))
            await shut(w)
            if data and check_http(what, n, data, sent):
                check_frames(what, n, data.partition(b"\r\n\r\n")[2], (sent, frames))
        await legit(n, what, (sent, frames))
