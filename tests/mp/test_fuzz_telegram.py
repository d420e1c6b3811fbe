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
from mimi import bus, config, fs, limits, log
from mimi.utf8 import valid
from mimi.net.http import Response
from mimi.channels import telegram
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

    async def request(self, method, path, headers=None, body=None, deadline_s=None, sink=None):
        name = path.rsplit("/", 1)[-1]
        if name == "getMe":
            return Response(200, "", {}, b'{"ok":true,"result":{"id":123,"username":"mimi_bot"}}')
        if name != "getUpdates":
            self.sent.append((name, json.loads(body)))
            return Response(200, "", {}, b'{"ok":true,"result":{"message_id":1}}')
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
            nxt = max(nxt, telegram._update_id(b[k:k + 40]) or 0)
            k = b.find(b'"update_id"', k + 1)
    nxt += 1
    legit = (200, fuzz.dumps({"ok": True, "result": [update(nxt, text="legit %d" % n)]}))
    client = Client(list(answers) + [legit])
    telegram._client = lambda base, timeout_s: client
    bot = telegram.install()  # one bot, as in the firmware (each adds watchers)
    bot.token = None  # connects afresh: the new client, the offset file read again
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
        await _poll_case(n, r, what)
