"""The fake Telegram Bot API itself, and tgformat's output checked by the fake's
Telegram-like HTML parser on many generated texts (CPython runs the same module)."""
import json
import random
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "lib"))
from fakes import telegram as tg  # noqa: E402
from mimi.channels.telegram import format as tgformat  # noqa: E402


def call(svc, method, params=None, token=None):
    url = "%s/bot%s/%s" % (svc["base_url"], token or svc["token"], method)
    req = urllib.request.Request(url, data=json.dumps(params or {}).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        body = e.read()
        try:
            return e.code, json.loads(body)
        except ValueError:
            return e.code, body


def test_parse_html_like_telegram():
    assert tg.parse_html("<b>a</b> &lt;x&gt; &amp; &quot;")[0] == 'a <x> & "'
    vis, ents = tg.parse_html('<pre><code class="language-py">x</code></pre>')
    assert vis == "x" and ents == [{"type": "pre", "offset": 0, "length": 1, "language": "py"}]
    for bad in ("<b>a", "a</b>", "<b><i>x</b></i>", "<foo>x</foo>", "a < b", "<br>",
                "<code><b>x</b></code>", "<b><code>x</code></b>", '<a href="">x</a>'):
        with pytest.raises(tg.EntityError):
            tg.parse_html(bad)


def test_get_me_updates_offset_and_send(fake_telegram):
    svc = fake_telegram
    assert call(svc, "getMe")[1]["result"]["username"] == tg.USERNAME
    assert call(svc, "getMe", token="1:bad")[0] == 401
    u1 = svc.update(chat_id=42, text="hi \U0001F600 \u4e2d")
    u2 = svc.update(chat_id=42, kind="edited", text="edit")
    st, body = call(svc, "getUpdates", {"timeout": 0, "allowed_updates": ["message"]})
    assert [u["update_id"] for u in body["result"]] == [u1]
    assert body["result"][0]["message"]["text"] == "hi \U0001F600 \u4e2d"
    # offset confirms: u1 is gone for good
    st, body = call(svc, "getUpdates", {"offset": u1 + 1, "timeout": 0})
    assert body["result"] == []
    assert svc.state()["pending"] == [u2]
    st, body = call(svc, "sendMessage", {"chat_id": 42, "text": "<b>x</b>", "parse_mode": "HTML"})
    assert st == 200 and body["result"]["entities"][0]["type"] == "bold"
    st, body = call(svc, "sendMessage", {"chat_id": 42, "text": "<b>x", "parse_mode": "HTML"})
    assert st == 400 and body["description"].startswith("Bad Request: can't parse entities")
    st, body = call(svc, "sendMessage", {"chat_id": 42, "text": "\U0001F600" * 2049})
    assert st == 400 and body["description"] == "Bad Request: message is too long"
    st, body = call(svc, "sendMessage", {"chat_id": 42, "text": "&amp;" * 4096, "parse_mode": "HTML"})
    assert st == 200
    assert call(svc, "sendMessage", {"chat_id": 999, "text": "x"})[0] == 400
    assert call(svc, "sendChatAction", {"chat_id": 42, "action": "typing"})[1]["result"] is True
    s = svc.state()
    assert len(s["sent"]) == 2 and s["actions"][0]["action"] == "typing"


def test_long_poll_wakes_and_conflict(fake_telegram):
    svc = fake_telegram
    out = {}

    def poll(offset=0):
        out["r"] = call(svc, "getUpdates", {"timeout": 20, "offset": offset})

    t = threading.Thread(target=poll)
    t.start()
    svc.wait(lambda s: any(c["method"] == "getUpdates" for c in s["calls"]))
    svc.update(chat_id=5, text="wake")
    t.join(30)
    assert out["r"][1]["result"][0]["message"]["text"] == "wake"
    # a second poller ends the first one with 409
    off = out["r"][1]["result"][0]["update_id"] + 1
    t = threading.Thread(target=poll, args=(off,))
    t.start()
    svc.wait(lambda s: len([c for c in s["calls"] if c["method"] == "getUpdates"]) == 2)
    call(svc, "getUpdates", {"offset": off, "timeout": 0})
    t.join(30)
    assert out["r"][0] == 409 and out["r"][1]["description"].startswith("Conflict")


def test_injected_failures(fake_telegram):
    svc = fake_telegram
    svc.update(chat_id=42, text="x")
    svc.fail("sendMessage", 429, retry_after=3)
    svc.fail("getUpdates", 502)
    st, body = call(svc, "sendMessage", {"chat_id": 42, "text": "a"})
    assert st == 429 and body["parameters"]["retry_after"] == 3
    # flood control: the chat is refused until the wait is over, and that is noted
    st, body = call(svc, "sendMessage", {"chat_id": 42, "text": "a"})
    assert st == 429 and 1 <= body["parameters"]["retry_after"] <= 3
    assert "before the retry_after" in svc.state()["violations"][0]
    svc.configure(flood_control=False)
    assert call(svc, "sendMessage", {"chat_id": 42, "text": "a"})[0] == 200
    st, body = call(svc, "getUpdates", {"timeout": 0})
    assert st == 502 and isinstance(body, bytes)
    svc.fail("sendMessage", 400, if_parse_mode=True)
    assert call(svc, "sendMessage", {"chat_id": 42, "text": "plain"})[0] == 200
    assert call(svc, "sendMessage", {"chat_id": 42, "text": "h", "parse_mode": "HTML"})[0] == 400
    # control over HTTP
    req = urllib.request.Request(svc["control"] + "/update", data=json.dumps(
        [{"chat_id": -100, "chat_type": "group", "text": "@%s hi" % tg.USERNAME},
         {"chat_id": 42, "kind": "photo"}]).encode())
    ids = json.loads(urllib.request.urlopen(req).read())["update_ids"]
    st, body = call(svc, "getUpdates", {"timeout": 0, "offset": ids[0]})
    msgs = [u["message"] for u in body["result"]]
    assert msgs[0]["entities"][0] == {"offset": 0, "length": 1 + len(tg.USERNAME), "type": "mention"}
    assert "photo" in msgs[1]


# --- tgformat output against the Telegram-like parser ---------------------------
ATOMS = ["word", "wörd", "\u4e2d\u6587", "\U0001F600", "&", "<", ">", '"', "**", "*", "_",
         "__", "`", "```", "~~", "[", "]", "(", ")", "[l](https://e.org/?a=\"b\"&c)", "# ",
         "- ", "> ", "1. ", "\\*", "\n", "\n\n", " ", " ", " ", "x" * 50, "```py\n"]


@pytest.mark.parametrize("seed", range(40))
def test_tgformat_parts_are_valid_telegram_html(seed):
    rnd = random.Random(seed)
    n = rnd.choice([50, 400, 3000])
    md = "".join(rnd.choice(ATOMS) for _ in range(n))
    limit = rnd.choice([64, 500, 4096])
    parts = tgformat.split(md, limit)
    for html, plain in parts:
        vis, _ = tg.parse_html(html)
        assert tg.u16len(vis) <= limit
        assert tg.u16len(plain) <= limit
        assert vis.strip()
    # nothing visible is lost or reordered (whitespace at cuts aside)
    whole = "".join(t for t, _ in tgformat.parse(md))
    joined = "".join(tg.parse_html(h)[0] for h, _ in parts)
    assert "".join(joined.split()) == "".join(whole.split())
