"""End to end: the simulator runs the real firmware, the `websockets` library is the
client, a fake Anthropic API (tests/fakes/llm.py, plain http://) is the LLM.

The gateway port comes from the firmware's log line "gateway listening on HOST:PORT".
"""
import asyncio
import json
import os
import re
import subprocess
import sys
import urllib.request

import pytest

from conftest import ROOT
from simproc import Sim, llm_settings

sys.path.insert(0, str(ROOT / "lib"))
from mimi import limits  # noqa: E402  (the firmware's numbers; plain Python reads them too)

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

TOKEN = "gw-e2e-token"


@pytest.fixture(scope="module")
def llm():
    from fakes import llm as fake

    svc = fake.start("anthropic", None)  # plain http:// only
    yield svc
    svc.close()


@pytest.fixture(scope="module")
def sim(tmp_path_factory, llm):
    with Sim.start(tmp_path_factory.mktemp("gw"), "ws_port=0", "ws_token=" + TOKEN,
                   *llm_settings(llm)) as s:
        s.port  # booted: a failure to boot is this fixture's error
        yield s


@pytest.fixture
def fresh(llm):
    llm.fake.reset()
    return llm


def authed(sim, **kw):
    return connect(sim.url + "?token=" + TOKEN, **kw)


async def recv_json(ws, timeout=60):
    return json.loads(await asyncio.wait_for(ws.recv(), timeout))


async def ask(ws, text, chat_id=None, partials=None):
    """Send one message; -> (statuses seen, the response frame); the partial frames'
    contents go to the list `partials`."""
    msg = {"type": "message", "content": text}
    if chat_id:
        msg["chat_id"] = chat_id
    await ws.send(json.dumps(msg))
    statuses = []
    while True:
        f = await recv_json(ws)
        if f["type"] == "status":
            statuses.append(f["content"])
            continue
        if f["type"] == "partial":
            assert f["chat_id"] == (chat_id or f["chat_id"]), f
            if partials is not None:
                partials.append(f["content"])
            continue
        return statuses, f


async def close_code(ws, timeout=30):
    try:
        while True:
            await asyncio.wait_for(ws.recv(), timeout)
    except ConnectionClosed as e:
        return e.rcvd.code if e.rcvd else None


# --- no LLM needed --------------------------------------------------------------

def test_chat_page_served_on_get(sim):
    with urllib.request.urlopen("http://127.0.0.1:%d/" % sim.port, timeout=20) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/html")
        assert "default-src 'none'" in r.headers["Content-Security-Policy"]
        page = r.read().decode()
    assert "<script>" in page and "new WebSocket(" in page
    assert "innerHTML" not in page and "textContent" in page
    assert not re.search(r"""(src|href)=["']?https?:""", page)  # nothing external
    assert len(page) < 8 * 1024
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen("http://127.0.0.1:%d/nothing" % sim.port, timeout=20)
    assert e.value.code == 404


def test_token_required(tmp_path):
    # its own simulator: the wrong tokens put this address (127.0.0.1) in back-off
    with Sim.start(tmp_path, "ws_port=0", "ws_token=" + TOKEN) as s:
        async def refused(url, status, **kw):
            with pytest.raises(InvalidStatus) as e:
                async with connect(url, **kw):
                    pass
            assert e.value.response.status_code == status
            return e.value.response

        async def go():
            r = await refused(s.url, 401)
            assert b"token" in r.body
            # at once again: refused (429) without a look at the token, even a right one
            r = await refused(s.url + "?token=wrong", 429)
            assert r.headers["Retry-After"] == "1"
            await refused(s.url + "?token=" + TOKEN, 429)
            await asyncio.sleep(1.1)
            await refused(s.url + "?token=", 401)
            await asyncio.sleep(2.1)  # doubled
            async with connect(s.url, additional_headers={"Authorization": "Bearer " + TOKEN}) as ws:
                await ws.ping()
            # a valid token is also accepted from a foreign page origin
            async with connect(s.url + "?token=" + TOKEN, origin="http://elsewhere.example") as ws:
                await ws.ping()

        asyncio.run(go())
        r = subprocess.run([sys.executable, str(ROOT / "tools" / "chat"), "--url", s.url,
                            "--message", "hi"], capture_output=True, text=True, timeout=60,
                           env={k: v for k, v in os.environ.items() if k != "MIMI_WS_TOKEN"})
        assert r.returncode == 2 and "401" in r.stderr
        r = subprocess.run([sys.executable, str(ROOT / "tools" / "chat"), "--url", s.url,
                            "--token", TOKEN, "--message", "hi"], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 2 and "429" in r.stderr and "try again in 1 s" in r.stderr, r.stderr


def test_wrong_origin_refused_when_auth_is_off(tmp_path):
    with Sim.start(tmp_path, "ws_port=0", "ws_token=") as s:
        assert "gateway auth is OFF" in s.output() or s.wait_for("auth is OFF")

        async def go():
            for origin in ("http://evil.example", "http://evil.example:%d" % s.port, "null",
                           "http://127.0.0.1:1"):
                with pytest.raises(InvalidStatus) as e:
                    async with connect(s.url, origin=origin):
                        pass
                assert e.value.response.status_code == 403, origin
            async with connect(s.url, origin="http://127.0.0.1:%d" % s.port) as ws:
                await ws.ping()
            async with connect(s.url) as ws:  # no Origin: not a browser
                await ws.ping()

        asyncio.run(go())


def test_fifth_client_refused_and_slots_come_back(sim):
    # 4 clients is all the board's socket budget leaves the gateway (limits.py)
    async def go():
        four = [await authed(sim).__aenter__() for _ in range(4)]
        for ws in four:
            await ws.ping()
        with pytest.raises(InvalidStatus) as e:
            async with authed(sim):
                pass
        assert e.value.response.status_code == 503
        await four[0].close()
        async with authed(sim) as again:  # a closed client's slot is free again
            await again.ping()
        for ws in four[1:]:
            await ws.close()

    asyncio.run(go())


def test_oversized_frame_closes_1009(sim):
    async def go():
        async with authed(sim) as ws:
            await ws.send("x" * (16 * 1024 + 1))
            assert await close_code(ws) == 1009
        async with authed(sim) as ws:  # the server is fine afterwards
            await ws.send("{oops")
            assert (await recv_json(ws))["type"] == "error"

    asyncio.run(go())


def test_malformed_frames_get_error_frames_connection_stays(sim):
    async def go():
        async with authed(sim) as ws:
            await ws.send("{not json")
            assert await recv_json(ws) == {"type": "error", "content": "invalid JSON"}
            await ws.send(json.dumps({"type": "hello"}))
            assert "unknown type" in (await recv_json(ws))["content"]
            await ws.send(json.dumps({"type": "message", "content": "x", "chat_id": "no/slash"}))
            assert "chat_id" in (await recv_json(ws))["content"]
            await ws.send(b"\x00binary")
            assert (await recv_json(ws))["type"] == "error"
            await ws.ping()

    asyncio.run(go())


# --- with the fake LLM ------------------------------------------------------------

def test_message_gets_working_status_and_response(sim, fresh):
    fresh.script({"text": "Hello from the fake model."})

    async def go():
        async with authed(sim) as ws:
            statuses, f = await ask(ws, "hi there", chat_id="e2e_one")
            assert statuses == ["working"]
            assert f == {"type": "response", "content": "Hello from the fake model.",
                         "chat_id": "e2e_one"}
            await ws.send("{broken")  # still usable after an error frame
            assert (await recv_json(ws))["type"] == "error"
            _, f = await ask(ws, "again", chat_id="e2e_one")
            assert f["content"] == "Echo: again"

    asyncio.run(go())
    reqs = fresh.requests
    assert fresh.violations == []
    assert reqs[-1]["body"]["messages"][0] == {"role": "user", "content": "hi there"}


def test_answer_streams_as_partial_frames(sim, fresh):
    """The answer so far while the model writes it (~20 tokens/s here), then the
    response; the partials coalesced, never one frame per token."""
    words = " ".join("word%d" % i for i in range(30))
    fresh.script({"text": words, "pace": 20})

    async def go():
        async with authed(sim) as ws:
            parts = []
            statuses, f = await ask(ws, "stream it", chat_id="e2e_stream", partials=parts)
            assert statuses == ["working"] and f["content"] == words, f
            assert parts and len(parts) < 30, parts  # coalesced: never one per token
            assert all(words.startswith(p) for p in parts) and parts == sorted(parts, key=len)

    asyncio.run(go())
    assert fresh.requests[-1]["body"]["stream"] is True and fresh.violations == []


def test_chat_tool_one_shot(sim, fresh):
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "chat"), "--url", sim.url,
                        "--token", TOKEN, "--chat-id", "cli_test", "--message", "ping me"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "Echo: ping me"
    assert "[working]" in r.stderr


def test_two_chat_ids_never_see_each_others_replies(sim, fresh):
    async def go():
        async with authed(sim) as a, authed(sim) as b:
            seen = {"alice": [], "bob": []}

            async def run(ws, cid):
                for i in range(3):
                    _, f = await ask(ws, "%s says %d" % (cid, i), chat_id=cid)
                    seen[cid].append(f)

            await asyncio.gather(run(a, "alice"), run(b, "bob"))
            for cid in ("alice", "bob"):
                assert [f["content"] for f in seen[cid]] == \
                    ["Echo: %s says %d" % (cid, i) for i in range(3)]
                assert all(f["chat_id"] == cid and f["type"] == "response" for f in seen[cid])

    asyncio.run(go())


def test_burst_beyond_the_queue_gets_busy_answers(sim, fresh):
    # The first turn is slow, so the chat's place in the inbound queue fills while the
    # agent waits: one chat may have limits.BUS_CHAT_QUEUED messages waiting.
    fresh.script({"text": "slow first answer", "delay_s": 4})
    n = 40

    async def go():
        async with authed(sim, ping_timeout=None) as ws:
            for i in range(n):
                await ws.send(json.dumps({"type": "message", "content": "m%d" % i,
                                          "chat_id": "burst"}))
            responses, busy = [], []
            while len(responses) + len(busy) < n:
                f = await recv_json(ws, timeout=120)
                if f["type"] == "response":
                    responses.append(f["content"])
                elif f["type"] == "error":
                    assert f["content"] == "Busy, try again shortly.", f
                    busy.append(f)
                elif f["type"] != "partial":  # (an answer shown while it streams)
                    assert f == {"type": "status", "content": "working", "chat_id": "burst"}
            return responses, busy

    responses, busy = asyncio.run(go())
    assert len(responses) + len(busy) == n
    assert busy and limits.BUS_CHAT_QUEUED <= len(responses) <= limits.BUS_CHAT_QUEUED + 1
    assert responses[0] == "slow first answer"
    echoed = [r[len("Echo: "):] for r in responses[1:]]
    assert len(set(echoed)) == len(echoed) and all(re.fullmatch(r"m\d+", e) for e in echoed)
    assert "inbound queue full" in sim.output()
