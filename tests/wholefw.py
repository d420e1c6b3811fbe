"""The whole firmware answering the issue-12 workload (CPython; tests/host and bench/).

    img = wholefw.prepare(tmp_path, llm_svc["ca"])     # tmp_path/fs.img, before Sim.start
    with Sim.start(tmp_path, *wholefw.settings(llm, tg), console=True, heap="192k",
                   micropython=mp32) as sim:
        wholefw.ready(sim, search)                      # booted; web_search on the fake
        wholefw.attach_parts(sim)                       # the simulated SHT3x, button, relay, LED
        wholefw.ws_turn(sim, llm)                       # -> the answer's text
        wholefw.tg_turn(tg, llm)
        wholefw.device_turn(sim, llm)                   # device_read of the SHT3x

The image holds the oversized prompt files of bench/mp/turnprep.py's "full" workload
(SOUL.md and USER.md ~14 KB each, so the system prompt is cut at its 16 KB cap), 20
stored messages of ~520 bytes in both chats, a cron job, and the fake LLM's test CA as
/my-ca.pem (trusted through the `ca_file` setting, besides the shipped roots).
A turn is the reference turn's shape: 4 LLM calls, 3 tools (get_current_time,
read_file, web_search on the fake Tavily), then the answer. Four devices are attached
(issue 23: an SHT3x, a button, a relay, the board's RGB LED in /devices.json, their
simulated parts wired by attach_parts()), and a device turn reads the SHT3x (device_read).

The simulated hardware is not the board's: on the host its code and state take the
MicroPython heap (board/host*.py, hostlib/neopixel, mimi/devices/sim/: the four parts,
their tables and state, the names they intern, tools/simboot.py; less the board's own
esp32.py and esp32_io.py), so a capped run with them gets HOST_HW_KB more than the board
would need. The parts are wired on the console once the firmware is up (tools/sim --part
wires them before boot, where loading their code leaves the boot heap in small pieces: no
larger block than 5.9 KB at 288 KB).
"""
import asyncio
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for _p in (ROOT / "tools", ROOT / "lib"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

import mkimage  # noqa: E402  (tools/)

WS_TOKEN = "wholefw-token-123"
WS_CHAT = "heapchat"
TG_CHAT = 42
CA_FILE = "/my-ca.pem"  # not in /certs: tools/sim makes that folder the build's
HISTORY = 20
LINE = "The user likes short answers and lives in Lisbon; keep replies brief. "
CRON = {"jobs": [{"kind": "every", "interval_s": 3600, "message": "check the plants",
                  "channel": "telegram", "chat_id": str(TG_CHAT)}]}
DEVICES = {"devices": [
    {"name": "living_temp", "type": "sht3x", "sda": 8, "scl": 9, "addr": 0x44},
    {"name": "doorbell", "type": "button", "pin": 4},
    {"name": "fan", "type": "relay", "pin": 21, "inverted": True},
    {"name": "led", "type": "rgb_led", "pin": 48}]}
# issue 24's body at rest (prepare(body=True)): the SHT3x logged every minute and rules
# checked every second; what they say goes to a WebSocket chat nobody has open (the
# parts are wired after boot: until then the rules tell their chat the SHT3x does not answer)
RULE_CHAT = {"channel": "websocket", "chat_id": "rules"}
RULES = {"rules": [dict(r, **RULE_CHAT) for r in (
    {"id": 1, "name": "cool", "device": "living_temp", "when": "above", "value": 28, "hysteresis": 1,
     "every_s": 1, "cooldown_s": 0, "then": "set", "target": "fan", "to": "on", "otherwise": "off"},
    {"id": 2, "name": "damp", "device": "living_temp.humidity", "when": "above", "value": 70, "every_s": 1,
     "cooldown_s": 60, "then": "notify", "text": "damp: {value}"},
    {"id": 3, "name": "bell", "device": "doorbell", "when": "pressed", "then": "notify", "text": "door",
     "cooldown_s": 60})]}
PARTS = ["sht3x:sda=8,scl=9,addr=0x44,temp=21.5,hum=40", "button:pin=4", "relay:pin=21,active_low=1",
         "rgb_led:pin=48,n=1"]
# the host-only share of a capped heap (.mpy; frozen: in ROM), rounded down: 22.5 KB at rest with the
# parts wired and at each turn's peak (bench/hostshare.py; docs/benchmarks.md §17, "The host-only share")
HOST_HW_KB = 22
HEAP_RE = re.compile(r"^heap free\s+(\d+) bytes \(in use (\d+)\)\s*^largest block\s+(?:at least )?(\d+)",
                     re.M)
TLS_RE = re.compile(r"^TLS (\{.*\})$", re.M)


def _history(text):
    lines = []
    for k in range(HISTORY):
        role = "user" if k % 2 == 0 else "assistant"
        lines.append(json.dumps({"role": role, "content": ("message %d: " % k) + "word " * 100,
                                 "ts": 0}))
    return ("\n".join(lines) + "\n").encode()


def prepare(tmp, ca, body=False):
    """tmp/fs.img: the code, the defaults and the workload's files (see above); body:
    with RULES and the SHT3x logged every minute (issue 24)."""
    files = mkimage.image_files(ROOT / "build", sim=True)
    files[CA_FILE] = Path(ca).read_bytes()
    files["/spiffs/config/SOUL.md"] = (LINE * 200).encode()
    files["/spiffs/config/USER.md"] = (LINE * 200).encode()
    files["/spiffs/memory/MEMORY.md"] = (LINE * 70).encode()
    for key in ("ws_" + WS_CHAT, "tg_%d" % TG_CHAT):
        files["/spiffs/sessions/%s.jsonl" % key] = _history(key)
    files["/spiffs/cron.json"] = json.dumps(CRON).encode()
    devices = json.loads(json.dumps(DEVICES))
    if body:
        devices["devices"][0]["log_min"] = 1
        files["/rules.json"] = json.dumps(RULES).encode()
    files["/devices.json"] = json.dumps(devices).encode()
    img = Path(tmp) / "fs.img"
    mkimage.build_image(img, "8M", files)
    return img


def settings(llm, tg, tavily_key="tavily-good"):
    """--set values: gateway, the fake LLM over HTTPS (its CA by ca_file), Telegram on
    the fake Bot API with chat TG_CHAT allowed, a Tavily key the fake answers, no caps
    on LLM calls."""
    return ("ws_port=0", "ws_token=" + WS_TOKEN, "provider=anthropic",
            "api_key=" + llm["api_key"], "api_base=" + llm["base_url"], "model=test-model",
            "ca_file=" + CA_FILE, "tg_api_base=" + tg["base_url"], "tg_token=" + tg["token"],
            "tg_allow=%d" % TG_CHAT, "tavily_key=" + tavily_key,
            "max_calls_hour=0", "max_calls_day=0")  # no spend caps: long runs make 4,000 calls


def ready(sim, search, timeout=180):
    """Wait for the gateway and the Telegram poller; point web_search at the fake Tavily
    from the console (tools/searchstate.py, which the tool's module reads: that module
    itself is loaded for its calls only, as on a board)."""
    sim.wait_for(r"tg: bot @\S+ ready, polling", timeout)
    sim.port
    at = len(sim.output())
    sim.send("from mimi.tools import searchstate as S; S.TAVILY_BASE = %r; del S; print('search', 'on fake')\r"
             % search["tavily"])
    sim.wait_for(r"search on fake", start=at)


def script(tag, text=None):
    """The fake LLM's replies for one turn: 3 tools, then an answer naming `tag` (or
    `text`)."""
    return [
        {"tool_calls": [{"name": "get_current_time", "input": {}}]},
        {"tool_calls": [{"name": "read_file", "input": {"path": "/spiffs/memory/MEMORY.md"}}]},
        {"tool_calls": [{"name": "web_search", "input": {"query": "Lisbon weather"}}]},
        {"text": text or answer(tag)},
    ]


def answer(tag):
    return "It is sunny in Lisbon (%s)." % tag


LONG_PARAGRAPH = ("Lisbon's weather this week stays **mild and sunny**: mornings near 14 degrees, "
                  "afternoons up to 22, a light wind from the north-west and no rain in sight. "
                  "Take a jacket for the evening by the river. ")


def long_answer(tag, size=10 * 1024):
    """A markdown answer of about `size` bytes (paragraphs of bold and plain text, a
    short list, a code block): Telegram takes it in three or more messages."""
    paras = ["# Lisbon, the week ahead (%s)" % tag]
    n = 0
    while sum(len(p) + 2 for p in paras) < size - 400:
        n += 1
        paras.append("%d. %s" % (n, LONG_PARAGRAPH * 3))
        if n % 8 == 0:
            paras.append("- sunrise 07:10\n- sunset 18:40\n- UV index 5")
        if n == 12:
            paras.append("```\nday  min  max\nmon   14   22\ntue   15   21\n```")
    paras.append("That is all for %s." % tag)
    return "\n\n".join(paras)


def words(markdown):
    """The words a person reads of `markdown` as Telegram shows it (markup gone)."""
    text = re.sub(r"\*\*|```|^#+ |^- ", "", markdown, flags=re.M)
    return [w.replace("\u2022", "") for w in text.split() if w.replace("\u2022", "")]


async def _ws_ask(port, text, timeout):
    import websockets

    async with websockets.connect("ws://127.0.0.1:%d/?token=%s" % (port, WS_TOKEN),
                                  max_size=None) as ws:
        await ws.send(json.dumps({"type": "message", "content": text, "chat_id": WS_CHAT}))
        while True:
            frame = json.loads(await asyncio.wait_for(ws.recv(), timeout))
            if frame["type"] == "response":
                return frame["content"]


def _asked(sim, text, timeout):
    """_ws_ask, with what the simulator said when it fails (its log tells why)."""
    try:
        return asyncio.run(_ws_ask(sim.port, text, timeout))
    except Exception as e:
        raise AssertionError("%r; the simulator's last output:\n%s" % (e, sim.output()[-6000:])) from e


def ws_turn(sim, llm, tag="ws", timeout=120):
    """One WebSocket turn -> the response's text."""
    llm.script(*script(tag))
    return _asked(sim, "What is the weather where I live? (%s)" % tag, timeout)


DEVICE_READING = "living_temp = 21.5 °C, humidity 40 %"


def attach_parts(sim):
    """Wire the simulated parts (PARTS) on the simulator's console."""
    at = len(sim.output())
    sim.send("from mimi.devices.sim import parts as P; [P.attach_spec(s) for s in %r]; del P; "
             "print('parts', 'wired')\r" % PARTS)
    sim.wait_for(r"parts wired", start=at)


def device_turn(sim, llm, tag="dev", timeout=120):
    """A WebSocket turn that reads the SHT3x (device_read, with the full prompt and its
    ## Devices part) -> the response's text."""
    llm.script({"tool_calls": [{"name": "device_read", "input": {"name": "living_temp"}}]},
               {"text": answer(tag)})
    return _asked(sim, "How warm is the living room? (%s)" % tag, timeout)


def tg_turn(tg, llm, tag="tg", timeout=120):
    """One Telegram turn -> the text of the message the bot sent back. A streamed answer
    is sent unfinished and edited as it grows: a text that is a start of the scripted
    answer is waited out; anything else (the answer, an error) is the reply."""
    want = answer(tag)

    def mine(st):
        return [m for m in st["sent"] if m["chat_id"] == TG_CHAT]

    def done(st):
        new = mine(st)[n:]
        return new and (new[0]["visible"] == want or not want.startswith(new[0]["visible"]))

    n = len(mine(tg.state()))
    llm.script(*script(tag))
    tg.update(chat_id=TG_CHAT, text="What is the weather where I live? (%s)" % tag)
    return mine(tg.wait(done, timeout))[n]["visible"]


def tg_long_turn(tg, llm, tag="long", timeout=180):
    """One Telegram turn whose answer is long_answer(tag) (3 tools first) -> the visible
    texts of the messages the bot sent for it, in order (progress lines left out), once
    their words are the answer's or once they are not a start of it (an error, an
    apology). A streamed text so far may end in a cut word."""
    want = words(long_answer(tag))

    def mine(st):
        return [m for m in st["sent"][n:] if m["chat_id"] == TG_CHAT and not m.get("deleted")
                and not m["visible"].endswith("\u2026")]

    def done(st):
        have = [w for m in mine(st) for w in words(m["visible"])]
        return have == want or len(have) > 1 and have[:-1] != want[:len(have) - 1]

    n = len(tg.state()["sent"])
    llm.script(*script(tag, long_answer(tag)))
    tg.update(chat_id=TG_CHAT, text="And the whole week? (%s)" % tag)
    return [m["visible"] for m in mine(tg.wait(done, timeout))]


def heap(sim):
    """heap_info() and the TLS counters on the console -> {"alloc", "free", "largest",
    "contexts", "handshakes", "open", "open_peak"}."""
    at = len(sim.output())
    sim.send("heap_info(); from mimi.net import tls; print('TLS', tls.stats()); del tls\r")
    m = sim.wait_for(HEAP_RE, start=at)
    t = sim.wait_for(TLS_RE, start=at)
    out = {"free": int(m.group(1)), "alloc": int(m.group(2)), "largest": int(m.group(3))}
    out.update(json.loads(t.group(1).replace("'", '"')))
    return out
