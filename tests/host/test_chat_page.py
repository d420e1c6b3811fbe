"""The chat page in a real browser: headless Chromium (Debian's, installed by
`make browser`), driven over the DevTools protocol with the `websockets` library,
loads the page from the simulator, sends a message and shows the reply."""
import asyncio
import json
import re
import shutil
import subprocess
import time
import urllib.request

import pytest

from websockets.asyncio.client import connect

from simproc import Sim, llm_settings
from test_gateway_e2e import TOKEN

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
EVIL = '<img src=x onerror="window.__pwned=1"><b>bold?</b>'
# Runs before the page's own script: the page's WebSocket also records what it receives.
RECORD_FRAMES = """(() => { const W = window.WebSocket; window.__rx = [];
  window.WebSocket = function (...a) { const s = new W(...a);
    s.addEventListener('message', e => { try { window.__rx.push(JSON.parse(e.data)); } catch (x) {} });
    return s; };
  window.WebSocket.prototype = W.prototype; })()"""


@pytest.fixture
def browser(tmp_path):
    if not shutil.which(CHROMIUM):
        pytest.skip("no chromium (make browser installs Debian's chromium; needs root)")
    p = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0",
         "--user-data-dir=%s" % (tmp_path / "profile"), "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--disable-dev-shm-usage", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        url = None
        said = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = p.stderr.readline()
            if not line:
                break
            said.append(line)
            m = re.search(r"DevTools listening on (ws://\S+)", line)
            if m:
                url = m.group(1)
                break
        # installed but not starting is a failure to look at, not a skip
        assert url is not None, "chromium did not start:\n" + "".join(said[-20:])
        yield url
    finally:
        p.terminate()
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


class Page:
    def __init__(self, ws):
        self.ws = ws
        self.n = 0

    async def call(self, method, **params):
        self.n += 1
        i = self.n
        await self.ws.send(json.dumps({"id": i, "method": method, "params": params}))
        while True:
            m = json.loads(await asyncio.wait_for(self.ws.recv(), 60))
            if m.get("id") == i:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m["result"]

    async def eval(self, expr):
        r = await self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError("%s: %s" % (expr, r["exceptionDetails"]))
        return r["result"].get("value")

    async def until(self, expr, timeout=90):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            v = await self.eval(expr)
            if v:
                return v
            await asyncio.sleep(0.1)
        raise AssertionError("never true: %s\nlog: %s" % (
            expr, await self.eval("document.getElementById('log').innerText")))


def page_ws(devtools_url):
    host = devtools_url.split("/")[2]
    with urllib.request.urlopen("http://%s/json/list" % host, timeout=20) as r:
        pages = [t for t in json.load(r) if t.get("type") == "page"]
    return pages[0]["webSocketDebuggerUrl"]


def test_chat_page_in_chromium(tmp_path, browser, fake_anthropic):
    # the answer streams at 4 words a second, so the page always shows partials first
    fake_anthropic.script({"text": "", "tool_calls": [
        {"name": "read_file", "input": {"path": "/spiffs/config/SOUL.md"}}]}, {"text": EVIL, "pace": 4})
    with Sim.start(tmp_path, "ws_port=0", "ws_token=" + TOKEN,
                   *llm_settings(fake_anthropic)) as sim:
        async def go():
            async with connect(page_ws(browser), max_size=None) as ws:
                page = Page(ws)
                await page.call("Page.enable")
                # every message the page's WebSocket receives, in order: the test waits
                # for the final response, not for the first partial the page shows
                await page.call("Page.addScriptToEvaluateOnNewDocument", source=RECORD_FRAMES)
                await page.call("Page.navigate",
                                url="http://127.0.0.1:%d/?token=%s" % (sim.port, TOKEN))
                await page.until("document.readyState == 'complete' && "
                                 "document.getElementById('cs').textContent == 'online'")
                # the token left the address bar (and so the history and any Referer)
                assert await page.eval("location.search") == ""
                await page.eval("""window.__st = [];
                    new MutationObserver(() => window.__st.push(document.getElementById('st').textContent))
                      .observe(document.getElementById('st'), {childList: true, characterData: true, subtree: true});
                    document.getElementById('t').value = 'hello from chromium';
                    document.getElementById('f').requestSubmit(); true""")
                # a streamed answer shows its partial texts in the same bubble: read
                # it once the response (or an error) has arrived, not before
                await page.until("window.__rx.some(m => m.type == 'response' || m.type == 'error')")
                reply = await page.eval(
                    "(() => { const a = document.querySelectorAll('.m.a, .m.e');"
                    " return a.length ? a[a.length - 1].textContent : null })()")
                partials = await page.eval("window.__rx.filter(m => m.type == 'partial').length")
                mine = await page.eval("document.querySelector('.m.u').textContent")
                statuses = await page.eval("window.__st")
                pwned = await page.eval("window.__pwned === 1 || !!document.querySelector('#log img')")
                # /usage asks the board for its ledger instead of sending a message
                await page.eval("""document.getElementById('t').value = '/usage';
                    document.getElementById('f').requestSubmit(); true""")
                usage = await page.until(
                    "(() => { const a = document.querySelectorAll('.m.a');"
                    " const t = a[a.length - 1].textContent; return t.startsWith('LLM usage') ? t : null })()")
                return reply, mine, statuses, pwned, usage, partials

        reply, mine, statuses, pwned, usage, partials = asyncio.run(go())
    assert mine == "hello from chromium"
    assert any("working" in s for s in statuses), statuses
    assert "MimiClaw is working: read_file \u2013 /spiffs/config/SOUL.md\u2026" in statuses, statuses
    assert "today " in usage and ": 2 calls" in usage and len(fake_anthropic.requests) == 2
    assert partials >= 1  # streamed (at `pace`): the page showed partials before the reply
    assert reply == EVIL  # shown as text, exactly
    assert not pwned


def test_chart_drawn_in_the_page(tmp_path, browser):
    """/chart NAME [hours] typed in the page asks the board for the chart's data
    ({"type":"chart"}) and draws it as SVG: a path through the columns, the min and max
    on the left; an unknown name is said."""
    from test_rules_e2e import seed

    with Sim.start(tmp_path, "ws_port=0", "ws_token=" + TOKEN, console=True,
                   parts=["sht3x:sda=8,scl=9,addr=0x44"]) as sim:
        sim.send("device_add('room', 'sht3x', log_min=5)\r")
        sim.wait_for(r"OK: added room")
        seed(sim, hours=24)

        async def go():
            async with connect(page_ws(browser), max_size=None) as ws:
                page = Page(ws)
                await page.call("Page.enable")
                await page.call("Page.navigate", url="http://127.0.0.1:%d/?token=%s" % (sim.port, TOKEN))
                await page.until("document.readyState == 'complete' && "
                                 "document.getElementById('cs').textContent == 'online'")
                await page.eval("""document.getElementById('t').value = '/chart room 24';
                    document.getElementById('f').requestSubmit(); true""")
                svg = await page.until("(() => { const s = document.querySelector('#log svg');"
                                       " return s && s.querySelector('path') ? [s.querySelector('path').getAttribute('d'),"
                                       " s.querySelectorAll('line').length, [...s.querySelectorAll('text')].map(t => t.textContent),"
                                       " s.parentNode.firstChild.textContent] : null })()")
                await page.eval("""document.getElementById('t').value = '/chart attic';
                    document.getElementById('f').requestSubmit(); true""")
                err = await page.until("(() => { const e = document.querySelectorAll('.m.e');"
                                       " return e.length ? e[e.length - 1].textContent : null })()")
                return svg, err

        (d, lines, texts, caption), err = asyncio.run(go())
    assert d.startswith("M") and d.count("L") > 100 and lines > 100  # 160 columns, a few without readings
    assert texts[:2] == ["25.88", "20"], texts  # the max and the min on the left
    assert caption.startswith("room, last 24 h: min 20 \u00b0C, max 25.88 \u00b0C, mean "), caption
    assert err == "No history for 'attic' (devices with a history: room)"
