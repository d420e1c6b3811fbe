# Fuzzing Telegram's getUpdates answers (issue 16, item 3): mutated updates and
# batches through the firmware's own decoder (channels/telegram.py Updates, the HTTP
# client's sink, fed in pieces of random size), and whole answers (errors, wrong
# framing of "result", junk parameters) through the real poller with an in-process
# HTTP client. Each case checks that nothing escapes, that the sound updates batched
# with a bad one still reach the agent, and that the poller goes on to take the next
# legitimate message. Seed and case count: tests/mp/fuzz.py.
import json
import asyncio
import fuzz
from mimi import bus, fs, limits, log
from mimi.config import settings as config
from mimi.utf8 import valid
from mimi.net import http
from mimi.net.http import Response
from mimi.channels.telegram import connect, poller as telegram
from mimi.services import wifi

HEAPSIZE = "4m"
TIMEOUT = 120
ALLOWED = 42
ACTIONS = ("ignore", "stranger", "text_only", "reply", "reset", "agent")
cfg = config.cfg


def setup():
    cfg.load()
    cfg.update({"tg_token": "123:AAbcdefghijklmnopqrstuvwxyz", "tg_api_base": "http://127.0.0.1:9",
                "tg_allow": "%d,-100" % ALLOWED})
    log.mute = True  # the ring only: thousands of "skipped" lines


def update(uid, chat=ALLOWED, text="hello", kind="private"):
    return {"update_id": uid, "message": {
        "message_id": uid, "date": 1, "text": text, "from": {"id": 7, "first_name": "Ann"},
        "chat": {"id": chat, "type": kind}}}


def template(r, uid):
    """A sound update of some kind: to the bot or a stranger, group or not, a command."""
    text = r.pick(("hi", "/start", "/reset", "/help@mimi_bot", "@mimi_bot hi", "\u4e2d\u6587 \U0001f389"))
    u = update(uid, r.pick((ALLOWED, ALLOWED, 666, -100)), text, r.pick(("private", "group", "supergroup")))
    if r.chance(20):
        u["message"]["reply_to_message"] = {"from": {"id": 123}}
    return u


def pieces(r, data):
    """data cut where the network might cut it."""
    out = []
    i = 0
    while i < len(data):
        k = r.below(r.pick((3, 64, 1500, 1 << 20))) + 1
        out.append(data[i:i + k])
        i += k
    return out


def feed(bot, r, body, most=limits.TG_UPDATE_MAX, budget=1 << 20):
    batch = telegram.Updates(bot, most, budget)
    for p in pieces(r, body):
        batch(memoryview(p))
    return batch


def check_acts(what, n, batch, data):
    for item in batch.acts:
        uid, act = item
        if uid is not None and not isinstance(uid, int):
            fuzz.fail(what, n, "update_id %r" % (uid,), data)
        if act is None:
            continue
        if len(act) != 5 or act[0] not in ACTIONS:
            fuzz.fail(what, n, "action %r" % (act,), data)
        if act[0] == "agent":
            if not isinstance(act[2], str) or not valid(act[2]) or not act[2].strip():
                fuzz.fail(what, n, "agent text %r" % (act[2],), data)
            if act[1] not in ("42", "-100"):
                fuzz.fail(what, n, "a stranger's text for the agent: %r" % (act,), data)


def test_fuzz_updates_and_batches():
    bot = telegram.Telegram()
    bot.username = "mimi_bot"
    bot.bot_id = "123"
    what = "tg updates"
    for n, r in fuzz.cases(1500, what):
        uid = 1000 + 10 * n
        bad = fuzz.mutate(r, template(r, uid + 1), huge=r.chance(5))
        whole = r.chance(15)  # the answer itself mutated, not one update in it
        answer = {"ok": True, "result": [update(uid, text="first"), bad, update(uid + 2, text="last")]}
        if whole:
            answer = fuzz.mutate(r, answer)
        body = fuzz.dumps(answer)
        garbled = r.chance(30)
        if garbled:
            body = fuzz.garble(r, body)
        try:
            batch = feed(bot, r, body)
        except Exception as e:  # noqa: B902 - any escape is the finding
            fuzz.crash(what, n, e, body)
        check_acts(what, n, batch, body)
        if not whole and not garbled:  # sound batch-mates are taken, in order
            got = [(u, a[2]) for u, a in batch.acts if a and a[0] == "agent" and u in (uid, uid + 2)]
            if got != [(uid, "first"), (uid + 2, "last")]:
                fuzz.fail(what, n, "batch-mates %r" % (got,), body)
        # the next batch is read as ever
        batch = feed(bot, r, fuzz.dumps({"ok": True, "result": [update(uid + 3, text="next")]}))
        if [(u, a[2]) for u, a in batch.acts] != [(uid + 3, "next")]:
            fuzz.fail(what, n, "the next batch gave %r" % (batch.acts,), body)


# ---- the poller, with an in-process HTTP client ----------------------------

class Client:
    """AsyncClient's stand-in: getMe answers, getUpdates takes the scripted answers in
    order, then waits (a long poll with nothing new); sends are recorded."""
    tls = False

    def __init__(self, answers):
        self.answers = answers
        self.sent = []

    async def request(self, method, path, headers=None, body=None, deadline_s=None, sink=None, ready=None):
        if ready is not None:
            await ready()
        name = path.rsplit("/", 1)[-1]
        if name == "getMe":
            status, data = 200, b'{"ok":true,"result":{"id":123,"username":"mimi_bot"}}'
        elif name != "getUpdates":
            if isinstance(body, tuple):  # a text in pieces (poller._body)
                from mimi.net import httpbody

                body = b"".join(bytes(p) for p in httpbody.flat(body))
            self.sent.append((name, json.loads(body)))
            status, data = 200, b'{"ok":true,"result":{"message_id":1}}'
        else:
            if not self.answers:
                await asyncio.sleep(3600)
            status, data = self.answers.pop(0)
        if sink is None:
            return Response(status, "", {}, data)
        for k in range(0, len(data), 700):
            sink(memoryview(data)[k:k + 700])
        return Response(status, "", {}, b"")

    def close(self):
        pass


STATUS = (200, 200, 200, 400, 401, 404, 409, 429, 500, 502, 200)


def hostile_answer(r, uid):
    status = r.pick(STATUS)
    if status == 200 and r.chance(60):
        obj = {"ok": True, "result": [template(r, uid)]}
    else:
        obj = {"ok": False, "error_code": status, "description": "Too Many Requests",
               "parameters": {"retry_after": 1}}
    obj = fuzz.mutate(r, obj)
    body = fuzz.dumps(obj)
    if r.chance(30):
        body = fuzz.garble(r, body)
    return status, body


async def _poll_case(n, r, what):
    uid = 5000 + 10 * n
    answers = [hostile_answer(r, uid + k) for k in range(r.below(3) + 1)]
    # a sound server's next update_id is past every one it sent before
    nxt = uid + 5
    for _, b in answers:
        k = b.find(b'"update_id"')
        while k >= 0:
            nxt = max(nxt, telegram.number(b[k:k + 400], b'"update_id"') or 0)
            k = b.find(b'"update_id"', k + 1)
    nxt += 1
    legit = (200, fuzz.dumps({"ok": True, "result": [update(nxt, text="legit %d" % n)]}))
    client = Client(list(answers) + [legit])
    http.AsyncClient = lambda base, **kw: client  # the poller's (the real one: http's __getattr__ once deleted)
    bot = telegram.install()  # one bot, as in the firmware (each adds watchers)
    connect.close(bot)  # connects afresh: the new client, the offset file read again
    bot.recent = []
    task = asyncio.create_task(bot.run())
    try:
        for _ in range(400):
            msg = bus.inbound.get_nowait()
            if msg is not None:
                if msg.content == "legit %d" % n:
                    return
                if not isinstance(msg.content, str) or not valid(msg.content):
                    fuzz.fail(what, n, "to the agent: %r" % (msg.content,), answers)
                continue
            if task.done():
                fuzz.fail(what, n, "the poller stopped: %s" % "\n".join(log.recent(3)), answers)
            await asyncio.sleep_ms(1)
        fuzz.fail(what, n, "the legitimate message never came; log: %s"
                  % "\n".join(log.recent(5)), answers)
    finally:
        task.cancel()
        await asyncio.sleep_ms(0)


async def test_fuzz_poller_answers():
    if not wifi.online():  # the host's always-connected WLAN: the supervisor goes online at once
        asyncio.create_task(wifi.supervisor.run())
    for name in ("TG_BACKOFF_MIN_S", "TG_CONFLICT_MIN_S", "TG_BAD_TOKEN_S", "TG_RETRY_AFTER_MAX_S"):
        setattr(limits, name, 0)  # the poller's waits, not what is tested here
    what = "tg poller"
    for n, r in fuzz.cases(150, what):
        while bus.inbound.get_nowait():
            pass
        if fs.exists(limits.TG_OFFSET_PATH):  # each case starts afresh (its ids may be huge)
            fs.remove(limits.TG_OFFSET_PATH)
        try:
            await _poll_case(n, r, what)
        finally:
            del http.AsyncClient  # the real one again (http's __getattr__)


# ---- the poller over a socket: hostile HTTP framing around getUpdates -------

def framed(r, body):
    """(raw HTTP response carrying body with broken framing, close after it)."""
    k = r.below(6)
    if k == 0:
        n = len(body) + r.pick((-7, -1, 1, 300))
        return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % max(n, 0) + body, True
    data = fuzz.chunked(r, body, 200)
    if k == 1:
        data = data[:r.below(len(data))]
    elif k == 2:
        data = fuzz.garble(r, data)
        garbled[0] = True
    elif k == 3:
        data = r.pick((b"zz\r\n", b"-1\r\n", b"ffffffffffffffffff\r\n", b"5\r\nab")) + data
    elif k == 4:  # an answer with a stray one behind it, kept alive
        return (b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body
                + b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"), False
    return b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + data, True


class Wire:
    """A Bot API on loopback: the scripted getUpdates answers, then the sound one,
    then a long poll that never answers; every other call succeeds."""

    def __init__(self):
        self.script = []
        self.final = None

    async def serve(self, rd, w):
        from mimi.net import httpserver as hs
        from mimi.net.httpserver import Reader

        rd = Reader(rd)
        try:
            while True:
                head = await hs.read_head(rd, 8192)
                n = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        n = int(line.split(b":")[1])
                await rd.readexactly(n)
                if b"/getUpdates " not in head:  # getMe, sendMessage, sendChatAction
                    body = b'{"ok":true,"result":{"id":123,"username":"mimi_bot","message_id":1}}'
                    data, close = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body, False
                elif self.script:
                    data, close = self.script.pop(0)
                elif self.final:
                    data, close, self.final = self.final, False, None
                else:
                    await asyncio.sleep(3600)
                w.write(data)
                await w.drain()
                if close:
                    break
        except Exception:  # noqa: B902 - the client went: so does this connection
            pass
        w.close()
        await w.wait_closed()


async def test_fuzz_poll_over_http():
    from mimi.net.listen import on_port

    if not wifi.online():
        asyncio.create_task(wifi.supervisor.run())
    for name in ("TG_BACKOFF_MIN_S", "TG_CONFLICT_MIN_S", "TG_BAD_TOKEN_S", "TG_RETRY_AFTER_MAX_S"):
        setattr(limits, name, 0)
    wire = Wire()
    server, port = await on_port(0, lambda p: asyncio.start_server(wire.serve, "127.0.0.1", p),
                                 limits.WS_PORT_ANY, 32)
    cfg.set("tg_api_base", "http://127.0.0.1:%d" % port)
    what = "tg poll http"
    for n, r in fuzz.cases(60, what):
        while bus.inbound.get_nowait():
            pass
        if fs.exists(limits.TG_OFFSET_PATH):
            fs.remove(limits.TG_OFFSET_PATH)
        uid = 9000 + 10 * n
        garbled[0] = False
        body = fuzz.dumps({"ok": True, "result": [template(r, uid), update(uid + 1, text="mate %d" % n)]})
        wire.script = [framed(r, body) for _ in range(r.below(2) + 1)]
        # what a sound server sends next: the batch again (what was confirmed is left
        # out by the offset), then a new update
        nxt = fuzz.dumps({"ok": True, "result": [template(r, uid), update(uid + 1, text="mate %d" % n),
                                                 update(uid + 2, text="next %d" % n)]})
        wire.final = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(nxt) + nxt
        sent = list(wire.script)
        want = ["mate %d" % n, "next %d" % n]
        got = []
        bot = telegram.install()
        bot.token = None
        bot.recent = []
        task = asyncio.create_task(bot.run())
        try:
            for _ in range(2000):
                msg = bus.inbound.get_nowait()
                if msg is not None and msg.content in want:
                    got.append(msg.content)
                if got and got[-1] == want[-1]:
                    # a garbled answer may have carried the batch-mate malformed: skipped
                    if got != want and not garbled[0]:
                        fuzz.fail(what, n, "to the agent: %r" % got, sent)
                    break
                if task.done():
                    fuzz.fail(what, n, "the poller stopped: %s" % "\n".join(log.recent(3)), sent)
                await asyncio.sleep_ms(2)
            else:
                fuzz.fail(what, n, "the sound update never came; log: %s" % "\n".join(log.recent(5)), sent)
        finally:
            task.cancel()
            await asyncio.sleep_ms(0)
            connect.close(bot)
    server.close()


garbled = [False]  # this case's answers include a garbled one
