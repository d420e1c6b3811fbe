# Fuzzing the LLM replies of both providers (issue 16, item 3), unit level: the real
# provider (decode, retries, error text) and the ReAct loop get mutated response bodies,
# statuses and headers from an in-process transport. Each case checks that the turn
# ends with a reply or an error a person can read (never an exception), that every
# request the turn sent was valid JSON in valid UTF-8 (a bad reply must not poison
# the next request), and that the next legitimate reply is answered normally.
# Seed and case count: tests/mp/fuzz.py.
import json
import fuzz
from fuzzsse import EVENTS, SSE, sse
import support
from mimi import limits, log
from mimi.config import settings as config
from mimi.utf8 import valid
from mimi.net.http import Response
from mimi.tools.registry import Registry, Ctx
from mimi.llm.anthropic import Anthropic
from mimi.llm.openai import OpenAI
from mimi.agent.react import run_turn

HEAPSIZE = "4m"
TIMEOUT = 120
SYSTEM = "You are Mimi.\n## Current Turn Context\nsource_channel: websocket"


def registry():
    r = Registry()
    r.add("echo", "Echo", {"type": "object", "properties": {
        "text": {"type": "string"}, "n": {"type": "integer"}}, "required": ["text"]},
        lambda a, ctx: "echo:" + a["text"])
    r.add("clock", "Time", {"type": "object", "properties": {}, "required": []},
          lambda a, ctx: "09:00")
    return r


# ---- the replies a provider gets ----

def anthropic_reply(r):
    content = []
    if r.chance(70):
        content.append({"type": "text", "text": r.pick(("Hello", "<think>x</think>Hi", "\u4e2d"))})
    for i in range(r.below(3)):
        content.append({"type": "tool_use", "id": "toolu_%d" % i, "name": r.pick(("echo", "clock")),
                        "input": {"text": "a", "n": 1}})
    return {"id": "msg_1", "type": "message", "role": "assistant", "content": content,
            "stop_reason": "tool_use" if len(content) > 1 else "end_turn",
            "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 2,
                      "cache_creation_input_tokens": 1}}


def openai_reply(r):
    msg = {"role": "assistant", "content": r.pick(("Hello", None, "", "<think>x</think>Hi"))}
    calls = [{"id": "call_%d" % i, "type": "function",
              "function": {"name": r.pick(("echo", "clock")),
                           "arguments": r.pick(('{"text":"a"}', '{"text":"\\ud83c\\udf89"}', "{}", ""))}}
             for i in range(r.below(3))]
    if calls:
        msg["tool_calls"] = calls
    return {"id": "c1", "object": "chat.completion",
            "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5,
                      "prompt_tokens_details": {"cached_tokens": 2}}}


def error_reply(r):
    return r.pick(({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
                   {"error": {"message": "bad key", "code": 401}}, {"message": "nope"},
                   {"detail": "not found"}, {"error": "plain"}))


TEMPLATES = {"anthropic": anthropic_reply, "openai": openai_reply}


def mutated_stream(r, kind):
    """(status, headers, body) of one hostile event stream."""
    ev = EVENTS[kind](r, r.pick(("Hello", "\u4e2d\u6587", "<think>x</think>Hi")))
    for _ in range(r.below(3) + 1):
        k = r.below(5)
        i = r.below(len(ev))
        if k == 0:
            del ev[i]
        elif k == 1:
            ev.insert(i, r.pick(({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}},
                                 {"error": {"message": "bad", "code": "server_error"}}, {"error": "x"},
                                 "[DONE]", "not json", "")))
        elif k == 2 and len(ev) > 1:
            ev[i], ev[-1] = ev[-1], ev[i]
        else:
            ev[i] = fuzz.mutate(r, ev[i], huge=r.chance(3)) if isinstance(ev[i], dict) else fuzz.junk(r)
    body = sse([e if isinstance(e, (dict, str)) else fuzz.dumps(e).decode() for e in ev], r)
    if r.chance(25):
        body = fuzz.garble(r, body) if r.chance(50) else body[:r.below(len(body))]
    status = 200 if r.chance(85) else r.pick(STATUS)
    return status, dict(SSE) if r.chance(90) else {}, body
STATUS = (200, 200, 200, 200, 400, 401, 404, 413, 429, 500, 502, 503, 529, 204, 301, 100, 999)
RETRY = ("1", "-5", "nan", "inf", "1e400", "Wed, 21 Oct 2015 07:28:00 GMT", "", "99999999999999999999",
         "0x10", "\u4e2d")


def mutated(r, kind):
    """(status, headers, body) of one hostile reply."""
    status = 200 if r.chance(60) else r.pick(STATUS)
    obj = TEMPLATES[kind](r) if status == 200 or r.chance(30) else error_reply(r)
    if r.chance(85):
        obj = fuzz.mutate(r, obj, huge=r.chance(5))
    body = fuzz.dumps(obj)
    if r.chance(40):
        body = fuzz.garble(r, body)
    headers = {}
    if r.chance(30):
        headers[r.pick(("retry-after", "retry-after-ms"))] = r.pick(RETRY)
    return status, headers, body


class Transport:
    """The HTTP client's stand-in: the scripted replies in order, then `final` for
    every later call; each request body is checked as it is sent."""

    def __init__(self, replies, final):
        self.replies = list(replies)
        self.final = final
        self.bodies = []

    def request(self, method, path, headers=None, body=None, deadline_s=None, sink=None):
        data = support.joined(body)
        if not valid(data):
            raise AssertionError("request body is not valid UTF-8")
        json.loads(data)  # ValueError: the request is not JSON
        self.bodies.append(data)
        status, hdrs, b = self.replies.pop(0) if self.replies else self.final
        if sink is None:
            return Response(status, "", hdrs, b)
        sink.begin(status, hdrs)  # as net/http.py hands a streamed body over
        step = 1 + len(b) % 97
        for i in range(0, len(b), step):
            sink(memoryview(b)[i:i + step])
        return Response(status, "", hdrs, b"")


def provider(kind, t, waits):
    cls = Anthropic if kind == "anthropic" else OpenAI
    return cls("key", model="m", api_base="http://127.0.0.1:9", client=t, sleep=waits.append)


def final(kind, text, streamed=False):
    if streamed:
        return 200, dict(SSE), sse(EVENTS[kind](None, text, False))
    if kind == "anthropic":
        obj = {"content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
               "usage": {"input_tokens": 1, "output_tokens": 1}}
    else:
        obj = {"choices": [{"message": {"role": "assistant", "content": text},
                            "finish_reason": "stop"}], "usage": {}}
    return 200, {}, fuzz.dumps(obj)


def readable(text):
    """What the user is sent when a turn fails: short, valid text, no traceback."""
    return isinstance(text, str) and text.strip() != "" and valid(text) \
        and "Traceback" not in text and len(text) < 1000


def one_case(n, r):
    kind = "anthropic" if n % 2 == 0 else "openai"
    streamed = r.chance(40)
    script = [(mutated_stream if streamed and r.chance(80) else mutated)(r, kind)
              for _ in range(r.below(3) + 1)]
    waits = []
    t = Transport(script, final(kind, "done", streamed))
    p = provider(kind, t, waits)
    partials = []
    if streamed:
        p.stream = partials.append
    reg = registry()
    history = [] if r.chance(50) else [{"role": "user", "content": "earlier"},
                                      {"role": "assistant", "content": "ok"}]
    what = "llm %s" % kind
    shown = []
    try:
        turn = run_turn(p, SYSTEM, history, "hi", reg, Ctx("websocket", "7"),
                        lambda name, detail: shown.append((name, detail)))
    except Exception as e:  # noqa: B902 - any escape is the finding
        fuzz.crash(what, n, e, script)
    if not isinstance(turn.text, str) or not valid(turn.text) or not turn.text.strip():
        fuzz.fail(what, n, "reply text %r" % (turn.text,), script)
    if turn.error is not None and not readable(turn.text):
        fuzz.fail(what, n, "unreadable error %r" % (turn.text,), script)
    for text in partials:  # the answer so far, as a person sees it while it streams
        if not isinstance(text, str) or not valid(text) or "<think>" in text or not text:
            fuzz.fail(what, n, "partial %r" % (text,), script)
    for name, detail in shown:  # the progress status a person sees
        if not isinstance(name, str) or not isinstance(detail, str) or not valid(name + detail) \
                or len(detail) > limits.STATUS_DETAIL_MAX:
            fuzz.fail(what, n, "progress %r %r" % (name, detail), script)
    for k in ("input", "output", "cache_read", "cache_write"):
        if not isinstance(turn.usage[k], int):
            fuzz.fail(what, n, "usage %s is %r" % (k, turn.usage[k]), script)
    if [w for w in waits if not 0 <= w <= limits.LLM_BACKOFF_MAX_S]:
        fuzz.fail(what, n, "waits %r" % (waits,), script)
    # the service continues: the next turn with a sound reply is answered
    t.replies, t.final = [], final(kind, "next %d" % n, streamed)
    turn = run_turn(p, SYSTEM, [], "again", reg, Ctx("websocket", "7"))
    if turn.error is not None or turn.text != "next %d" % n:
        fuzz.fail(what, n, "the next turn got %r" % (turn,), script)


def test_fuzz_llm_replies():
    log.mute = True  # the ring only: thousands of error lines
    config.cfg.load()
    config.cfg.update({"max_calls_hour": 0, "max_calls_day": 0})  # thousands of calls an hour
    for n, r in fuzz.cases(300, "llm replies"):
        one_case(n, r)
