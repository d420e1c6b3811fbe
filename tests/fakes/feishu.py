"""Fake Feishu / Lark open platform for tests (CPython), on 127.0.0.1.

What the firmware talks to, in Feishu's real wire formats:
  POST /callback/ws/endpoint   {"AppID","AppSecret"} -> {"code":0,"msg":"ok","data":{"URL":
        "ws://127.0.0.1:P/ws/v2?device_id=..&service_id=..&ticket=..","ClientConfig":{
        "ReconnectCount":-1,"ReconnectInterval":..,"ReconnectNonce":..,"PingInterval":..}}}
        (configure(long_connection=False): HTTP 404 with an HTML page, as a tenant without it)
  the long connection: a real WebSocket (the `websockets` library) carrying protobuf
        pbbp2.Frames (encoded here independently of the firmware): event frames (method
        1, headers type=event, message_id, sum, seq, trace_id), answered by the client's
        ACK (the same frame with payload {"code":200} and a biz_rt header); the client's
        ping control frames (method 0, type=ping) answered with a pong carrying the
        ClientConfig. The library itself pings at the RFC 6455 level too. With
        configure(redeliver=True) the frames of an event not ACKed are sent again when the
        client connects anew, as Feishu does.
  POST /open-apis/auth/v3/tenant_access_token/internal -> {"code":0,"msg":"ok",
        "tenant_access_token":"t-..","expire":N} (10014 for a wrong secret)
  GET  /open-apis/bot/v3/info -> {"code":0,"msg":"ok","bot":{..,"open_id":BOT}}
  GET  /open-apis/contact/v3/users/<open_id>?user_id_type=open_id -> data.user.name
        (99991672 "Access denied" without the permission: configure(names=None))
  POST /open-apis/im/v1/messages?receive_id_type=open_id|chat_id -> data.message_id;
        tokens checked (99991661 missing, 99991663 invalid or expired), content checked
        per msg_type (text, post, interactive; 230001 when malformed), 230025 over the
        size caps (text 150 KB, post/card 30 KB), rate limits injected with fail():
        HTTP 429 + code 99991400 + x-ogw-ratelimit-reset, or 230020; msg_type image with
        the image_key of an upload
  POST /open-apis/im/v1/images  multipart/form-data (RFC 7578): image_type=message and
        the image file -> data.image_key (kept in .images); configure(image_scope=False):
        99991672 "Access denied", as an app without im:resource

In-process helpers (the Service object): event(...), state(), wait(pred), fail(...),
configure(...), drop() (the server closes the long connection), expire_tokens().
The same over HTTP for MicroPython tests: POST /_control/{event,fail,config,drop,expire},
GET /_control/state; GET /_control/bad-accept answers an upgrade with a wrong accept key.
"""
import asyncio
import json
import secrets
import threading
import time
from urllib.parse import parse_qs, urlsplit

from fakes.httpserver import Reply, Server

APP_ID = "cli_a1b2c3d4e5f60718"
APP_SECRET = "fakeSecretForTestsOnly0123456789"
BOT_OPEN_ID = "ou_b0770000000000000000000000000001"
TENANT = "2ca1d211f64f6438"
TEXT_MAX = 150 * 1024
RICH_MAX = 30 * 1024
POST_TAGS = {"text": ("text",), "a": ("text", "href"), "at": ("user_id",), "img": ("image_key",),
             "media": ("file_key",), "emotion": ("emoji_type",), "hr": (), "code_block": ("text",),
             "md": ("text",)}


# --- pbbp2.Frame (protobuf), written for the fake -------------------------------
def _uvarint(n):
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _ld(num, data):
    if isinstance(data, str):
        data = data.encode()
    return _uvarint(num << 3 | 2) + _uvarint(len(data)) + data


def encode_frame(f):
    """{"SeqID","LogID","service","method","headers":[(k,v)],"payload"} -> bytes."""
    out = b""
    for num, name in ((1, "SeqID"), (2, "LogID"), (3, "service"), (4, "method")):
        out += _uvarint(num << 3) + _uvarint(f.get(name, 0))
    for k, v in f.get("headers", ()):
        out += _ld(5, _ld(1, k) + _ld(2, v))
    if f.get("payload") is not None:
        out += _ld(8, f["payload"])
    return out


def _read_uvarint(b, i):
    n = shift = 0
    while True:
        c = b[i]
        i += 1
        n |= (c & 0x7F) << shift
        if c < 0x80:
            return n, i
        shift += 7


def _message(b):
    i = 0
    while i < len(b):
        key, i = _read_uvarint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _read_uvarint(b, i)
        elif wt == 2:
            n, i = _read_uvarint(b, i)
            v, i = b[i:i + n], i + n
            if len(v) != n:
                raise ValueError("truncated")
        else:
            raise ValueError("wire type %d" % wt)
        yield num, wt, v


def decode_frame(b):
    f = {"headers": [], "payload": None, "fields": []}
    for num, wt, v in _message(b):
        f["fields"].append(num)
        if num in (1, 2, 3, 4) and wt == 0:
            f[{1: "SeqID", 2: "LogID", 3: "service", 4: "method"}[num]] = v
        elif num == 5 and wt == 2:
            kv = dict((n, x.decode()) for n, _, x in _message(v))
            f["headers"].append((kv.get(1, ""), kv.get(2, "")))
        elif num == 8 and wt == 2:
            f["payload"] = bytes(v)
    for name in ("SeqID", "LogID", "service", "method"):
        if name not in f:
            raise ValueError("required field %s missing" % name)
    return f


def header(f, key):
    for k, v in f["headers"]:
        if k == key:
            return v
    return None


# --- the fake -----------------------------------------------------------------------
def _err(code, msg, status=400, headers=None):
    return Reply(status, {"code": code, "msg": msg}, headers)


class FakeFeishu:
    def __init__(self):
        self.lock = threading.Condition()
        self.service_id = 33554678
        self.reset()

    def reset(self):
        with self.lock:
            self.sent = []  # messages the bot sent (parsed)
            self.acks = []  # the client's answers to event frames
            self.pings = 0
            self.connections = 0  # WebSocket connections accepted
            self.open = 0  # currently open
            self.endpoint_calls = 0
            self.token_calls = 0
            self.events = []  # frames pushed: {"message_id", "frame_ids"}
            self.violations = []
            self.calls = []  # every API call: (method, path, code)
            self.tokens = {}  # token -> expiry (time.time())
            self.tickets = set()
            self.failures = []
            self.token_ttl = 7200
            self.ping_interval = 120
            self.reconnect_nonce = 0
            self.long_connection = True
            self.names = {}  # open_id -> display name; None: no contact permission
            self.images = {}  # image_key -> the PNG bytes uploaded
            self.image_scope = True  # False: the app lacks im:resource (uploads refused)
            self.seq = 0
            self.redeliver = False  # events not ACKed are sent again on the next connection
            self.unacked = {}  # frame message id -> its frames (while redeliver is on)
            self.redelivered = 0

    def configure(self, **kw):
        with self.lock:
            for k, v in kw.items():
                if not hasattr(self, k):
                    raise KeyError(k)
                setattr(self, k, v)

    def violation(self, what):
        with self.lock:
            self.violations.append(what)

    def fail(self, path="messages", status=429, code=99991400, msg="request trigger frequency limit",
             reset=None, times=1, if_msg_type=None, after=0):
        with self.lock:
            self.failures.append({"path": path, "status": status, "code": code, "msg": msg,
                                  "reset": reset, "times": times, "if_msg_type": if_msg_type, "after": after})

    def _injected(self, path, msg_type=None):
        with self.lock:
            for f in self.failures:
                if f["path"] in path and f["times"] > 0 and f["if_msg_type"] in (None, msg_type):
                    if f["after"] > 0:  # the first message(s) it matches pass
                        f["after"] -= 1
                        continue
                    f["times"] -= 1
                    h = {"x-ogw-ratelimit-limit": "50", "x-ogw-ratelimit-reset": str(f["reset"])} \
                        if f["reset"] is not None else None
                    return _err(f["code"], f["msg"], f["status"], h)
        return None

    def expire_tokens(self):
        with self.lock:
            self.tokens.clear()

    def state(self):
        with self.lock:
            return json.loads(json.dumps({
                "sent": self.sent, "acks": self.acks, "pings": self.pings,
                "connections": self.connections, "open": self.open,
                "endpoint_calls": self.endpoint_calls, "token_calls": self.token_calls,
                "redelivered": self.redelivered,
                "events": self.events, "violations": self.violations, "calls": self.calls}))

    def wait(self, pred, timeout=30.0):
        """Block until pred(state) holds (a guard against hangs, not a timing check)."""
        end = time.time() + timeout
        while True:
            st = self.state()
            if pred(st):
                return st
            if time.time() > end:
                raise AssertionError("fake Feishu: condition not met; state: %s" % json.dumps(st)[:4000])
            time.sleep(0.05)

    # --- HTTP API ----------------------------------------------------------------
    def _log(self, req, code):
        with self.lock:
            self.calls.append((req.method, req.path, code))

    def endpoint(self, req):
        with self.lock:
            self.endpoint_calls += 1
        if not self.long_connection:
            self._log(req, 404)
            return Reply(404, "<html><body><h1>404 Not Found</h1></body></html>",
                         {"Content-Type": "text/html"})
        try:
            body = req.json()
        except ValueError:
            body = None
        if not isinstance(body, dict) or body.get("AppID") != APP_ID or body.get("AppSecret") != APP_SECRET:
            self._log(req, 1000040344)
            return Reply(200, {"code": 1000040344, "msg": "invalid app_id or app_secret", "data": {}})
        ticket = secrets.token_hex(8)
        with self.lock:
            self.tickets.add(ticket)
        url = "ws://127.0.0.1:%d/ws/v2?fpid=493&aid=552564&device_id=%s&access_key=%s&service_id=%d&ticket=%s" % (
            self.ws_port, secrets.token_hex(6), secrets.token_hex(8), self.service_id, ticket)
        self._log(req, 0)
        return {"code": 0, "msg": "ok", "data": {"URL": url, "ClientConfig": {
            "ReconnectCount": -1, "ReconnectInterval": 120, "ReconnectNonce": self.reconnect_nonce,
            "PingInterval": self.ping_interval}}}

    def token(self, req):
        with self.lock:
            self.token_calls += 1
        body = req.json() if req.body else {}
        if body.get("app_id") != APP_ID:
            self._log(req, 10003)
            return _err(10003, "invalid param")
        if body.get("app_secret") != APP_SECRET:
            self._log(req, 10014)
            return _err(10014, "app secret invalid")
        t = "t-" + secrets.token_hex(20)
        with self.lock:
            self.tokens[t] = time.time() + self.token_ttl
        self._log(req, 0)
        return {"code": 0, "msg": "ok", "tenant_access_token": t, "expire": self.token_ttl}

    def _auth(self, req):
        auth = req.headers.get("authorization", "")
        if not auth.startswith("Bearer "):
            return _err(99991661, "Missing access token for authorization. Please make a request with token attached.")
        with self.lock:
            until = self.tokens.get(auth[7:])
        if until is None or until < time.time():
            return _err(99991663, "Invalid access token for authorization. Please make a request with token attached.")
        return None

    def bot_info(self, req):
        bad = self._auth(req)
        self._log(req, 0 if bad is None else bad.status)
        return bad or {"code": 0, "msg": "ok", "bot": {
            "activate_status": 2, "app_name": "MimiClaw Test", "avatar_url": "",
            "ip_white_list": [], "open_id": BOT_OPEN_ID}}

    def user(self, req):
        bad = self._auth(req)
        if bad:
            return bad
        if req.query.get("user_id_type") != "open_id":
            return _err(99992402, "field validation failed")
        oid = req.path.rsplit("/", 1)[1]
        with self.lock:
            names = self.names
        if names is None:
            return _err(99991672, "Access denied. One of the following scopes is required: "
                                  "[contact:user.base:readonly, contact:contact:readonly_as_app]", 400)
        if oid not in names:
            return _err(41050, "no user authority error")
        return {"code": 0, "msg": "success", "data": {"user": {"open_id": oid, "name": names[oid]}}}

    def upload_image(self, req):
        """POST /open-apis/im/v1/images: multipart/form-data with image_type and image."""
        from fakes import multipart

        bad = self._auth(req)
        if bad:
            self._log(req, json.loads(bad.body)["code"])
            return bad
        if not self.image_scope:
            self._log(req, 99991672)
            return _err(99991672, "Access denied. One of the following scopes is required: "
                                  "[im:resource, im:resource:upload]. ", 400)
        try:
            form = multipart.parse(req.headers.get("content-type"), req.body)
            if form["image_type"]["value"] not in (b"message", b"avatar"):
                raise multipart.Malformed("image_type %r" % form["image_type"]["value"])
            data = form["image"]["value"]
            if form["image"]["filename"] is None:
                raise multipart.Malformed("image is not a file part")
            multipart.png_size(data)
        except (KeyError, multipart.Malformed) as e:
            self.violation("image upload: %s" % e)
            self._log(req, 234001)
            return _err(234001, "Invalid request param.")
        key = "img_v3_" + secrets.token_hex(12)
        with self.lock:
            self.images[key] = data
        self._log(req, 0)
        return {"code": 0, "msg": "success", "data": {"image_key": key}}

    def messages(self, req):
        bad = self._auth(req)
        if bad:
            self._log(req, json.loads(bad.body)["code"])
            return bad
        rtype = req.query.get("receive_id_type")
        try:
            body = req.json()
        except ValueError:
            return _err(230001, "Your request contains an invalid request parameter, ext=body is not JSON")
        if not isinstance(body, dict):
            return _err(230001, "Your request contains an invalid request parameter, ext=body")
        msg_type = body.get("msg_type")
        injected = self._injected("messages", msg_type)
        if injected:
            self._log(req, json.loads(injected.body)["code"])
            return injected
        rid = body.get("receive_id")
        prefix = {"open_id": "ou_", "chat_id": "oc_"}.get(rtype)
        if prefix is None or not isinstance(rid, str) or not rid.startswith(prefix):
            self.violation("receive_id %r does not fit receive_id_type %r" % (rid, rtype))
            return _err(230001, "Your request contains an invalid request parameter, ext=invalid receive_id")
        limit = TEXT_MAX if msg_type == "text" else RICH_MAX
        if len(req.body) > limit:
            self._log(req, 230025)
            return _err(230025, "The length of the message content reaches its limit.")
        try:
            content = json.loads(body.get("content"))
            visible = _visible(msg_type, content, self.images)
        except (TypeError, ValueError, KeyError) as e:
            self.violation("bad %s content: %s" % (msg_type, e))
            self._log(req, 230001)
            return _err(230001, "Your request contains an invalid request parameter, ext=invalid message content. "
                                "validate content fail.")
        mid = "om_" + secrets.token_hex(16)
        with self.lock:
            self.sent.append({"receive_id": rid, "receive_id_type": rtype, "msg_type": msg_type,
                              "content": content, "visible": visible, "message_id": mid,
                              "t": time.time()})
        self._log(req, 0)
        return {"code": 0, "msg": "success", "data": {
            "message_id": mid, "msg_type": msg_type, "chat_id": rid if rtype == "chat_id" else "oc_p2p",
            "create_time": str(int(time.time() * 1000)), "deleted": False, "updated": False,
            "sender": {"id": APP_ID, "id_type": "app_id", "sender_type": "app",
                       "tenant_key": TENANT}, "body": {"content": body.get("content")}}}

    # --- the long connection ---------------------------------------------------------
    def event_payload(self, text=None, chat_type="p2p", open_id="ou_aa11", chat_id=None,
                      message_type="text", mentions=(), message_id=None, sender_type="user",
                      content=None):
        mid = message_id or "om_" + secrets.token_hex(16)
        if content is None:
            content = json.dumps({"text": text}, ensure_ascii=False) if message_type == "text" else \
                json.dumps({"image_key": "img_v2_041b"})
        msg = {"message_id": mid, "root_id": "", "parent_id": "",
               "create_time": str(int(time.time() * 1000)), "update_time": str(int(time.time() * 1000)),
               "chat_id": chat_id or "oc_p2p" + open_id[3:], "chat_type": chat_type,
               "message_type": message_type, "content": content, "user_agent": "Mozilla/5.0"}
        if mentions:
            msg["mentions"] = [{"key": key, "id": {"union_id": "on_" + oid[3:], "user_id": "u" + oid[-4:],
                                                   "open_id": oid}, "name": name, "tenant_key": TENANT}
                               for key, oid, name in mentions]
        return mid, {"schema": "2.0", "header": {
            "event_id": secrets.token_hex(16), "event_type": "im.message.receive_v1",
            "create_time": str(int(time.time() * 1000)), "token": "", "app_id": APP_ID,
            "tenant_key": TENANT}, "event": {"sender": {
                "sender_id": {"union_id": "on_" + open_id[3:], "user_id": "u" + open_id[-4:],
                              "open_id": open_id},
                "sender_type": sender_type, "tenant_key": TENANT}, "message": msg}}

    def push(self, payload, parts=1, frame_type="event"):
        """Send an event payload (a dict or bytes) over the open long connection,
        split into `parts` frames. -> the frame message id."""
        data = payload if isinstance(payload, bytes) else json.dumps(payload, ensure_ascii=False).encode()
        fid = secrets.token_hex(8)
        trace = secrets.token_hex(8)
        size = -(-len(data) // parts)
        frames = []
        with self.lock:
            for i in range(parts):
                self.seq += 1
                frames.append(encode_frame({
                    "SeqID": self.seq, "LogID": 7000000000 + self.seq, "service": self.service_id,
                    "method": 1, "headers": [("type", frame_type), ("message_id", fid),
                                             ("sum", str(parts)), ("seq", str(i)), ("trace_id", trace)],
                    "payload": data[i * size:(i + 1) * size]}))
            self.events.append({"frame_id": fid, "parts": parts})
            if self.redeliver:
                self.unacked[fid] = frames
        ws = self.ws
        if ws is None:
            raise AssertionError("no long connection is open")
        for f in frames:
            try:
                asyncio.run_coroutine_threadsafe(ws.send(f), self.loop).result(10)
            except Exception:  # noqa: BLE001 - the client dropped the connection: redelivered
                if not self.redeliver:
                    raise
        return fid

    def event(self, *args, parts=1, **kw):
        """A message event pushed to the client -> its message_id (om_...)."""
        mid, payload = self.event_payload(*args, **kw)
        self.push(payload, parts)
        return mid

    def drop(self, code=1000):
        """The server ends the long connection (as Feishu does when it moves a client)."""
        ws = self.ws
        if ws is not None:
            asyncio.run_coroutine_threadsafe(ws.close(code), self.loop).result(10)

    async def _ws_handler(self, ws):
        q = parse_qs(urlsplit(ws.request.path).query)
        with self.lock:
            self.connections += 1
            self.open += 1
            self.ws = ws
            again = [f for frames in self.unacked.values() for f in frames]
            self.redelivered += len(again)
        try:
            for f in again:  # as Feishu does after a reconnect
                await ws.send(f)
            async for msg in ws:
                if not isinstance(msg, bytes):
                    self.violation("text WebSocket message from the client: %r" % msg[:80])
                    continue
                try:
                    f = decode_frame(msg)
                except (ValueError, IndexError, UnicodeError) as e:
                    self.violation("undecodable frame: %s" % e)
                    continue
                if f["service"] != int(q["service_id"][0]):
                    self.violation("frame for service %r" % f["service"])
                if f["method"] == 0:
                    if header(f, "type") != "ping":
                        self.violation("control frame of type %r" % header(f, "type"))
                        continue
                    with self.lock:
                        self.pings += 1
                        conf = {"ReconnectCount": -1, "ReconnectInterval": 120,
                                "ReconnectNonce": self.reconnect_nonce, "PingInterval": self.ping_interval}
                    await ws.send(encode_frame({"SeqID": 0, "LogID": 0, "service": f["service"], "method": 0,
                                                "headers": [("type", "pong")],
                                                "payload": json.dumps(conf).encode()}))
                elif f["method"] == 1:
                    try:
                        answer = json.loads(f["payload"] or b"null")
                    except ValueError:
                        answer = None
                    if not isinstance(answer, dict) or answer.get("code") != 200:
                        self.violation("ACK payload %r" % f["payload"])
                    if header(f, "biz_rt") is None or not header(f, "biz_rt").isdigit():
                        self.violation("ACK without biz_rt")
                    with self.lock:
                        self.unacked.pop(header(f, "message_id"), None)
                        self.acks.append({"frame_id": header(f, "message_id"), "seq": header(f, "seq"),
                                          "SeqID": f["SeqID"], "LogID": f["LogID"], "code": (answer or {}).get("code"),
                                          "type": header(f, "type")})
                else:
                    self.violation("frame method %r" % f["method"])
        except Exception:  # noqa: BLE001 - the connection went away
            pass
        finally:
            with self.lock:
                self.open -= 1
                if self.ws is ws:
                    self.ws = None

    def _ws_request(self, connection, request):
        q = parse_qs(urlsplit(request.path).query)
        ticket = (q.get("ticket") or [""])[0]
        with self.lock:
            ok = urlsplit(request.path).path == "/ws/v2" and ticket in self.tickets
            self.tickets.discard(ticket)
        if not ok:
            r = connection.respond(403, "forbidden\n")
            r.headers["handshake-status"] = "403"
            r.headers["handshake-msg"] = "invalid ticket"
            return r
        return None

    def start_ws(self):
        from websockets.asyncio.server import serve

        self.ws = None
        ready = threading.Event()

        async def main():
            self.stopping = asyncio.Event()
            async with serve(self._ws_handler, "127.0.0.1", 0, process_request=self._ws_request,
                             ping_interval=5, ping_timeout=20, max_size=1 << 20) as server:
                self.ws_port = server.sockets[0].getsockname()[1]
                ready.set()
                await self.stopping.wait()

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(main(),), daemon=True)
        self.thread.start()
        ready.wait(10)

    def stop_ws(self):
        self.loop.call_soon_threadsafe(self.stopping.set)
        self.thread.join(10)


def _visible(msg_type, c, images=()):
    """The text a person sees (markdown as written); ValueError when malformed."""
    if msg_type == "image":
        if c.get("image_key") not in images:
            raise ValueError("image_key %r was not uploaded" % c.get("image_key"))
        return "[image %s]" % c["image_key"]
    if msg_type == "text":
        if not isinstance(c.get("text"), str):
            raise ValueError("text content needs a string 'text'")
        return c["text"]
    if msg_type == "post":
        langs = [v for k, v in c.items() if k in ("zh_cn", "en_us", "ja_jp")]
        if not langs or len(langs) != len(c):
            raise ValueError("post needs a language key (zh_cn, en_us, ja_jp)")
        out = []
        for para in langs[0]["content"]:
            if not isinstance(para, list):
                raise ValueError("a post paragraph is a list")
            for el in para:
                need = POST_TAGS.get(el.get("tag"))
                if need is None or any(not isinstance(el.get(k), str) for k in need):
                    raise ValueError("bad post element %r" % el)
                out.append(el.get("text", ""))
        return "\n".join(out)
    if msg_type == "interactive":
        body = c["body"] if c.get("schema") == "2.0" else c
        els = body["elements"]
        if not isinstance(els, list) or not els:
            raise ValueError("card without elements")
        out = []
        for el in els:
            if el.get("tag") == "markdown":
                if not isinstance(el.get("content"), str):
                    raise ValueError("markdown element without content")
                out.append(el["content"])
        return "\n".join(out)
    raise ValueError("msg_type %r is not supported here" % msg_type)


class Service(dict):
    """What the fake_feishu fixture returns: JSON-able {base_url, app_id, app_secret,
    bot_open_id, control} plus the FakeFeishu's helpers."""

    def __init__(self):
        self.fake = fake = FakeFeishu()
        fake.start_ws()
        self.http = srv = Server()
        srv.route("POST", "/callback/ws/endpoint", fake.endpoint)
        srv.route("POST", "/open-apis/auth/v3/tenant_access_token/internal", fake.token)
        srv.route("GET", "/open-apis/bot/v3/info", fake.bot_info)
        srv.route("GET", "/open-apis/contact/v3/users/*", fake.user)
        srv.route("POST", "/open-apis/im/v1/messages", fake.messages)
        srv.route("POST", "/open-apis/im/v1/images", fake.upload_image)
        srv.route("GET", "/_control/state", lambda req: fake.state())
        srv.route("POST", "/_control/event", lambda req: {"message_id": fake.event(**req.json())})
        srv.route("POST", "/_control/push", lambda req: {"frame_id": fake.push(**req.json())})
        srv.route("POST", "/_control/fail", lambda req: fake.fail(**req.json()) or {})
        srv.route("POST", "/_control/config", lambda req: fake.configure(**req.json()) or {})
        srv.route("POST", "/_control/drop", lambda req: fake.drop() or {})
        srv.route("POST", "/_control/expire", lambda req: fake.expire_tokens() or {})
        # a server that switches protocols with a wrong Sec-WebSocket-Accept (client checks)
        srv.route("GET", "/_control/bad-accept", lambda req: Reply(101, b"", {
            "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Accept": "AAAAAAAAAAAAAAAAAAAAAAAAAAA="}))
        srv.start()
        url = "http://127.0.0.1:%d" % srv.port
        super().__init__(base_url=url, app_id=APP_ID, app_secret=APP_SECRET, bot_open_id=BOT_OPEN_ID,
                         control=url + "/_control")

    def __getattr__(self, name):
        return getattr(self.fake, name)

    def close(self):
        self.http.stop()
        self.fake.stop_ws()


def start():
    return Service()
