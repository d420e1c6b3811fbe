# Invalid UTF-8 never reaches the flash, a file name, a WebSocket frame or an LLM
# request. MicroPython's own decoding is lax (CESU-8 surrogates, overlong forms and
# code points past U+10FFFF pass bytes.decode(), and json makes "\ud83c\udf89"
# escapes two lone surrogates); these tests reproduce each way such text got in.
import re
import json
import support
from support import raises
from mimi import board, fs, jsonutil, utf8
from mimi.config import settings as config
from mimi.agent import worker
from mimi.bus import Msg
from mimi.llm import provider
from mimi.llm.openai import OpenAI
from mimi.memory import sessions, store
from mimi.tools.registry import registry

FS_BLOCKS = 512
EMOJI = "\U0001F389"  # F0 9F 8E 89
LONE = "\ud83c"  # what MicroPython's json makes of half a surrogate pair: ED A0 BC
# Ill-formed sequences that MicroPython's bytes.decode() accepts anyway
LAX = (b"\xed\xa0\xbc", b"\xed\xbf\xbf", b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\xaf",
       b"\xf0\x80\x80\xaf", b"\xf4\x90\x80\x80", b"\xf7\xbf\xbf\xbf")
STRUCTURAL = (b"\xff", b"\x80", b"\xe2\x82", b"\xf0\x9f\x8e", b"\xc3(")
GOOD = (b"", b"plain", "h\u00e9llo \u20ac \ud55c\uad6d\uc5b4 \u0e44\u0e17\u0e22 ".encode() + EMOJI.encode(),
        b"\xed\x9f\xbf", b"\xee\x80\x80", b"\xf4\x8f\xbf\xbf", b"\xe0\xa0\x80", b"\xf0\x90\x80\x80")
# The board's strictness check, written independently of utf8.py: no surrogate bytes.
SURROGATE = re.compile(b"\xed[\xa0-\xbf]")


def setup():
    config.cfg.load()
    board.set_unix(1800000000)


def test_lax_forms_pass_micropython_but_not_valid():
    for b in LAX:
        b.decode()  # the interpreter's own check lets these through ...
        assert not utf8.valid(b), b  # ... ours does not
        assert not utf8.valid(b"ok " + b + b" ok"), b
    for b in STRUCTURAL:
        assert not utf8.valid(b), b
    for b in GOOD:
        assert utf8.valid(b), b
        assert utf8.valid(bytearray(b))
        assert utf8.valid(b.decode())
    assert not utf8.valid(LONE) and not utf8.valid("x" + LONE + "y")


def test_repair_and_clean():
    assert utf8.repair(b"a\xed\xa0\xbc\xed\xbe\x89b") == "a" + EMOJI + "b"  # CESU-8 pair joined
    assert utf8.repair(b"\xed\xa0\xbcx") == "\ufffdx"  # a lone surrogate: one U+FFFD
    assert utf8.repair(b"\xc0\xaf\xf4\x90\x80\x80") == "\ufffd\ufffd"
    assert utf8.repair(b"ok\xffstill \xe2\x82\xac \xe2\x82") == "ok\ufffdstill \u20ac \ufffd\ufffd"
    for b in LAX + STRUCTURAL + GOOD:
        assert utf8.valid(utf8.repair(b).encode()), b
    s = "caf\u00e9"
    assert utf8.clean(s) is s  # valid text is not copied
    assert utf8.clean("\ud83c\udf89 ok " + LONE + " lone") == EMOJI + " ok \ufffd lone"
    assert utf8.clean("\ud55c\uad6d\uc5b4") == "\ud55c\uad6d\uc5b4"  # Hangul (ED 9x) is fine


def test_fs_decode_is_strict():
    # fs.decode trusted whatever bytes.decode() accepted: CESU-8 went into the prompt
    for b in LAX:
        t = fs.decode(b"x" + b)
        assert t.startswith("x") and utf8.valid(t) and "\ufffd" in t, b
    assert fs.decode(b"\xed\xa0\xbc\xed\xbe\x89") == EMOJI
    fs.write_atomic("/spiffs/lax.md", b"note \xed\xa0\xbc end")  # bytes are written as given
    assert fs.read_text("/spiffs/lax.md") == "note \ufffd end"


def test_text_read_in_pieces_is_the_whole_text():
    # fs.read_sized_text decodes a piece at a time (one block as big as the text, not
    # two): characters split between pieces, a cap inside one, stray bytes, every piece size
    text = ("a\u00e9" + EMOJI + "\u4e2d" + "z" * 3) * 5
    raw = text.encode() + b" \xed\xa0\xbc tail"
    fs.write_atomic("/spiffs/pieces.md", raw)
    whole = fs.decode(raw)
    for piece in (1, 2, 3, 5, 7, 64):
        assert fs.read_sized_text("/spiffs/pieces.md", None, piece) == (whole, len(raw)), piece
        for cap in (1, 4, 13, 14, len(raw) - 1):
            want = fs.decode(fs.utf8_cut(raw, cap))
            assert fs.read_sized_text("/spiffs/pieces.md", cap, piece)[0] == want, (piece, cap)
    assert fs.read_text("/spiffs/pieces.md", 14) == fs.decode(fs.utf8_cut(raw, 14))


def test_text_for_the_flash_is_checked():
    e = raises(ValueError, fs.write_atomic, "/spiffs/x.md", "bad " + LONE)
    assert "not valid UTF-8" in str(e)
    raises(ValueError, fs.append, "/spiffs/y.md", ["ok\n", "bad " + LONE])
    assert not fs.exists("/spiffs/x.md") and not fs.exists("/spiffs/x.md.tmp")
    assert not fs.exists("/spiffs/y.md")
    raises(ValueError, store.write_memory, "# Memory\n" + LONE)
    assert store.read_memory() == ""
    fs.write_atomic("/spiffs/ok.md", "fine " + EMOJI)
    assert fs.read_text("/spiffs/ok.md") == "fine " + EMOJI


def test_json_off_the_network_is_clean():
    obj = jsonutil.loads(b'{"t": "hi \\ud83c\\udf89 \\u4e2d", "l": ["\\ud83d", 1], "k\\udc00": "v"}')
    assert obj == {"t": "hi " + EMOJI + " \u4e2d", "l": ["\ufffd", 1], "k\ufffd": "v"}
    # raw CESU-8 and overlong bytes in the body (json alone keeps them)
    raw = b'{"content": "a\xed\xa0\xbc\xed\xbe\x89 b\xc0\xaf c\xed\xa0\x80"}'
    assert utf8.valid(json.loads(raw)["content"]) is False
    assert jsonutil.loads(raw) == {"content": "a" + EMOJI + " b\ufffd c\ufffd"}
    assert jsonutil.loads(bytearray(b'["\\ud800"]')) == ["\ufffd"]
    assert jsonutil.loads('"\\udfff"') == "\ufffd"
    deep = jsonutil.loads(b"[" * 3000 + b'"\\ud800"' + b"]" * 3000)  # no recursion
    for _ in range(3000):
        deep = deep[0]
    assert deep == "\ufffd"
    raises(ValueError, jsonutil.loads, b'"\xff"')


def test_llm_request_bodies_are_valid():
    # a lone surrogate from before (an old session line, a file name) must not make
    # every request invalid: what is encoded into a request is cleaned
    for enc in (provider.dumps, OpenAI("k").message):
        out = enc({"role": "user", "content": LONE * 600, "k" + LONE: [LONE]})
        out = out if isinstance(out, str) else b",".join(bytes(v) for v in out).decode()  # message(): views
        assert utf8.valid(out) and not SURROGATE.search(out.encode()), out[:60]
        assert json.loads("[%s]" % out)[0]["content"] == "\ufffd" * 600
    assert provider.dumps("s " + LONE) == '"s \ufffd"'


def call(name, **args):
    return registry.call(name, args)


def test_file_tools_refuse_invalid_names_and_text():
    r = call("write_file", path="/spiffs/skills/" + LONE + ".md", content="x")
    assert r.startswith("Error: path is not valid UTF-8"), r
    r = call("write_file", path="/spiffs/memory/MEMORY.md", content="party " + LONE)
    assert r.startswith("Error: content is not valid UTF-8"), r
    assert not fs.exists("/spiffs/memory/MEMORY.md")
    assert call("write_file", path="/spiffs/n.md", content="a " + EMOJI).startswith("OK")
    r = call("edit_file", path="/spiffs/n.md", old_string="a", new_string=LONE)
    assert r.startswith("Error: new_string is not valid UTF-8"), r
    r = call("edit_file", path="/spiffs/n.md", old_string="\ud83c\udf89", new_string="b")
    assert r.startswith("Error: old_string is not valid UTF-8"), r
    assert call("read_file", path="/spiffs/n.md") == "a " + EMOJI
    assert fs.walk_files("/spiffs") == ["/spiffs/n.md"]


def test_session_never_stores_invalid_text():
    sessions.append("ws_u", "user", "hi " + LONE)
    sessions.append("ws_u", "assistant", "fine " + EMOJI)
    sessions.flush()
    with open(sessions.path("ws_u"), "rb") as f:
        data = f.read()
    assert utf8.valid(data) and data.count(b"\n") == 1, data


class Transport:
    """In-process OpenAI-compatible server: raw reply bodies, raw request bodies kept."""

    def __init__(self, *bodies):
        self.bodies = list(bodies)
        self.sent = []

    def request(self, method, path, headers=None, body=None, deadline_s=None, sink=None):
        from mimi.net.http import Response

        self.sent.append(support.joined(body))
        data = bytearray(self.bodies.pop(0))
        if sink is not None:  # asked to stream: answered as a server that does not
            sink.begin(200, {"content-type": "application/json"})
            sink(memoryview(data))
            data = b""
        return Response(200, "OK", {}, data)


def openai_body(content=None, calls=()):
    msg = {"role": "assistant", "content": content}
    if calls:
        msg["tool_calls"] = [{"id": "call_%d" % i, "type": "function",
                              "function": {"name": n, "arguments": a}} for i, (n, a) in enumerate(calls)]
    return json.dumps({"choices": [{"message": msg, "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode()


def use(transport):
    provider.from_config = lambda cfg: OpenAI("", api_base="http://127.0.0.1:9/v1", client=transport)
    return transport


def test_one_emoji_in_tool_arguments_breaks_nothing():
    # The OpenAI wire format nests the arguments as a JSON string: the emoji arrives
    # escaped twice, and plain json.loads made MEMORY.md invalid UTF-8, so every
    # later request (MEMORY.md is in every system prompt) was refused for good.
    args = json.dumps({"path": store.MEMORY_PATH, "content": "# Memory\n- likes \\ud83c\\udf89"})
    args = args.replace("\\\\u", "\\u")  # the server's own escapes, as OpenAI sends them
    t = use(Transport(openai_body(calls=[("write_file", args)]), openai_body("Saved."),
                      openai_body("Hello again.")))
    assert worker.run_message(Msg("websocket", "a", "remember I like parties")) == "Saved."
    with open(store.MEMORY_PATH, "rb") as f:
        assert f.read() == ("# Memory\n- likes " + EMOJI).encode()
    assert worker.run_message(Msg("telegram", "5", "hi")) == "Hello again."
    body = t.sent[-1]
    assert utf8.valid(body) and not SURROGATE.search(body)
    assert EMOJI.encode() in body  # the memory reached the prompt, intact


def test_raw_cesu8_reply_does_not_poison_the_session():
    # A server that sends raw CESU-8 / overlong bytes: the session must stay valid,
    # and the next request of that chat with it.
    bad = openai_body("x").replace(b'"x"', b'"ok \xed\xa0\xbc\xed\xbe\x89 \xed\xa0\x80 \xc0\xaf"')
    t = use(Transport(bad, openai_body("second")))
    reply = worker.run_message(Msg("websocket", "p", "first"))
    assert reply == "ok " + EMOJI + " \ufffd \ufffd", reply
    with open(sessions.path("ws_p"), "rb") as f:
        assert utf8.valid(f.read())
    assert worker.run_message(Msg("websocket", "p", "again")) == "second"
    body = t.sent[-1]
    assert utf8.valid(body) and not SURROGATE.search(body) and EMOJI.encode() in body
