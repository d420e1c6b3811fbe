# Onboarding portal: access point, captive DNS and the settings page, served on
# loopback (random ports) by the firmware's own asyncio servers.
import json
import socket
import struct
import asyncio
from support import Capture, read
from mimi import board, limits, repl
from mimi.config import settings as config
from mimi.services import portal, captive_dns

cfg = config.cfg
SECRETS = {
    "wifi_pass": "hunter2hunter2",
    "api_key": "sk-secret-abcdef123456",
    "tg_token": "123456789:AAsecretsecretsecretsecret_x",
    "feishu_app_secret": "feishuSecretSecretSecret42",
}


class Sup:
    """The WiFi supervisor as the portal sees it."""

    def __init__(self, online=False, retries=0):
        self._online = online
        self.retries = retries

    def online(self):
        return self._online


def setup():
    cfg.load()


async def opened(sup=None):
    p = portal.Portal(sup or Sup(), http_port=0, dns_port=0, host="127.0.0.1")
    with Capture() as c:
        await p.open()
    p.console = c.text
    return p


async def http(p, method, path, headers=None, body=b"", host=None):
    r, w = await asyncio.open_connection("127.0.0.1", p.http_port)
    h = {"Host": host or "127.0.0.1:%d" % p.http_port}
    if body:
        h["Content-Type"] = "application/x-www-form-urlencoded"
        h["Content-Length"] = str(len(body))
    h.update(headers or {})
    req = "%s %s HTTP/1.1\r\n" % (method, path) + "".join("%s: %s\r\n" % kv for kv in h.items())
    w.write(req.encode() + b"\r\n" + body)
    await w.drain()
    data = await r.read(-1)  # to EOF
    w.close()
    await w.wait_closed()
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    hdrs = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    return int(lines[0].split()[1]), hdrs, rest.decode()


def form(d):
    def q(s):
        return "".join(c if c.isalpha() or c.isdigit() or c in "-_." else "%%%02X" % b
                       for c, b in ((chr(b), b) for b in s.encode()))

    return "&".join("%s=%s" % (k, q(v)) for k, v in d.items()).encode()


def same_origin(p):
    return {"Origin": "http://127.0.0.1:%d" % p.http_port}


async def test_ap_opens_with_generated_password():
    p = await opened()
    ap = board.ap_wlan()
    assert ap.active() and ap.cfg["essid"] == "MimiClaw-A1B2"
    pw = cfg.get("ap_pass")
    assert ap.cfg["password"] == pw and len(pw) == limits.AP_PASS_LEN
    assert ap.cfg["authmode"] == limits.AP_AUTH_WPA2
    assert "MimiClaw-A1B2" in p.console and pw in p.console and p.url() in p.console
    assert config.Config().load().get("ap_pass") == pw  # kept: the same password next boot
    with Capture() as c:
        portal.current = p
        repl.wifi_status()
    assert pw in c.text and "MimiClaw-A1B2" in c.text
    await p.close()
    assert not ap.active()
    p2 = await opened()
    assert board.ap_wlan().cfg["password"] == pw
    await p2.close()


async def test_serve_opens_until_online():
    sup = Sup()
    limits.PORTAL_CHECK_S = 0  # module constant, shortened for this test
    with Capture():
        t = asyncio.create_task(portal.serve(sup))
        for _ in range(100):
            await asyncio.sleep_ms(1)
            if portal.current and portal.current.is_open:
                break
        assert portal.current.is_open and board.ap_wlan().active()
        sup._online = True
        await asyncio.wait_for_ms(t, 2000)
    assert portal.current is None and not board.ap_wlan().active()


async def test_form_saves_settings_and_never_echoes_secrets():
    p = await opened()
    status, _, page = await http(p, "GET", "/")
    assert status == 200 and "not set" in page and 'action="/save"' in page
    assert "host-network" in page  # the scan list
    values = dict(SECRETS, wifi_ssid="Home <Net>", provider="openai", model="gpt-x",
                  api_base="http://10.0.0.5:8080", tg_allow="111, 222", feishu_app_id="cli_a1b2c3")
    status, _, page = await http(p, "POST", "/save", same_origin(p), form(values))
    assert status == 200, page
    assert "Saved" in page
    saved = config.Config().load()
    for k in SECRETS:
        assert saved.get(k) == SECRETS[k]
    assert saved.get("wifi_ssid") == "Home <Net>" and saved.get("provider") == "openai"
    assert saved.get("tg_allow") == "111,222" and saved.get("api_base") == "http://10.0.0.5:8080"
    assert saved.get("feishu_app_id") == "cli_a1b2c3"
    status, _, after = await http(p, "GET", "/")
    status, _, scan = await http(p, "GET", "/scan")
    assert status == 200 and "host-network" in scan
    for text in (page, after, scan):
        for secret in list(SECRETS.values()) + [SECRETS["api_key"][:8], SECRETS["tg_token"][-12:]]:
            assert secret not in text, secret
    assert "Home &lt;Net&gt;" in after and "<Net>" not in after
    assert after.count("(set)") == 4 and 'value="cli_a1b2c3"' in after
    # an empty secret field keeps the stored one; the box clears it (set up now: with the key)
    status, _, page = await http(p, "POST", "/save", same_origin(p),
                                 form({"api_key": "", "tg_token": "", "clear_tg_token": "1",
                                       "current_secret": SECRETS["api_key"]}))
    assert status == 200
    assert cfg.get("api_key") == SECRETS["api_key"] and cfg.get("tg_token") == ""
    await p.close()


async def test_bad_input_shows_error_and_saves_nothing():
    p = await opened()
    before = read("/config.json")
    bad = {"api_key": "sk-new-key-000000", "api_base": "ftp://nowhere", "model": "m"}
    status, _, page = await http(p, "POST", "/save", same_origin(p), form(bad))
    assert status == 400
    assert "Not saved" in page and "api_base: must start with" in page
    assert "sk-new-key-000000" not in page
    assert read("/config.json") == before and not cfg.get("api_key") and cfg.get("model") == ""
    status, _, page = await http(p, "POST", "/save", same_origin(p), form({"tg_allow": "12,abc"}))
    assert status == 400 and "chat ids are numbers" in page
    assert read("/config.json") == before
    status, _, page = await http(p, "POST", "/save", same_origin(p), form({"feishu_app_id": "a1b2"}))
    assert status == 400 and "cli_" in page and read("/config.json") == before
    # a refused secret is not shown back either (its error names the rule, not the value)
    for key, bad in (("tg_token", "not-a-token-SECRETVALUE"), ("wifi_pass", "short7!"),
                     ("api_key", "sk with SECRETSPACE")):
        status, _, page = await http(p, "POST", "/save", same_origin(p), form({key: bad}))
        assert status == 400 and "Not saved: " + key in page, page
        assert bad not in page and "SECRET" not in page, key
    assert read("/config.json") == before
    await p.close()


async def test_cross_origin_and_oversized_posts_refused():
    p = await opened()
    before = read("/config.json")
    body = form({"api_key": "sk-evil-0000000000"})
    cases = [
        ({"Origin": "http://evil.example"}, None),
        ({}, None),  # neither Origin nor Referer
        ({"Referer": "http://evil.example/page"}, None),
        ({"Origin": "http://evil.example"}, "evil.example"),  # rebinding: Host is not the board
        ({"Origin": "null"}, None),
    ]
    for headers, host in cases:
        status, _, _ = await http(p, "POST", "/save", headers, body, host=host)
        assert status == 403, (headers, host)
    assert read("/config.json") == before
    ref = {"Referer": "http://127.0.0.1:%d/" % p.http_port}
    status, _, _ = await http(p, "POST", "/save", ref, form({"model": "via-referer"}))
    assert status == 200 and cfg.get("model") == "via-referer"
    big = form({"model": "x" * (limits.PORTAL_BODY_MAX + 10)})
    status, _, _ = await http(p, "POST", "/save", same_origin(p), big)
    assert status == 413 and cfg.get("model") == "via-referer"
    status, _, _ = await http(p, "POST", "/save", dict(same_origin(p), **{"Content-Type": "text/plain"}),
                              b"model=x")
    assert status == 415
    await p.close()


async def test_detection_urls_redirect_to_the_page():
    p = await opened()
    for path in ("/generate_204", "/gen_204", "/hotspot-detect.html", "/connecttest.txt",
                 "/library/test/success.html", "/redirect", "/anything?x=1"):
        status, h, _ = await http(p, "GET", path, host="connectivitycheck.gstatic.com")
        assert status == 302 and h["location"] == "http://%s:%d/" % (limits.AP_IP, p.http_port), path
    status, _, body = await http(p, "GET", "/scan")
    nets = json.loads(body)
    assert status == 200 and nets[0]["ssid"] == "host-network"
    status, _, _ = await http(p, "GET", "/config")
    assert status == 302  # no config dump endpoint
    await p.close()


def dns_query(name, qtype=1, ident=0x1234):
    q = b"".join(bytes([len(part)]) + part.encode() for part in name.split(".")) + b"\x00"
    return struct.pack("!HHHHHH", ident, 0x0100, 1, 0, 0, 0) + q + struct.pack("!HH", qtype, 1)


async def ask(port, packet):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setblocking(False)
    s.sendto(packet, socket.getaddrinfo("127.0.0.1", port)[0][-1])
    try:
        for _ in range(2000):  # the server runs on this same loop: yield to it
            await asyncio.sleep_ms(1)
            try:
                return s.recv(512)
            except OSError:
                pass
        raise AssertionError("no DNS answer")
    finally:
        s.close()


async def test_dns_answers_every_name_with_the_ap_address():
    p = await opened()
    for name in ("connectivitycheck.gstatic.com", "captive.apple.com", "example.org"):
        reply = await ask(p.dns_port, dns_query(name, ident=0xBEEF))
        ident, flags, qd, an = struct.unpack("!HHHH", reply[:8])
        assert ident == 0xBEEF and flags & 0x8000 and flags & 0xF == 0 and qd == 1 and an == 1
        assert reply[-4:] == bytes([192, 168, 4, 1])
        assert struct.unpack("!L", reply[-10:-6])[0] == limits.DNS_TTL_S
    reply = await ask(p.dns_port, dns_query("example.org", qtype=28))  # AAAA: no answer, no error
    assert struct.unpack("!HHHH", reply[:8])[3] == 0 and reply[3] & 0xF == 0
    assert p._dns.answered == 4
    await p.close()


def test_dns_ignores_malformed_packets():
    assert captive_dns.answer(b"", "192.168.4.1") is None
    assert captive_dns.answer(b"\x00" * 11, "192.168.4.1") is None
    q = dns_query("a.b")
    assert captive_dns.answer(q[:-3], "192.168.4.1") is None  # cut in the question
    resp = bytearray(q)
    resp[2] |= 0x80  # a response, not a query
    assert captive_dns.answer(bytes(resp), "192.168.4.1") is None
    assert captive_dns.answer(q, "10.0.0.1")[-4:] == bytes([10, 0, 0, 1])


def test_no_ports_80_and_53_on_the_host():
    p = portal.Portal(Sup())
    assert p.want_http == 0 and p.want_dns == 0  # the host never takes this computer's


async def test_scan_stops_a_connect_attempt_that_blocks_it():
    # ESP-IDF refuses a user scan while the station connects; the esp32 port's
    # WLAN.scan() then returns [] (network_wlan.c ignores the error).
    class BusyWLAN:
        def __init__(self):
            self.connecting = True
            self.disconnects = 0

        def active(self, on=None):
            return True

        def disconnect(self):
            self.disconnects += 1
            self.connecting = False

        def scan(self):
            return [] if self.connecting else [(b"home", b"\x01" * 6, 6, -50, 3, False)]

    w = BusyWLAN()
    real = board.wlan
    board.wlan = lambda: w
    try:
        p = portal.Portal(Sup(online=False), http_port=0, dns_port=0, host="127.0.0.1")
        nets = await p.scan(fresh=True)
        assert w.disconnects == 1 and [n["ssid"] for n in nets] == ["home"]
        w.connecting, w.disconnects = True, 0
        p2 = portal.Portal(Sup(online=True), http_port=0, dns_port=0, host="127.0.0.1")
        assert await p2.scan(fresh=True) == [] and w.disconnects == 0  # online: never cut the link
    finally:
        board.wlan = real


async def test_a_slow_scan_leaves_the_loop_running():
    # wlan.scan() holds its caller 2-3 s on the board: it runs on its own thread; two
    # page loads during one scan wait for the same one.
    from mimi.board import host
    from support import Ticker

    host.SimWLAN.scan_ms = 300
    before = host.SimWLAN.scans
    t = Ticker()
    try:
        p = portal.Portal(Sup(online=True), http_port=0, dns_port=0, host="127.0.0.1")
        start = t.count
        a, b = await asyncio.gather(p.scan(), p.scan(fresh=True))
    finally:
        t.stop()
        host.SimWLAN.scan_ms = 0
    assert a == b and a[0]["ssid"] == "host-network"
    assert host.SimWLAN.scans == before + 1
    assert t.count > start + 1  # the loop ran while the scan was under way
    assert await p.scan() is a  # cached now


# --- a configured board, hostile clients and bad forms (issue 25, items 7-9) -------
async def test_a_set_up_board_wants_its_key_for_anything_but_wifi():
    # The AP opens whenever WiFi fails at boot: a stranger on it redirected the API key
    # to a server of theirs and let their chat in, with no secret.
    cfg.update({"api_key": SECRETS["api_key"], "tg_token": SECRETS["tg_token"], "tg_allow": "111",
                "ws_token": "gateway-token-0123", "wifi_ssid": "Home"})
    p = await opened()
    before = read("/config.json")
    _, _, page = await http(p, "GET", "/")
    assert 'name="current_secret"' in page and 'name="api_base"' in page
    evil = {"api_base": "http://10.9.9.9:8080/v1", "tg_allow": "111,666"}
    status, _, page = await http(p, "POST", "/save", same_origin(p), form(evil))
    assert status == 403 and "needs its current API key or gateway token" in page, (status, page)
    assert read("/config.json") == before
    status, _, page = await http(p, "POST", "/save", same_origin(p),
                                 form(dict(evil, current_secret="not-the-key-00000")))
    assert status == 403 and "wrong API key or gateway token" in page and read("/config.json") == before
    # guessing is slowed down: right after a wrong one, not even the right one is looked at
    status, _, page = await http(p, "POST", "/save", same_origin(p),
                                 form(dict(evil, current_secret=SECRETS["api_key"])))
    assert status == 429 and read("/config.json") == before, status
    p.wait_until = None  # the back-off over
    # the owner, with the key: saved, and the key is not handed to the new server
    status, _, page = await http(p, "POST", "/save", same_origin(p),
                                 form(dict(evil, current_secret=SECRETS["api_key"])))
    assert status == 200 and "The stored API key was cleared" in page, page
    assert cfg.get("api_base") == "http://10.9.9.9:8080/v1" and cfg.get("api_key") == ""
    assert cfg.get("tg_allow") == "111,666"
    # a new provider with a new key typed in keeps that one; the gateway token unlocks too
    status, _, page = await http(p, "POST", "/save", same_origin(p), form(
        {"provider": "openai", "api_key": "sk-new-key-123456", "current_secret": "gateway-token-0123"}))
    assert status == 200 and cfg.get("provider") == "openai" and cfg.get("api_key") == "sk-new-key-123456"
    # a new provider alone drops the stored key
    status, _, page = await http(p, "POST", "/save", same_origin(p),
                                 form({"provider": "anthropic", "current_secret": "sk-new-key-123456"}))
    assert status == 200 and cfg.get("api_key") == "", page
    # WiFi needs no secret: the router changed is what the AP is for
    status, _, page = await http(p, "POST", "/save", same_origin(p),
                                 form({"wifi_ssid": "New Router", "wifi_pass": "newpassword1"}))
    assert status == 200 and cfg.get("wifi_ssid") == "New Router" and cfg.get("wifi_pass") == "newpassword1"
    await p.close()


async def test_a_set_up_board_with_no_secret_offers_wifi_only():
    cfg.update({"api_base": "http://10.0.0.5:8080", "tg_allow": "111", "ws_token": "", "wifi_ssid": "Home"})
    p = await opened()
    _, _, page = await http(p, "GET", "/")
    assert 'name="wifi_ssid"' in page and 'name="wifi_pass"' in page and "WiFi only" in page
    for field in ("api_base", "api_key", "tg_allow", "tg_token", "provider", "current_secret"):
        assert 'name="%s"' % field not in page, field
    before = read("/config.json")
    status, _, page = await http(p, "POST", "/save", same_origin(p), form({"tg_allow": "111,666"}))
    assert status == 403 and "WiFi only" in page and read("/config.json") == before
    status, _, _ = await http(p, "POST", "/save", same_origin(p), form({"wifi_ssid": "Other"}))
    assert status == 200 and cfg.get("wifi_ssid") == "Other"
    await p.close()


async def test_a_first_setup_needs_no_secret():
    # nothing set up yet but what every board has (a generated gateway token, the AP's password)
    cfg.update({"ws_token": "gateway-token-0123"})
    portal.ap_password()
    p = await opened()
    status, _, page = await http(p, "POST", "/save", same_origin(p), form(
        {"api_key": "sk-first-key-000000", "api_base": "http://10.0.0.5:8080", "tg_allow": "111"}))
    assert status == 200 and cfg.get("api_key") == "sk-first-key-000000", page
    await p.close()


def held(n, src):
    """n connections from address src that send nothing (half-open requests)."""
    out = []
    for _ in range(n):
        s = socket.socket()
        s.bind(socket.getaddrinfo(src, 0)[0][-1])
        out.append(s)
    return out


async def accepted(p, last):
    """Let the portal accept the connection just made: its record is the newest, not `last`."""
    for _ in range(5000):
        if p.conns and p.conns[-1] is not last:
            return p.conns[-1]
        await asyncio.sleep_ms(1)
    raise AssertionError("the portal did not take the connection")


async def test_half_open_connections_cannot_lock_the_page():
    # 12 connections that never send a request made every client get 503 until the
    # 10 s read timeout. The oldest that sent nothing goes, from the address holding most.
    p = await opened()
    addr = socket.getaddrinfo("127.0.0.1", p.http_port)[0][-1]
    evil = []
    slow = socket.socket()  # a person's browser that has begun its request and is slow
    slow.bind(socket.getaddrinfo("127.0.0.3", 0)[0][-1])
    slow.connect(addr)
    slow.send(b"GET / HTTP/1.1\r\n")
    last = await accepted(p, None)
    for s in held(12, "127.0.0.2"):
        s.connect(addr)
        evil.append(s)
        last = await accepted(p, last)
        assert len(p.conns) <= limits.PORTAL_CLIENTS
    assert p.conns[0][0] == bytes([127, 0, 0, 3]) and p.conns[0][3].got  # the slow one is still there
    for _ in range(3):  # a person's page loads, again and again, while all of that is open
        status, _, page = await http(p, "GET", "/")
        assert status == 200 and "MimiClaw setup" in page
    slow.send(b"Host: 127.0.0.1:%d\r\n\r\n" % p.http_port)
    slow.setblocking(False)
    got = b""
    for _ in range(5000):
        await asyncio.sleep_ms(1)
        try:
            d = slow.recv(4096)
        except OSError:
            continue
        if not d:
            break
        got += d
    assert got.startswith(b"HTTP/1.1 200"), got[:80]
    # the shed connections were closed: each reads its end
    closed = 0
    for s in evil:
        s.setblocking(False)
        try:
            closed += s.recv(10) == b""
        except OSError:
            pass
    assert closed >= 12 - limits.PORTAL_CLIENTS, closed
    for s in evil + [slow]:
        s.close()
    await p.close()


async def test_bad_form_encoding_is_refused_not_saved():
    # %FF%FE (not UTF-8) decoded to "" and cleared the setting; a cut %4 became byte 0x04
    cfg.update({"wifi_ssid": "Home", "model": "m1"})
    p = await opened()
    before = read("/config.json")
    for body in (b"wifi_ssid=%FF%FE", b"model=ab%4", b"model=%4", b"model=%zz",
                 b"wifi_ssid=%ED%A0%80", b"wifi_ssid=%C0%80", b"wifi_ssid=\xed\xa0\x80"):
        status, _, page = await http(p, "POST", "/save", same_origin(p), body)
        assert status == 400 and "bad form" in page, (body, status, page)
        assert read("/config.json") == before, (body, read("/config.json"), before)
    status, _, _ = await http(p, "POST", "/save", same_origin(p), b"wifi_ssid=caf%C3%A9+x%2B1")
    assert status == 200 and cfg.get("wifi_ssid") == "caf\u00e9 x+1"
    await p.close()


async def test_hostile_posts_change_nothing_but_wifi():
    # a fuzz of item 7: posts of any fields, values, encodings and guessed secrets on a
    # board already set up: nothing but WiFi ever changes, and the key never moves
    import fuzz

    cfg.update({"api_key": SECRETS["api_key"], "tg_token": SECRETS["tg_token"], "tg_allow": "111",
                "ws_token": "gateway-token-0123", "wifi_ssid": "Home"})
    p = await opened()
    keep = {k: cfg.get(k) for k in config.SCHEMA if k not in ("wifi_ssid", "wifi_pass")}
    guesses = ("", "x", SECRETS["api_key"][:-1], SECRETS["api_key"] + " ", SECRETS["api_key"].upper(),
               "gateway-token-012", "%s" % SECRETS["tg_token"], "\u00e9" * 12)
    keys = portal.FIELDS + ("current_secret", "clear_api_key", "clear_tg_token", "ap_pass", "ws_token")
    values = ("http://10.9.9.9:8080/v1", "111,666", "openai", "sk-evil-0000000000", "", "1", "x" * 300)
    statuses = {}
    for n, r in fuzz.cases(60, "portal post"):
        fields = {}
        for _ in range(r.below(5) + 1):
            k = r.pick(keys)
            fields[k] = r.pick(guesses) if k == "current_secret" else r.pick(values)
        body = form(fields)
        if r.chance(20):
            body = fuzz.garble(r, body)
        p.wait_until = None  # every guess looked at
        try:
            status, _, page = await http(p, "POST", "/save", same_origin(p), body)
        except Exception as e:  # noqa: B902
            fuzz.crash("portal post", n, e, body)
        statuses[status] = statuses.get(status, 0) + 1
        now = {k: cfg.get(k) for k in keep}
        if now != keep:
            fuzz.fail("portal post", n, "changed %r" % [k for k in keep if now[k] != keep[k]], body)
        if SECRETS["api_key"] in page:
            fuzz.fail("portal post", n, "the key was shown", body)
    assert 200 in statuses and 403 in statuses, statuses  # WiFi changes went through, the rest not
    await p.close()
