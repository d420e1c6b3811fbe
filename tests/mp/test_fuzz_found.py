# What the fuzz tests (tests/mp/test_fuzz_*.py) found, each kept as a plain test
# with the input that showed it (docs/reliability.md, "Fuzzing").
import json
import asyncio
from mimi import log
from mimi.config import settings as config
from mimi.net.http import Response
from mimi.tools.registry import Registry, Ctx
from mimi.llm.anthropic import Anthropic
from mimi.llm.openai import OpenAI
from mimi.llm.provider import LLMError
from mimi.agent.react import run_turn
from mimi.channels.telegram import poller as telegram

SYSTEM = "You are Mimi."


class Transport:
    def __init__(self, *bodies):
        self.replies = [b if isinstance(b, tuple) else (200, b) for b in bodies]

    def request(self, method, path, headers=None, body=None, deadline_s=None):
        status, obj = self.replies.pop(0)
        return Response(status, "", {}, json.dumps(obj).encode())


def registry():
    r = Registry()
    r.add("echo", "Echo", {"type": "object", "properties": {"text": {"type": "string"}},
                           "required": ["text"]}, lambda a, ctx: "echo:" + a["text"])
    return r


def done(text="done"):
    return {"content": [{"type": "text", "text": text}], "usage": {}}


def test_usage_counts_that_are_not_numbers_count_zero():
    # a count as a string ("4019843238") failed the turn with a TypeError in the sum
    p = Anthropic("k", client=Transport({"content": [{"type": "text", "text": "hi"}], "usage": {
        "input_tokens": "10", "output_tokens": [5], "cache_read_input_tokens": True,
        "cache_creation_input_tokens": 3}}))
    turn = run_turn(p, SYSTEM, [], "hi", registry(), Ctx("websocket", "1"))
    assert turn.error is None and turn.usage == {"input": 3, "output": 0, "cache_read": 0,
                                                 "cache_write": 3}, turn
    p = OpenAI("k", client=Transport({"choices": [{"message": {"content": "hi"}}], "usage": {
        "prompt_tokens": 10, "completion_tokens": "4019843238", "prompt_tokens_details": {
            "cached_tokens": -2}}}))
    assert p.chat(SYSTEM, [{"role": "user", "content": "x"}]).usage == \
        {"input": 10, "output": 0, "cache_read": 0, "cache_write": 0}


def test_tool_calls_with_ids_names_and_inputs_of_any_type():
    # an id that is an object made `c.id in seen` raise (unhashable); an input that is
    # `true` made the size check raise: both failed the turn instead of answering the model
    p = Anthropic("k", client=Transport(
        {"content": [{"type": "tool_use", "id": {"a": 1}, "name": "echo", "input": {"text": "a"}},
                     {"type": "tool_use", "id": "t2", "name": ["echo"], "input": {"text": "b"}},
                     {"type": "tool_use", "id": "t3", "name": "echo", "input": True}]},
        done()))
    turn = run_turn(p, SYSTEM, [], "hi", registry(), Ctx("websocket", "1"))
    assert turn.error is None and turn.text == "done" and turn.tool_calls == 3, turn


def test_an_api_error_message_is_quoted_only_so_far():
    # the whole "message" of an error answer (5 KB here) became the user's reply
    p = Anthropic("k", client=Transport((413, {"message": "\"" * 5000})), sleep=lambda s: None)
    try:
        p.chat(SYSTEM, [{"role": "user", "content": "x"}])
    except LLMError as e:
        assert len(str(e)) < 400 and str(e).startswith("LLM error 413: \"\"\""), str(e)
    else:
        raise AssertionError("no LLMError")


def _bot():
    config.cfg.load()
    config.cfg.update({"tg_allow": "42"})
    bot = telegram.Telegram()
    bot.username = "mimi_bot"
    return bot


def _update(uid, text):
    return {"update_id": uid, "message": {"message_id": 1, "date": 1, "text": text,
                                          "chat": {"id": 42, "type": "private"}}}


def test_an_update_id_that_is_not_a_number_skips_that_update_only():
    # an update_id of {"a": ...} was kept as the update's id: comparing it with the
    # offset raised on every poll, so the batch never moved past it
    log.mute = True
    bot = _bot()
    batch = telegram.Updates(bot, 65536, 65536)
    bad = _update(2, "bad")
    bad["update_id"] = {"a": [1]}
    batch(memoryview(json.dumps({"ok": True, "result": [_update(1, "a"), bad, _update(3, "b")]}).encode()))
    assert [(u, a and a[2]) for u, a in batch.acts] == [(1, "a"), (None, None), (3, "b")], batch.acts
    from mimi.channels.telegram import updates

    asyncio.run(updates.handle(bot, batch, 1))
    assert bot.offset == 4


class _Answers:
    tls = False

    def __init__(self, status, body):
        self.answer = Response(status, "", {}, json.dumps(body).encode())

    async def request(self, *args, sink=None, **kw):
        if sink is None:
            return self.answer
        sink(memoryview(self.answer.body))  # as the real client does: the body to the sink
        return Response(self.answer.status, "", {}, b"")

    def close(self):
        pass


def test_a_retry_after_that_is_not_a_number_is_ignored():
    # {"parameters": {"retry_after": [...]}} in a 429 answer made the poller's
    # min(retry_after, ...) raise inside its handler: Telegram stopped for good
    for params in ({"retry_after": [{"a": 1}]}, {"retry_after": "5"}, {"retry_after": -3}, [1], "x"):
        api = telegram.Api("http://127.0.0.1:9", "1:x", 5, _Answers(429, {
            "ok": False, "error_code": 429, "description": ["x"], "parameters": params}))
        try:
            asyncio.run(api.call("getUpdates"))
        except telegram.ApiError as e:
            assert e.code == 429 and e.retry_after in (None, 0) and e.description == "", (params, e.retry_after)
        else:
            raise AssertionError("no ApiError")


def test_settings_refuse_inf_and_quote_little_of_a_bad_list():
    # set("proxy_port", inf) raised OverflowError instead of the setting's refusal;
    # a bad id or pin list was quoted whole in the refusal (3.8 KB here)
    config.cfg.load()
    for key in ("proxy_port", "max_tokens"):
        for v in (float("inf"), float("-inf"), float("nan")):
            try:
                config.cfg.set(key, v)
            except ValueError as e:
                assert str(e) == "%s: must be a whole number" % key, str(e)
            else:
                raise AssertionError("%s=%r accepted" % (key, v))
    for key in ("gpio_allow", "tg_allow", "feishu_allow"):
        try:
            config.cfg.set(key, "x" * 4000)
        except ValueError as e:
            assert len(str(e)) < 160 and str(e).startswith(key), str(e)
        else:
            raise AssertionError("accepted")


def test_json_with_keys_that_are_not_strings_is_not_json():
    # MicroPython's json takes {0: 1}; jsonutil.loads then raised TypeError (it checks
    # keys as text), which the registry, the gateway and the tools did not expect: a
    # model's arguments '{"text":"a", 0: 1}' failed the turn, a WebSocket client's
    # message dropped its connection without a close frame
    from mimi import jsonutil

    for text in ('{"a": 1, 0: 1}', '{null: 1}', '[{"x": {1"y": 2}}]'):
        try:
            jsonutil.loads(text)
        except ValueError:
            pass
        else:
            raise AssertionError(text)
    assert registry().call("echo", '{"text": "a", 0: 1}') == "Error: arguments are not valid JSON"
    p = Anthropic("k", client=Transport(done()))
    p.client.request = lambda *a, **k: Response(200, "", {}, b'{"content": [], 0: 1}')
    try:
        p.chat(SYSTEM, [{"role": "user", "content": "x"}])
    except LLMError as e:
        assert "not JSON" in str(e), str(e)
    else:
        raise AssertionError("no LLMError")


def test_a_hand_edited_config_with_an_escaped_lone_surrogate_loads_as_valid_text():
    # json.load made "\udc00" a lone surrogate in the setting (read as is into requests)
    with open("/config.json", "w") as f:
        f.write('{"model": "\\udc00m"}')
    config.cfg.load()
    assert config.cfg.get("model") == "\ufffdm" and not config.cfg.problems


def test_streamed_events_with_fields_of_the_wrong_type_are_a_malformed_answer():
    # {"choices": [null]} in an OpenAI stream, a text that is a list or a tool call
    # index that is a string in Anthropic's: AttributeError/TypeError escaped the
    # provider (the turn failed) instead of a retried, then reported, malformed answer
    from mimi.llm.stream import Stream
    from mimi.net.http import ProtocolError

    bad = ((False, b'data: {"choices": [null]}\n\n'),
           (True, b'data: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": [1]}}\n\n'),
           (True, b'data: {"type": "content_block_start", "index": "a", "content_block": {"type": "tool_use"}}\n\n'),
           (True, b'data: {"type": "message_delta", "usage": [1]}\n\n'))
    for anthropic, data in bad:
        s = Stream("anthropic" if anthropic else "openai", None)
        s.begin(200, {"content-type": "text/event-stream"})
        try:
            s(memoryview(data))
        except ProtocolError as e:
            assert "malformed event" in str(e), str(e)
        else:
            raise AssertionError(data)
