# Feishu / Lark channel (SPEC §8a), on the asyncio loop.
#
# Inbound: Feishu's WebSocket long connection, which needs no public URL: POST
# {feishu_api_base}/callback/ws/endpoint with the app's id and secret gives a
# wss:// URL and the server's ping/reconnect settings; protobuf pbbp2.Frames
# (channels/feishu/frame.py) then arrive over our WebSocket client (net/wsclient.py).
# Every event is ACKed ({"code":200}) before it is acted on, a ping goes out on the
# server's interval, and a closed or silent connection is opened again with capped
# backoff, for ever. Only im.message.receive_v1 text reaches the agent: a p2p chat
# is keyed by the sender's open_id, a group by its chat_id and only when the bot is
# @-mentioned; an id outside feishu_allow is told its id (once an hour) and nothing
# else happens. A redelivered event (same message id) is dropped.
# Outbound: POST /open-apis/im/v1/messages with the tenant token, cached until 5
# minutes before it expires and renewed at once when Feishu calls it invalid;
# parts and message types come from channels/feishu/format.py; rate limits are honoured.
# Besides the long connection there is one API connection, closed once a reply is
# out: a board without PSRAM cannot hold many TLS sessions (MimiClaw's Feishu broke
# on concurrent TLS).
import os
import json
import time
import asyncio
import mimi
from mimi import limits, log, bus, jsonutil
from mimi.config import settings as config
from mimi.net import http
from mimi.services import wifi, ntp

TAG = "feishu"
CHANNEL = "feishu"
cfg = config.cfg
KEYS = ("feishu_app_id", "feishu_app_secret", "feishu_api_base", "proxy_host", "proxy_port", "proxy_type")

ENDPOINT = "/callback/ws/endpoint"
TOKEN = "/open-apis/auth/v3/tenant_access_token/internal"
MESSAGES = "/open-apis/im/v1/messages?receive_id_type="
BOT_INFO = "/open-apis/bot/v3/info"
USER = "/open-apis/contact/v3/users/%s?user_id_type=open_id"
EVENT = "im.message.receive_v1"
BAD_TOKEN = (99991663, 99991664)  # the tenant access token is invalid or expired
RATE = (99991400, 230020)  # over a frequency limit (HTTP 429 on newer APIs, 400 on older)
RICH_REFUSED = (230001, 230025, 230099)  # bad content / too long / card not built: sent again as text
# the bot is out of the group / has no reach to the user / not enabled / may not send / stopped
# by the user: a refused part cannot be told there either (logged only)
GONE = (230002, 230013, 230006, 230035, 230053)
BUSY_CODES = (1, 1000040343)  # the endpoint's "system busy" and internal error: retried
NO_TEXT = -1  # ApiError code: the answer was not Feishu's JSON

STRANGER = ("This bot is private. The id of this chat is %s.\n"
            "Its owner can allow it on the board's REPL with: allow_feishu(%s)")
TEXT_ONLY = "I can only read text messages for now."
TOO_LONG = ("Your message was too long for me to read (%d KB; I can take about %d KB). "
            "Please send it in shorter parts.")
BUSY = "I'm busy with other messages, try again shortly."
NO_ROOM = ("Sorry, the rest of my answer did not fit in the board's free memory to be sent. "
           "It is saved in this chat: ask me to repeat it, shorter.")


class ApiError(Exception):
    def __init__(self, code, msg, status=200, retry_after=None):
        super().__init__("code %s: %s (HTTP %d)" % (code, msg, status))
        self.code = code
        self.msg = msg or ""
        self.status = status
        self.retry_after = retry_after


class Api:
    """Feishu's JSON API over one keep-alive AsyncClient, with the tenant token."""

    def __init__(self, base, app_id, secret, proxy):
        self.key = (base, app_id, secret, proxy)
        self.client = None
        self.token = None
        self.until = 0  # ticks_ms when the token is renewed

    def _client(self):
        if self.client is None:
            from mimi.net.http import AsyncClient

            self.client = AsyncClient(self.key[0], proxy=self.key[3], timeout_s=limits.FEISHU_TIMEOUT_S)
        return self.client

    def close(self):
        """Close the connection and drop the client with its 8 KB buffer: nothing but
        the token is kept between replies."""
        if self.client:
            self.client.close()
            self.client = None

    async def call(self, method, path, body=None, auth=True, ctype="application/json; charset=utf-8"):
        """-> the answer (a dict with code 0); ApiError otherwise. When Feishu calls
        the token invalid it is renewed and the call made once more."""
        for again in (False, True):
            headers = {"Content-Type": ctype}
            if auth:
                try:
                    headers["Authorization"] = "Bearer " + await self.tenant_token()
                except MemoryError:
                    self.close()  # (its client's `sent` told of the token's request, not this one)
                    raise
            c = self._client()
            if c._buf is not None:  # (what it said of the previous request: send_text() asks)
                c._buf.sent = False
            r = await c.request(method, path, headers, body)
            c = None
            try:
                obj = jsonutil.loads(r.body)
            except ValueError:
                obj = None
            if not isinstance(obj, dict) or not isinstance(obj.get("code"), int):
                raise ApiError(NO_TEXT, "not Feishu's JSON", r.status)
            code = obj["code"]
            if code == 0 and r.status == 200:
                return obj
            if auth and code in BAD_TOKEN and not again:
                log.info(TAG, "tenant token refused (%d); renewing it", code)
                self.token = None
                continue
            wait = r.headers.get("x-ogw-ratelimit-reset")
            raise ApiError(code, obj.get("msg"), r.status, int(wait) if wait and wait.isdigit() else None)

    async def tenant_token(self):
        if self.token and time.ticks_diff(self.until, time.ticks_ms()) > 0:
            return self.token
        obj = await self.call("POST", TOKEN, {"app_id": self.key[1], "app_secret": self.key[2]}, False)
        token = obj.get("tenant_access_token")
        if not isinstance(token, str) or not token:
            raise ApiError(NO_TEXT, "no tenant_access_token in the answer")
        try:
            life = int(obj.get("expire") or 0)
        except (TypeError, ValueError):
            life = 0
        self.token = token
        self.until = time.ticks_add(time.ticks_ms(), max(60, life - limits.FEISHU_TOKEN_MARGIN_S) * 1000)
        return token


_OURS = {"ours": True}  # the channel's own line to a chat (a stranger's id): not checked by send()


def _refused(e):
    """Did Feishu answer that it did not take the message (rate limits, busy gateways)?"""
    return isinstance(e, ApiError) and (e.status in (429, 502, 503, 504) or e.code in RATE)


def _tell(chat, text):
    """A line of ours to a chat, through the dispatcher's lane: the receive loop
    never waits for a send."""
    if not bus.outbound.put(bus.Msg(CHANNEL, chat, text, meta=_OURS)):
        log.warning(TAG, "outbound queue full; line to %s dropped", chat)


class Feishu:
    def __init__(self):
        self.api = None
        self.bot_id = None  # the bot's open_id: is a group message addressed to it?
        self.recent = []  # message ids of handled events
        self.strangers = {}  # chat id -> ticks_ms when told
        self.names = {}  # open_id -> display name (group senders)
        self.parts = {}  # frame message_id -> [ticks_ms, [payload or None, ...]]
        self.ping_s = limits.FEISHU_PING_S
        self.nonce_s = 0
        self.rx = 0  # ticks_ms of the last frame from the server
        self.why = None  # why the current session is being ended
        self.waiting = False  # the session task waits in recv(): safe to cancel
        self.taking = None  # a frame too long to take whole, as it is read (channels/feishu/big.py)
        self.long = 0  # ... its payload's size
        self.changed = asyncio.ThreadSafeFlag()  # settings change on any thread
        cfg.watch(self._on_config)

    def _on_config(self, keys):
        for k in keys:
            if k in KEYS:
                self.changed.set()
                return

    def _api(self):
        """The API client for the current settings (a new one when they changed)."""
        from mimi.net.http import proxy_from_config

        key = (cfg.get("feishu_api_base"), cfg.get("feishu_app_id"), cfg.get("feishu_app_secret"),
               proxy_from_config(cfg))
        if self.api is None or self.api.key != key:
            if self.api:
                self.api.close()
            self.api = Api(*key)
            self.bot_id = None
        return self.api

    # ---------------------------------------------------------------- long connection
    async def run(self):
        backoff = limits.FEISHU_BACKOFF_MIN_S
        idle = False
        while True:
            if not (cfg.get("feishu_app_id") and cfg.get("feishu_app_secret")):
                if not idle:
                    log.info(TAG, "no app id and secret; idle until set_feishu_creds(app_id, app_secret)")
                    idle = True
                await bus.wait_event(self.changed, 3600)
                continue
            idle = False
            if not wifi.online():
                log.info(TAG, "WiFi offline; long connection waits")
                await wifi.wait_online()
                continue
            if not ntp.clock_ready():  # TLS checks certificate dates
                await ntp.wait_valid()
                continue
            try:
                conn, service = await self._connect()
            except asyncio.CancelledError:
                raise
            except Exception as e:
                wait = self._connect_failed(e, backoff)
                if wait == backoff:
                    backoff = min(backoff * 2, limits.FEISHU_BACKOFF_MAX_S)
                await bus.wait_event(self.changed, wait)
                continue
            wifi.healthy()
            start = time.ticks_ms()
            why = await self._session(conn, service)
            conn = None  # (closed: what it holds is not kept through the wait to reconnect)
            if time.ticks_diff(time.ticks_ms(), start) > limits.FEISHU_BACKOFF_MAX_S * 1000:
                backoff = limits.FEISHU_BACKOFF_MIN_S  # it had been working: come back at once
            wait = backoff + os.urandom(1)[0] * min(self.nonce_s, limits.FEISHU_JITTER_MAX_S) // 255
            log.info(TAG, "long connection ended (%s); reconnecting in %d s", why, wait)
            if why != "settings changed":
                await bus.wait_event(self.changed, wait)
                backoff = min(backoff * 2, limits.FEISHU_BACKOFF_MAX_S)

    async def _connect(self):
        """Endpoint, bot identity, WebSocket -> (Conn, service id)."""
        from mimi.net import wsclient, httpserver
        from mimi.net.http import proxy_from_config

        api = self._api()
        obj = await api.call("POST", ENDPOINT, {"AppID": api.key[1], "AppSecret": api.key[2]}, False)
        data = obj.get("data") or {}
        url = data.get("URL") if isinstance(data, dict) else None
        if not isinstance(url, str) or not url:
            raise ApiError(NO_TEXT, "no long-connection URL in the answer")
        self._configure(data.get("ClientConfig"))
        if self.bot_id is None:
            bot = (await api.call("GET", BOT_INFO)).get("bot") or {}
            self.bot_id = bot.get("open_id") or ""
            log.info(TAG, "bot %s (%s)", bot.get("app_name") or "?", self.bot_id)
        api.close()  # the long connection is the only one kept open
        query = httpserver.parse_query(url.partition("?")[2])
        try:
            service = int(query.get("service_id") or 0)
        except ValueError:
            service = 0
        conn = await wsclient.connect(url, limits.FEISHU_FRAME_MAX, proxy_from_config(cfg),
                                      timeout_s=limits.FEISHU_TIMEOUT_S)
        log.info(TAG, "long connection open (ping every %d s)", self.ping_s)
        return conn, service

    def _connect_failed(self, e, backoff):
        """Log why the long connection could not be opened -> seconds to wait."""
        base = cfg.get("feishu_api_base")
        if isinstance(e, ApiError):
            wifi.healthy()  # Feishu answered
            if e.code == NO_TEXT or e.status == 404:
                log.error(TAG, "%s offers no long connection to this app (%s): nothing can be "
                          "received. Feishu has it for event subscription in long-connection mode; "
                          "Lark may not. Sending works.", base, e)
                return limits.FEISHU_REFUSED_S
            if e.code not in BUSY_CODES and e.code not in RATE and e.status < 500:
                log.error(TAG, "%s refused the app (%s): check set_feishu_creds() and the bot "
                          "capability", base, e)
                return limits.FEISHU_REFUSED_S
            backoff = max(backoff, e.retry_after or 0)
        elif isinstance(e, (http.ConnectFailure, http.Timeout)):  # (net/httperr.py: loaded by the first error)
            wifi.suspect(TAG)
        # wsclient.Refused carries Feishu's reason in its handshake-msg header
        log.warning(TAG, "long connection failed: %s %s %s; retry in %d s", type(e).__name__, e,
                    getattr(e, "headers", {}).get("handshake-msg") or "", backoff)
        return backoff

    def _configure(self, conf):
        """The server's ClientConfig (endpoint answer, pong payload)."""
        if not isinstance(conf, dict):
            return
        p = conf.get("PingInterval")
        if isinstance(p, int) and p > 0:
            self.ping_s = min(max(p, limits.FEISHU_PING_MIN_S), limits.FEISHU_PING_MAX_S)
        n = conf.get("ReconnectNonce")
        if isinstance(n, int) and n >= 0:
            self.nonce_s = n

    async def _session(self, conn, service):
        """Receive until the connection ends -> why it ended."""
        from mimi.net import wsclient
        from mimi.channels.feishu import frame as feishupb

        self.why = None
        self.rx = time.ticks_ms()
        pinger = asyncio.create_task(self._pinger(conn, service, asyncio.current_task()))
        try:
            while not self.why:
                self.waiting = True
                try:
                    op, data = await conn.recv(self._big)
                    self.waiting = False
                    self.rx = time.ticks_ms()
                    whole = data is not None
                    if whole:
                        f = feishupb.decode(data)
                    else:
                        f, self.long = self.taking.frame(), self.taking.payload.size
                except ValueError as e:  # (the frame was read to its end: still in step)
                    log.warning(TAG, "undecodable frame (%s bytes): %s", "over %d" % limits.FEISHU_FRAME_MAX
                                if self.taking else len(data), e)
                    continue
                finally:
                    self.waiting = False
                    if self.taking:
                        self.taking = None
                        mimi.drop("channels.feishu.big")
                data = None
                if f.method == feishupb.CONTROL:
                    if f.get("type") == "pong" and f.payload:
                        try:
                            self._configure(jsonutil.loads(f.payload))
                        except ValueError:
                            pass
                elif f.method == feishupb.DATA:
                    await self._data(conn, f, whole)
            return self.why
        except wsclient.Closed as e:
            return "closed by the server (%d)" % e.code if e.code != 1006 else "connection lost: " + e.reason
        except asyncio.CancelledError:
            if self.why:  # the pinger ended the session
                return self.why
            raise
        finally:
            self.waiting = False
            pinger.cancel()
            conn.abort()

    def _big(self, op, n):
        """A frame over FEISHU_FRAME_MAX: read in pieces, its long texts left out."""
        from mimi import channels

        self.taking = channels.load("feishu.big").Reader()
        return self.taking

    def _stop(self, task, why):
        self.why = why
        if self.waiting:
            task.cancel()

    async def _pinger(self, conn, service, task):
        """Ping on the server's interval; end the session when the settings change or
        the server has been silent through two pings."""
        from mimi.net.wsclient import Closed
        from mimi.channels.feishu.frame import Frame, encode

        while True:
            silent = time.ticks_diff(time.ticks_ms(), self.rx) // 1000
            if silent > 2 * self.ping_s + limits.FEISHU_TIMEOUT_S:
                return self._stop(task, "no frame from the server for %d s" % silent)
            try:
                await conn.send(encode(Frame(0, service, [["type", "ping"]])))
            except Closed:
                return self._stop(task, "ping failed")
            if await bus.wait_event(self.changed, self.ping_s):
                return self._stop(task, "settings changed")

    async def _data(self, conn, f, whole=True):
        """An event frame: joined with its other parts, ACKed, then acted on. whole:
        False when the frame was too long to take, its payload what big.py kept."""
        from mimi.channels.feishu.frame import encode

        if whole:
            payload = self._join(f)
        elif (f.get("sum") or "1") == "1":
            payload = (f.payload, self.long)
        else:  # one part of several too long on its own: no way to join it
            log.warning(TAG, "event %s dropped: one of its frames is over %d bytes",
                        f.get("message_id"), limits.FEISHU_FRAME_MAX)
            payload = (b"", 0)
        if payload is None:
            return  # more parts to come: the frame that completes the event is ACKed
        t0 = time.ticks_ms()
        act = ("ignore",)
        if f.get("type") == "event" and payload[0]:
            try:
                act = self._classify(jsonutil.loads(payload[0]), payload[1])
            except Exception as e:  # a malformed event must not end the session
                log.warning(TAG, "event not understood: %s", e)
        payload = None
        f.headers.append(["biz_rt", str(time.ticks_diff(time.ticks_ms(), t0))])
        f.payload = b'{"code":200}'
        await conn.send(encode(f))
        if act[0] != "ignore":
            try:
                await self._act(*act)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.exception(TAG, "handling an event failed", e)
            if self.api:
                self.api.close()

    def _join(self, f):
        """-> (payload, long) once the frame's event is whole: its bytes (long 0), or for
        one joined past FEISHU_PAYLOAD_MAX what big.Strings kept of it (long: the size of
        its longest text);
        None while frames are missing; (b"", 0) when it cannot be joined."""
        try:
            total = int(f.get("sum") or 1)
            seq = int(f.get("seq") or 0)
        except ValueError:
            return b"", 0
        if total <= 1:
            return f.payload, 0
        mid = f.get("message_id") or ""
        now = time.ticks_ms()
        for k in [k for k, v in self.parts.items() if time.ticks_diff(now, v[0]) > limits.FEISHU_PARTS_WAIT_S * 1000]:
            log.warning(TAG, "event %s dropped: its frames did not all arrive", k)
            del self.parts[k]
        if total > limits.FEISHU_PARTS or not 0 <= seq < total:
            return b"", 0
        entry = self.parts.get(mid)
        if entry is None:
            if len(self.parts) >= 2:
                self.parts.pop(next(iter(self.parts)))
            # [first seen, the parts kept (None: missing or passed on), big.Strings once
            # too long to keep, parts passed to it in order]
            entry = self.parts[mid] = [now, [None] * total, None, 0]
        entry[1][seq] = f.payload
        try:
            if entry[2] is None and sum(len(p) for p in entry[1] if p) > limits.FEISHU_PAYLOAD_MAX:
                from mimi import channels

                entry[2] = channels.load("feishu.big").Strings()
            if entry[2] is not None:  # the parts in order go through it, and are let go
                while entry[3] < total and entry[1][entry[3]] is not None:
                    entry[2](entry[1][entry[3]])
                    entry[1][entry[3]] = None
                    entry[3] += 1
                if sum(len(p) for p in entry[1] if p) > limits.FEISHU_PAYLOAD_MAX:
                    raise ValueError("its frames came out of order")
                if entry[3] < total:
                    return None
                del self.parts[mid]
                mimi.drop("channels.feishu.big")
                return entry[2].result(), entry[2].size
        except ValueError as e:
            del self.parts[mid]
            mimi.drop("channels.feishu.big")
            log.warning(TAG, "event %s dropped: over %d bytes, and %s", mid, limits.FEISHU_PAYLOAD_MAX, e)
            return b"", 0
        if None in entry[1]:
            return None
        del self.parts[mid]
        return b"".join(entry[1]), 0

    # ---------------------------------------------------------------- events
    def _classify(self, obj, long=0):
        """An event -> (action, chat_id, text, meta); nothing but RAM is touched. long:
        the size of the text of an event too long to take (left out)."""
        ignore = ("ignore",)
        if (obj.get("header") or {}).get("event_type") != EVENT:
            return ignore
        ev = obj.get("event") or {}
        msg = ev.get("message") or {}
        sender = ev.get("sender") or {}
        if sender.get("sender_type", "user") != "user":
            return ignore  # other bots and apps: no bot-to-bot loops
        mid = msg.get("message_id") or (obj.get("header") or {}).get("event_id")
        if not mid or mid in self.recent:
            log.info(TAG, "event for message %s seen before; dropped", mid)
            return ignore
        self.recent.append(mid)
        if len(self.recent) > limits.FEISHU_DEDUP:
            self.recent.pop(0)
        open_id = (sender.get("sender_id") or {}).get("open_id") or ""
        group = msg.get("chat_type") != "p2p"
        chat = msg.get("chat_id") if group else open_id
        if not isinstance(chat, str) or not chat:
            return ignore
        text = None
        if msg.get("message_type") == "text":
            try:
                text = jsonutil.loads(msg.get("content") or "").get("text")
            except (ValueError, AttributeError):
                pass
        mentions = msg.get("mentions") or []
        if group:
            ids = [((m.get("id") or {}).get("open_id")) for m in mentions if isinstance(m, dict)]
            if not self.bot_id or self.bot_id not in ids:
                return ignore  # a group is answered only when the bot is @-mentioned
        meta = {"message_id": mid, "group": group, "open_id": open_id}
        if chat not in cfg.get("feishu_allow").split(","):
            return ("stranger", chat, None, meta)
        if long:
            log.warning(TAG, "message %s from %s is %d bytes, too long to take", mid, chat, long)
            return ("too_long", chat, long, meta)
        if not isinstance(text, str):
            return ("text_only", chat, None, meta)
        for m in mentions:
            if isinstance(m, dict) and isinstance(m.get("key"), str):
                mine = (m.get("id") or {}).get("open_id") == self.bot_id
                text = text.replace(m["key"], "" if mine else "@" + str(m.get("name") or ""))
        text = text.strip()
        if text.lower() == "/usage":
            return ("usage", chat, None, meta)
        if text.lower().startswith("/chart"):
            return ("chart", chat, text, meta)
        return ("agent", chat, text, meta) if text else ignore

    async def _act(self, what, chat, text, meta):
        if what == "stranger":
            from mimi import channels

            if not channels.tell_again(self.strangers, chat, limits.FEISHU_STRANGER_S, limits.FEISHU_STRANGERS_MAX):
                return
            log.info(TAG, "message from %s, which is not in feishu_allow", chat)
            _tell(chat, STRANGER % (chat, chat))
        elif what == "text_only":
            _tell(chat, TEXT_ONLY)
        elif what == "too_long":
            _tell(chat, TOO_LONG % ((text + 512) // 1024, limits.FEISHU_FRAME_MAX // 1024))
        elif what == "usage":
            from mimi import channels

            _tell(chat, channels.usage_text())
        elif what == "chart":  # drawn and sent by the sender (channels/feishu/image.py)
            if not bus.outbound.put(bus.Msg(CHANNEL, chat, text, meta={"chart": text})):
                _tell(chat, BUSY)
        else:
            if meta["group"]:
                meta["sender"] = await self._name(meta["open_id"])
            if not bus.inbound.put(bus.Msg(CHANNEL, chat, text, meta=meta)):
                log.warning(TAG, "inbound queue full; %s told to retry", chat)
                _tell(chat, BUSY)

    async def _name(self, open_id):
        """A group member's display name (contact API; remembered). Without the
        contact permission: "user-" and the end of the open_id."""
        name = self.names.get(open_id)
        if name is None:
            try:
                obj = await self._api().call("GET", USER % open_id)
                name = ((obj.get("data") or {}).get("user") or {}).get("name")
            except Exception as e:  # noqa: B902 - a name is a nicety: never lose the message
                log.info(TAG, "no name for %s (%s); the app needs contact:user.base:readonly", open_id, e)
            if not isinstance(name, str) or not name.strip():
                name = "user-" + open_id[-6:]
            if len(self.names) >= limits.FEISHU_NAMES_MAX:
                self.names.pop(next(iter(self.names)))
            self.names[open_id] = name
        return name

    # ---------------------------------------------------------------- sending
    async def _online(self):
        if not wifi.online():
            if self.api:
                self.api.close()
            await wifi.wait_online()

    async def _post(self, path, body, hold):
        """One message (channels/sending.py: retries that cannot duplicate; hold keeps a
        reply through an outage); raises the last error."""
        from mimi.channels import sending

        return await sending.deliver(lambda: self._api().call("POST", path, body), _refused, hold, TAG,
                                     self._online, self._lost)

    def _lost(self):
        if self.api:
            self.api.close()

    async def send_text(self, rid, md, hold=False):
        """Markdown -> messages to `rid` (an open_id or a chat_id), in order. A part
        Feishu refuses as rich text goes again as plain text; other failures are
        logged, never re-sent, and the chat told once after the last part which were
        refused for good (unless it cannot be reached: GONE). No room in the heap: raised while nothing went (the
        dispatcher makes room and sends it again), else the rest is not sent and the
        chat told so. -> True when every part went out."""
        from mimi.channels.feishu import format as fmt

        if not (cfg.get("feishu_app_id") and cfg.get("feishu_app_secret")):
            log.warning(TAG, "no Feishu app configured; message to %s dropped", rid)
            return False
        path = MESSAGES + ("chat_id" if rid.startswith("oc_") else "open_id")
        ok = True
        went = n = 0  # parts out, made
        lost, why = [], None  # parts refused for good, the first reason
        try:
            if isinstance(md, tuple):  # a long answer in pieces (bus.pieces()): this formatter
                md = "".join(md)  # takes the text whole
            for part in fmt.split(md or "", limits.FEISHU_MSG_MAX):
                n += 1
                how = fmt.kind(part)
                while True:
                    body = json.dumps({"receive_id": rid, "msg_type": how, "content": fmt.content(part, how)}).encode()
                    if how != fmt.TEXT and len(body) > limits.FEISHU_RICH_MAX:
                        how = fmt.TEXT
                        continue
                    c = self.api and self.api.client
                    if c and c._buf:  # (what it says of the previous message: Api.call() too)
                        c._buf.sent = False
                    c = None
                    try:
                        await self._post(path, body, hold)
                        went += 1
                    except ApiError as e:
                        if how != fmt.TEXT and e.code in RICH_REFUSED:
                            log.warning(TAG, "Feishu refused the %s message (%s); sending plain text", how, e)
                            how = fmt.TEXT
                            continue
                        log.error(TAG, "sending to %s failed: %s", rid, e)
                        ok = False
                        if not (e.status == 403 or e.code in GONE):
                            lost.append(n)
                            why = why or e.msg
                    except MemoryError:
                        c = self.api and self.api.client
                        if not (c and c._buf and c._buf.sent):
                            raise  # it did not go
                        went += 1  # it went; its answer found no room (not sent again)
                        log.warning(TAG, "a message to %s went; no room in the heap to read the answer", rid)
                    except Exception as e:
                        log.error(TAG, "sending to %s failed: %s %s", rid, type(e).__name__, e)
                        ok = False
                    break
        except MemoryError:
            if not went:
                raise  # nothing of it went out: the dispatcher makes room and tries again
            md = part = body = None  # part of it went: sent again, it would repeat that
            log.error(TAG, "no room in the heap for the rest of a message to %s", rid)
            await self._say(path, rid, NO_ROOM)
            return False
        if lost:  # the chat is told, once, that its reply has a hole
            from mimi.channels import sending

            await self._say(path, rid, sending.missing(lost, n, why))
        return ok

    async def _say(self, path, rid, text):
        """A line of ours about a message, as plain text, not held through an outage."""
        from mimi.channels.feishu import format as fmt

        try:
            await self._post(path, json.dumps({"receive_id": rid, "msg_type": fmt.TEXT,
                                               "content": fmt.content(text, fmt.TEXT)}).encode(), False)
        except Exception as e:
            log.error(TAG, "telling %s failed: %s %s", rid, type(e).__name__, e)

    async def send(self, msg):
        """The dispatcher's sender. Feishu shows bots no typing: statuses are dropped."""
        if msg.kind != bus.REPLY:
            return
        if msg.meta is not _OURS and msg.chat_id not in cfg.get("feishu_allow").split(","):
            log.error(TAG, "not sent to %s, which is not in feishu_allow: %s", msg.chat_id, bus.pieces(msg.content)[0][:60])
            return
        if isinstance(msg.meta, dict) and "chart" in msg.meta:  # /chart, or the agent's device_history
            from mimi import channels

            await channels.load("feishu.image").chart(self, msg.chat_id, msg.meta["chart"])
        else:  # hold: an outage delays the reply (the lane keeps the ones behind it), never drops it
            await self.send_text(msg.chat_id, msg.content, hold=True)
        if self.api:
            self.api.close()  # one TLS session at rest: the long connection's


bot = None


def install():
    """Create the channel (once)."""
    global bot
    if bot is None:
        bot = Feishu()
    return bot


def run():
    """The long-connection task (started by dispatch.start())."""
    return install().run()


async def send(msg):
    """The dispatcher's sender (registered by dispatch.start())."""
    await install().send(msg)
