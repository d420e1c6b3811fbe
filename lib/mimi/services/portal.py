# Onboarding portal, loaded only while it is open (services/wifilink.py onboard()
# decides). With no WiFi settings, or when WiFi never came up since boot,
# the board opens a WPA2 access point "MimiClaw-XXXX" (password generated once,
# kept as the `ap_pass` setting and shown on the console), answers every DNS
# query with its own address and serves a settings page for WiFi, the LLM,
# Telegram and Feishu. Unlike MimiClaw's portal it is never open, never sends a stored secret
# back, validates with the REPL's rules, refuses cross-origin posts, and closes the
# access point once the board is online.
# The AP also opens on a configured board whose WiFi failed at boot (a router
# rebooting), so whoever joins it must not take the board over: there, any change
# but WiFi needs the current API key or gateway token (none set: WiFi only), and a
# new api_base or provider never inherits the stored API key. Half-open connections
# cannot lock the page: the oldest that sent nothing goes (net/httpserver.shed()).
import os
import json
import asyncio
from mimi import limits, log, board, fs, net
from mimi.config import settings as config
from mimi.net import httpserver as hs, split_url, html_escape

TAG = "portal"
cfg = config.cfg
FIELDS = ("wifi_ssid", "wifi_pass", "provider", "api_key", "model", "api_base",
          "tg_token", "tg_allow", "feishu_app_id", "feishu_app_secret")
WIFI = ("wifi_ssid", "wifi_pass")
# settings a board has without anyone setting it up
_NOT_SETUP = WIFI + ("ap_pass", "ws_token")
PASS_CHARS = "abcdefghjkmnpqrstuvwxyz23456789"  # no 0/o, 1/l/i: read off a console
current = None


def ap_name():
    mac = board.ap_wlan().config("mac")
    return "MimiClaw-%02X%02X" % (mac[-2], mac[-1])


def ap_password():
    """The AP's WPA2 password: made once, then kept in /config.json."""
    p = cfg.get("ap_pass")
    if not p:
        p = "".join(PASS_CHARS[b % len(PASS_CHARS)] for b in os.urandom(limits.AP_PASS_LEN))
        cfg.set("ap_pass", p)
    return p


def parse_form(body):
    """application/x-www-form-urlencoded -> dict; ValueError when it is not strict
    UTF-8, raw or percent-encoded, or an escape is cut short."""
    return hs.parse_query(hs.text(body))


def unlock_keys():
    """What unlocks the settings besides WiFi: None on a board nobody has set up
    (anyone on the AP sets everything), else the current API key and gateway token
    that are set ([]: there is nothing to ask for, so WiFi only)."""
    if not any(cfg.is_set(k) for k in config.SCHEMA if k not in _NOT_SETUP):
        return None
    return [v for v in (cfg.get("api_key"), cfg.get("ws_token")) if v]


class Portal:
    def __init__(self, sup, http_port=None, dns_port=None, host=board.BIND_ADDR):
        self.sup = sup  # the WiFi supervisor (services/wifi.py)
        host_sim = board.NAME == "host"  # never take this computer's ports 80 and 53
        # 0: a random free port
        self.want_http = (0 if host_sim else limits.PORTAL_PORT) if http_port is None else http_port
        self.want_dns = (0 if host_sim else limits.DNS_PORT) if dns_port is None else dns_port
        self.host = host
        self.http_port = self.dns_port = None
        self.is_open = False
        self.ip = None
        self.ssid = None
        self.conns = []  # [address, task, request read, Reader] (net/httpserver.shed())
        self.shed = {}  # address -> connections opened or shed lately
        self.saves = 0
        self.fails = 0  # wrong current secrets in a row
        self.wait_until = None  # ticks_ms: no secret looked at before then
        self._http = None
        self._dns = None
        self._dns_task = None
        self._scan = None
        self._scan_at = None
        self._scanning = None  # the result box of a scan under way

    # --- open / close -------------------------------------------------------
    async def open(self):
        from mimi.services import captive_dns

        ap = board.ap_wlan()
        self.ssid = ap_name()
        password = ap_password()
        ap.active(True)
        ap.config(ssid=self.ssid, key=password, authmode=limits.AP_AUTH_WPA2,
                  channel=limits.AP_CHANNEL, max_clients=limits.AP_MAX_CLIENTS)
        self.ip = ap.ifconfig()[0]

        async def http(port):
            return await asyncio.start_server(self._conn, self.host, port)

        async def dns(port):
            return captive_dns.Server(self.ip, self.host, port)

        try:
            span, tries = limits.PORTAL_PORT_ANY, limits.PORTAL_PORT_TRIES
            self._http, self.http_port = await hs.on_port(self.want_http, http, span, tries)
            self._dns, self.dns_port = await hs.on_port(self.want_dns, dns, span, tries)
        except BaseException:
            await self.close()  # no half-open portal; run() tries again later
            raise
        self._dns_task = asyncio.create_task(self._dns.serve())
        self.is_open = True
        why = "no WiFi settings" if not cfg.get("wifi_ssid") else "WiFi %r failed" % cfg.get("wifi_ssid")
        log.info(TAG, "onboarding access point %s open (%s)", self.ssid, why)
        print("-" * 60)
        print("Onboarding (%s): join the WiFi network" % why)
        print("    %s   password %s" % (self.ssid, password))
        print("then open %s (phones open it by themselves)." % self.url())
        print("-" * 60)

    async def close(self):
        self.is_open = False
        if self._dns_task:
            self._dns_task.cancel()
            self._dns_task = None
        if self._dns:
            self._dns.close()
            self._dns = None
        if self._http:
            self._http.close()
            await self._http.wait_closed()
            self._http = None
        try:
            board.ap_wlan().active(False)
        except OSError:
            pass

    def url(self):
        port = self.http_port
        return "http://%s/" % self.ip if port == 80 else "http://%s:%d/" % (self.ip, port)

    # --- HTTP ---------------------------------------------------------------
    async def _conn(self, r, w):
        me = [hs.peer(w), asyncio.current_task(), False, None]
        self.conns.append(me)
        try:
            if not hs.shed(self.conns, me, limits.PORTAL_CLIENTS, limits.PORTAL_PEER_PENDING, self.shed):
                resp = self.response("503 Service Unavailable", "busy, try again")
            else:
                try:
                    me[3] = hs.Reader(r)
                    req = await asyncio.wait_for(self._read(me[3]), limits.PORTAL_READ_TIMEOUT_S)
                    me[2] = True  # read: never shed from now on
                    if req[0] == "GET" and req[1] in ("/", "/index.html", "/scan"):
                        await self.scan(fresh=req[1] == "/scan")  # the page lists the networks
                    resp = self.handle(*req)
                except _Refuse as e:
                    resp = self.response(e.args[0], e.args[1])
            w.write(resp)
            await w.drain()
        except Exception as e:  # timeouts, resets: drop this client only
            log.info(TAG, "client dropped: %s", e)
        finally:  # also when shed (cancelled) for a newer one
            if me in self.conns:
                self.conns.remove(me)
            try:
                w.close()
                await w.wait_closed()
            except Exception:
                pass

    async def _read(self, rd):
        try:
            head = await hs.read_head(rd, limits.PORTAL_HEADER_MAX)
        except ValueError:
            raise _Refuse("431 Request Header Fields Too Large", "headers too large")
        try:
            method, path, _, headers = hs.parse_request(head)
        except ValueError as e:
            raise _Refuse("400 Bad Request", str(e))
        n = headers.get("content-length", "0")
        if not n.isdigit():
            raise _Refuse("400 Bad Request", "bad Content-Length")
        n = int(n)
        if n > limits.PORTAL_BODY_MAX:
            if n <= limits.PORTAL_DRAIN_MAX:  # read it away so the client sees the answer, not a reset
                await rd.skip(n)
            raise _Refuse("413 Payload Too Large", "at most %d bytes" % limits.PORTAL_BODY_MAX)
        return method, path, headers, await rd.readexactly(n) if n else b""

    def response(self, status, body, ctype="text/plain; charset=utf-8", extra=()):
        return hs.http_response(status, body, ctype,
                                ("X-Frame-Options: DENY", "Referrer-Policy: no-referrer") + tuple(extra))

    def own_hosts(self):
        out = []
        for ip in (self.ip, self.host):
            if ip and ip != "0.0.0.0":
                out.append(ip if self.http_port == 80 else "%s:%d" % (ip, self.http_port))
        if self.http_port == 80:
            out.extend("%s:80" % h for h in list(out))
        return out

    def same_origin(self, headers):
        """A post must come from this page: Host is the board itself and the
        browser's Origin (or Referer) is that same host."""
        host = headers.get("host", "").lower()
        if host not in self.own_hosts():
            return False
        origin = headers.get("origin")
        if origin is None:
            ref = headers.get("referer", "")
            try:
                path = split_url(ref)[3]
            except ValueError:
                return False
            origin = ref[:len(ref) - len(path)]
        return origin.lower().rstrip("/") == "http://" + host

    def handle(self, method, path, headers, body):
        if method == "GET" and path in ("/", "/index.html"):
            return self.response("200 OK", self.page(), "text/html; charset=utf-8")
        if method == "GET" and path == "/scan":
            return self.response("200 OK", json.dumps(self._scan or []), "application/json")
        if method == "POST" and path == "/save":
            return self.save(headers, body)
        if method in ("GET", "HEAD"):  # OS detection URLs and any other page: to the form
            return self.response("302 Found", "", extra=("Location: " + self.url(),))
        return self.response("405 Method Not Allowed", "GET or POST /save only")

    def save(self, headers, body):
        if not self.same_origin(headers):
            log.warning(TAG, "cross-origin post refused (origin %r, host %r)",
                        headers.get("origin"), headers.get("host"))
            return self.response("403 Forbidden", "cross-origin post refused")
        if "application/x-www-form-urlencoded" not in headers.get("content-type", ""):
            return self.response("415 Unsupported Media Type", "form posts only")
        try:
            form = parse_form(body)
        except ValueError as e:  # a UnicodeError is one too
            return self.response("400 Bad Request", "bad form: %s" % e)
        changes = {}
        for key in FIELDS:
            if key not in form:
                continue
            value = form[key]
            if config.SCHEMA[key][2]:  # secret: empty keeps it, the box clears it
                if form.get("clear_" + key):
                    changes[key] = ""
                elif value != "":
                    changes[key] = value
            elif value != cfg.get(key) and not (value == "" and cfg.get(key) in ("", None)):
                changes[key] = value
        if not changes:
            return self.response("200 OK", self.page(note="Nothing changed."), "text/html; charset=utf-8")
        refused = self.unlock([k for k in changes if k not in WIFI], form.get("current_secret", ""))
        if refused:
            return self.response(refused[0], self.page(error=refused[1], form=form), "text/html; charset=utf-8")
        cleared = ""
        if ("api_base" in changes or "provider" in changes) and "api_key" not in changes and cfg.get("api_key"):
            changes["api_key"] = ""  # the stored key never goes to a server it was not given for
            cleared = " The stored API key was cleared: enter the key for the new server or provider."
        try:
            done = cfg.update(changes)
        except ValueError as e:
            return self.response("400 Bad Request", self.page(error=str(e), form=form),
                                 "text/html; charset=utf-8")
        self.saves += 1
        log.info(TAG, "settings saved from the portal: %s", ", ".join(sorted(done)))
        note = "Saved: %s.%s" % (", ".join(sorted(done)), cleared)
        if "wifi_ssid" in done or "wifi_pass" in done:
            note += " The board now joins %r; this access point closes once it is online." % (
                cfg.get("wifi_ssid"))
        return self.response("200 OK", self.page(note=note), "text/html; charset=utf-8")

    def unlock(self, keys, given):
        """None when the changes of settings `keys` may be saved, else (status, why):
        on a configured board they need its current API key or gateway token."""
        need = unlock_keys()
        if not keys or need is None:
            return None
        import time

        if not need:
            return ("403 Forbidden", "this board is already set up and has no API key or gateway "
                    "token to ask for: this page changes its WiFi only (the rest: on the REPL)")
        now = time.ticks_ms()
        if self.wait_until is not None and time.ticks_diff(self.wait_until, now) > 0:
            return ("429 Too Many Requests", "wrong API key or gateway token; try again in %d s"
                    % ((time.ticks_diff(self.wait_until, now) + 999) // 1000))
        if any(net.secrets_equal(given, k) for k in need):
            self.fails, self.wait_until = 0, None
            return None
        if not given:  # not a guess: the field was left empty
            return ("403 Forbidden", "changing %s on a board already set up needs its current API "
                    "key or gateway token (ws_token)" % ", ".join(sorted(keys)))
        self.fails += 1
        wait = min(limits.PORTAL_AUTH_BACKOFF_S << min(self.fails - 1, 16), limits.PORTAL_AUTH_BACKOFF_MAX_S)
        self.wait_until = time.ticks_add(now, wait * 1000)
        log.warning(TAG, "a change of %s refused: wrong API key or gateway token", ", ".join(sorted(keys)))
        return ("403 Forbidden", "wrong API key or gateway token")

    async def scan(self, fresh=False):
        """The networks around, strongest first (cached PORTAL_SCAN_TTL_S; fresh: a new
        scan once that is over). wlan.scan() holds its caller for 2-3 s on the board,
        so it runs on a short-lived thread and the loop keeps serving meanwhile."""
        import time

        now = time.ticks_ms()
        age = time.ticks_diff(now, self._scan_at) if self._scan is not None else 0
        # a negative age: the stamp is older than half the ticks period (ESP32: 6.2 days)
        if self._scan is not None and not (fresh and not 0 <= age <= limits.PORTAL_SCAN_TTL_S * 1000):
            return self._scan
        box = self._scanning  # a scan already under way: wait for the same one
        if box is None:
            import _thread

            box = self._scanning = []
            try:
                _thread.stack_size(limits.SCAN_STACK)
                _thread.start_new_thread(self._scan_thread, (box,))
            except (OSError, MemoryError, RuntimeError) as e:
                self._scanning = None
                log.warning(TAG, "scan failed: cannot start its thread: %s", e)
                return self._scan or []
            finally:
                _thread.stack_size(0)
        while not box:
            await asyncio.sleep_ms(limits.PORTAL_SCAN_POLL_MS)
        if self._scanning is box:
            self._scanning = None
            self._scan, self._scan_at = box[0], now
        return box[0]

    def _scan_thread(self, box):
        nets = {}
        try:
            w = board.wlan()
            w.active(True)
            found = w.scan()
            if not found and not self.sup.online():
                # ESP-IDF refuses a user scan while the station is connecting
                # (the esp32 port then returns []), and the driver retries the
                # saved network for ever: stop that attempt, then scan. The
                # supervisor's next attempt connects again.
                try:
                    w.disconnect()
                except OSError:
                    pass
                found = w.scan()
            for n in found:
                ssid = fs.decode(n[0]) if isinstance(n[0], bytes) else str(n[0])
                if ssid and (ssid not in nets or n[3] > nets[ssid]["rssi"]):
                    nets[ssid] = {"ssid": ssid, "rssi": n[3], "ch": n[2], "auth": n[4]}
        except Exception as e:  # noqa: B902 - the loop waits for this box: always fill it
            log.warning(TAG, "scan failed: %s", e)
        finally:
            box.append(sorted(nets.values(), key=lambda n: -n["rssi"])[:limits.PORTAL_SCAN_MAX])

    def page(self, note=None, error=None, form=None):
        """The settings form. Secrets are never written into it: only set/not set."""
        form = form or {}
        out = [_HEAD]
        if note:
            out.append('<p class="ok">%s</p>' % html_escape(note))
        if error:
            out.append('<p class="err">Not saved: %s</p>' % html_escape(error))
        out.append('<form method="post" action="/save">')

        def text(key, label, hint=""):
            v = form.get(key, cfg.get(key) or "")
            out.append('<label>%s<input name="%s" value="%s"%s></label>' % (
                label, key, html_escape(v), ' list="nets"' if key == "wifi_ssid" else ""))
            if hint:
                out.append('<small>%s</small>' % hint)

        def secret(key, label):
            state = "set" if cfg.get(key) else "not set"
            out.append('<label>%s <em>(%s)</em><input type="password" name="%s" value="" '
                       'autocomplete="off" placeholder="%s"></label>' % (
                           label, state, key, "leave empty to keep" if state == "set" else ""))
            if state == "set":
                out.append('<small><input type="checkbox" name="clear_%s" value="1"> clear</small>' % key)

        out.append("<h2>WiFi</h2>")
        text("wifi_ssid", "Network")
        out.append('<datalist id="nets">')
        nets = self._scan or []
        for n in nets:
            out.append('<option value="%s">' % html_escape(n["ssid"]))
        out.append("</datalist>")
        if nets:
            out.append("<small>Nearby: %s</small>" % ", ".join(
                "%s (%d dBm)" % (html_escape(n["ssid"]), n["rssi"]) for n in nets))
        secret("wifi_pass", "Password")
        need = unlock_keys()
        if need == []:
            out.append('<p>This board is already set up: this page changes its WiFi only '
                       '(the other settings: on the REPL).</p><p><button>Save</button></p>'
                       '</form></body></html>')
            return "".join(out)
        if need:
            out.append('<h2>Other settings</h2><label>Current API key or gateway token (ws_token)'
                       '<input type="password" name="current_secret" value="" autocomplete="off">'
                       '</label><small>needed for any change below; not for WiFi</small>')
        out.append("<h2>LLM</h2><label>Provider<select name=\"provider\">")
        cur = form.get("provider", cfg.get("provider"))
        for p in config.PROVIDERS:
            out.append('<option%s>%s</option>' % (" selected" if p == cur else "", p))
        out.append("</select></label>")
        secret("api_key", "API key")
        text("model", "Model", "empty: the provider's default")
        text("api_base", "API base URL", "empty: the provider's own; any OpenAI-compatible server; "
             "a new one (or provider) clears the stored API key")
        out.append("<h2>Telegram</h2>")
        secret("tg_token", "Bot token")
        text("tg_allow", "Allowed chat ids", "comma-separated; empty: nobody")
        out.append("<h2>Feishu / Lark</h2>")
        text("feishu_app_id", "App ID", "cli_...; allow people with allow_feishu(id) on the REPL")
        secret("feishu_app_secret", "App secret")
        out.append('<p><button>Save</button></p></form></body></html>')
        return "".join(out)

    def status_line(self):
        if not self.is_open:
            return "onboarding AP off"
        return "onboarding AP %s open, password %s, page %s" % (self.ssid, cfg.get("ap_pass"), self.url())


class _Refuse(Exception):
    pass


_HEAD = ("<!DOCTYPE html><html><head><meta charset=\"utf-8\">"
         "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
         "<title>MimiClaw setup</title><style>body{font-family:sans-serif;max-width:30em;"
         "margin:1em auto;padding:0 1em}label{display:block;margin-top:.8em}input,select"
         "{display:block;width:100%;padding:.4em;box-sizing:border-box}input[type=checkbox]"
         "{display:inline;width:auto}small{color:#555}.ok{color:#060}.err{color:#b00}"
         "</style></head><body><h1>MimiClaw setup</h1>")


async def serve(sup):
    """Open the portal, keep it open until the board is online, close it."""
    global current
    current = p = Portal(sup)
    try:
        await p.open()
        while not sup.online():
            await asyncio.sleep(limits.PORTAL_CHECK_S)
        log.info(TAG, "online: onboarding access point off")
    finally:
        current = None
        await p.close()
