"""Fake Telegram Bot API for tests (CPython), at {base}/bot<token>/<method>.

Real JSON shapes for getMe, getUpdates (long poll honouring `timeout`, `offset`
confirming updates, `limit`, `allowed_updates`; a second getUpdates ends a waiting
one with 409 as Telegram does), sendMessage (parse_mode HTML checked like Telegram:
unknown or unbalanced tags -> 400 "Bad Request: can't parse entities: ...", text over
4096 UTF-16 units after entity parsing -> 400 "Bad Request: message is too long") and
sendChatAction, sendPhoto (a file uploaded as multipart/form-data, RFC 7578: kept in
.photos), editMessageText (the bot's own messages: text checked like sendMessage;
400 "message is not modified" for the same text, "message to edit not found") and
deleteMessage. Everything the bot sends is recorded; an edit changes the recorded
message ("edits" counts them) and a deletion marks it "deleted". Flood control as
Telegram's: after a 429 with retry_after for a chat, every call for that chat is
refused (429, the time left) until it has passed, and recorded as a violation
(configure flood_control=False: not enforced).

Scripting, in-process (tests) or over HTTP (MicroPython tests, the simulator):
  POST /_control/update  one or a list of update specs -> {"update_ids": [...]}
      {"chat_id": 42, "text": "hi"}                      private text message
      {"chat_id": -100, "chat_type": "group", "text": "@mimi_test_bot hi",
       "from_id": 7, "reply_to_bot": true}               group message
      {"chat_id": 42, "kind": "photo"|"sticker"|"voice"|"edited", "text": ".."}
      {"chat_id": 42, "text": "z", "repeat": 100000}      text repeated (big updates)
      {"raw": {...}}                                      an update body as is
  POST /_control/fail    {"method": "sendMessage", "status": 400|409|429|502,
                          "description": "..", "retry_after": 1, "times": 1,
                          "delay_s": 0, "if_parse_mode": true, "after": 1 (the first
                          call(s) it matches pass),
                          "body": "not JSON" (sent as is with the status),
                          "cut": true (the answer's length announced, half sent, closed)}
  POST /_control/config  {"ensure_ascii": true, "max_poll_s": 30, "username": "..", "flood_control": true,
                          "retain": false (true: confirmed updates are kept and sent again
                          to a getUpdates with an older offset, as if a bot lost its offset)}
  POST /_control/reset
  GET  /_control/state   {"sent", "actions", "calls", "pending", "offset",
                          "violations", "connections", "edits", "deleted"}
JSON goes out compact, as the Bot API sends it ({"ok":true,"result":[]}), and with
ensure_ascii (emoji as "\\ud83d\\ude00" surrogate pairs) unless configured otherwise,
which is legal JSON that MicroPython's json decodes badly.
"""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

TOKEN = "123456789:AAfakeTokenForTestsOnly_abcdefghij"
BOT_ID = 123456789
USERNAME = "mimi_test_bot"
MAX_LEN = 4096
UPDATE_TYPES = ("message", "edited_message", "channel_post", "edited_channel_post",
                "callback_query", "inline_query", "my_chat_member", "chat_member")
CHAT_ACTIONS = ("typing", "upload_photo", "record_video", "upload_video", "record_voice",
                "upload_voice", "upload_document", "choose_sticker", "find_location",
                "record_video_note", "upload_video_note")


def u16len(s):
    return len(s.encode("utf-16-le")) // 2


# --- Telegram's HTML parse mode --------------------------------------------------
class EntityError(ValueError):
    pass


_TAGS = {"b": "bold", "strong": "bold", "i": "italic", "em": "italic", "u": "underline",
         "ins": "underline", "s": "strikethrough", "strike": "strikethrough",
         "del": "strikethrough", "tg-spoiler": "spoiler", "span": "spoiler",
         "a": "text_link", "code": "code", "pre": "pre", "blockquote": "blockquote",
         "tg-emoji": "custom_emoji"}
_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}
_FORMAT = ("bold", "italic", "underline", "strikethrough", "spoiler")


def _attrs(raw, offset):
    out = {}
    i = 0
    while i < len(raw):
        while i < len(raw) and raw[i].isspace():
            i += 1
        if i >= len(raw):
            break
        j = i
        while j < len(raw) and (raw[j].isalnum() or raw[j] in "-_"):
            j += 1
        name = raw[i:j].lower()
        if not name:
            raise EntityError("Expected equal sign in declaration of an attribute of the "
                              "start tag at byte offset %d" % offset)
        i = j
        value = ""
        if i < len(raw) and raw[i] == "=":
            i += 1
            if i < len(raw) and raw[i] in "\"'":
                q = raw[i]
                k = raw.find(q, i + 1)
                if k < 0:
                    raise EntityError("Unclosed start tag at byte offset %d" % offset)
                value = raw[i + 1:k]
                i = k + 1
            else:
                k = i
                while k < len(raw) and not raw[k].isspace():
                    k += 1
                value = raw[i:k]
                i = k
        out[name] = _unescape(value)
    return out


def _unescape(s):
    out = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "&":
            k = s.find(";", i + 1, i + 12)
            if k > 0:
                name = s[i + 1:k]
                if name in _NAMED:
                    out.append(_NAMED[name])
                    i = k + 1
                    continue
                if name[:1] == "#":
                    try:
                        n = int(name[2:], 16) if name[1:2] in ("x", "X") else int(name[1:])
                        out.append(chr(n))
                        i = k + 1
                        continue
                    except ValueError:
                        pass
        out.append(c)
        i += 1
    return "".join(out)


def parse_html(text):
    """Telegram's HTML parse mode: (visible text, entities) or EntityError."""
    out = []
    stack = []  # (tag, kind, attrs, start_u16)
    entities = []
    pos = 0
    size = 0
    bpos = lambda i: len(text[:i].encode("utf-8"))  # noqa: E731 - offsets are in bytes
    while pos < len(text):
        lt = text.find("<", pos)
        chunk = text[pos:] if lt < 0 else text[pos:lt]
        if chunk:
            vis = _unescape(chunk)
            out.append(vis)
            size += u16len(vis)
        if lt < 0:
            break
        gt = text.find(">", lt)
        if gt < 0:
            raise EntityError("Unclosed start tag at byte offset %d" % bpos(lt))
        inner = text[lt + 1:gt]
        if inner.startswith("/"):
            name = inner[1:].strip().lower()
            if not stack:
                raise EntityError('Unexpected end tag at byte offset %d' % bpos(lt))
            top = stack.pop()
            if top[0] != name:
                raise EntityError('Unmatched end tag at byte offset %d, expected "</%s>", found '
                                  '"</%s>"' % (bpos(lt), top[0], name))
            ent = {"type": top[1], "offset": top[3], "length": size - top[3]}
            if top[1] == "text_link":
                ent["url"] = top[2].get("href", "")
            if top[1] == "pre" and top[2].get("language"):
                ent["language"] = top[2]["language"]
            if ent["length"] > 0 and not (top[1] == "code" and stack and stack[-1][1] == "pre"):
                entities.append(ent)
        else:
            name, _, rest = inner.partition(" ")
            name = name.strip().lower()
            if name not in _TAGS:
                raise EntityError('Unsupported start tag "%s" at byte offset %d' % (name, bpos(lt)))
            attrs = _attrs(rest, bpos(lt))
            kind = _TAGS[name]
            if name == "span" and attrs.get("class") != "tg-spoiler":
                raise EntityError('Tag "span" must have class "tg-spoiler" at byte offset %d'
                                  % bpos(lt))
            if kind == "text_link" and not attrs.get("href"):
                raise EntityError("Can't find href attribute of tag \"a\" at byte offset %d"
                                  % bpos(lt))
            parent = stack[-1][1] if stack else None
            if name == "code" and parent == "pre":
                cls = attrs.get("class", "")
                if cls.startswith("language-"):
                    stack[-1][2]["language"] = cls[len("language-"):]
            elif parent in ("code", "pre"):
                raise EntityError('Entity "%s" can\'t be inside "%s" entity at byte offset %d'
                                  % (kind, parent, bpos(lt)))
            elif kind in ("code", "pre") and any(s[1] in _FORMAT + ("text_link",) for s in stack):
                raise EntityError('Entity "%s" can\'t be part of formatting entities at byte '
                                  'offset %d' % (kind, bpos(lt)))
            elif kind == "blockquote" and any(s[1] == "blockquote" for s in stack):
                raise EntityError("Blockquote entities can't be nested at byte offset %d"
                                  % bpos(lt))
            elif kind == "text_link" and any(s[1] == "text_link" for s in stack):
                raise EntityError("Nested links are not allowed at byte offset %d" % bpos(lt))
            stack.append((name, kind, attrs, size))
        pos = gt + 1
    if stack:
        raise EntityError('Can\'t find end tag corresponding to start tag "%s"' % stack[-1][0])
    return "".join(out), entities


# --- the fake API -------------------------------------------------------------------
def fn_result(fake, method, params):
    """What the API method would answer (the body a cut reply starts to send)."""
    fn = getattr(fake, "api_" + method, None)
    return fn(params)[1] if fn else {"ok": False}


def _ok(result):
    return 200, {"ok": True, "result": result}


def _err(status, description, **params):
    body = {"ok": False, "error_code": status, "description": description}
    if params:
        body["parameters"] = params
    return status, body


class FakeTelegram:
    def __init__(self, token=TOKEN):
        self.token = token
        self.cond = threading.Condition()
        self.reset()

    # --- control -------------------------------------------------------------
    def reset(self):
        with self.cond:
            self.updates = []  # not yet confirmed
            self.next_update_id = 500000
            self.offset = 0
            self.allowed = None
            self.sent = []
            self.edits = []  # {"chat_id", "message_id", "text", "parse_mode", "t"} per edit
            self.deleted = []  # (chat_id, message_id) in order
            self.actions = []
            self.photos = []  # the bytes of each photo sent (sendPhoto)
            self.calls = []
            self.violations = []
            self.fails = []
            self.chats = {}
            self.msg_ids = {}
            self.poll_gen = 0
            self.connections = 0
            self.ensure_ascii = True
            self.max_poll_s = 30.0
            self.username = USERNAME
            self.retain = False  # keep confirmed updates: a bot that forgot its offset gets them again
            self.flood = {}  # chat id -> time.time() until which its 429's retry_after holds
            self.flood_control = True
            self.cond.notify_all()

    def configure(self, **kw):
        with self.cond:
            for k in ("ensure_ascii", "max_poll_s", "username", "retain", "flood_control"):
                if k in kw:
                    setattr(self, k, kw[k])
            if not self.flood_control:
                self.flood.clear()

    def fail(self, method, status, description=None, retry_after=None, times=1, delay_s=0,
             if_parse_mode=False, body=None, cut=False, after=0):
        defaults = {400: "Bad Request: can't parse entities: Can't find end tag corresponding "
                         "to start tag \"b\"",
                    409: "Conflict: terminated by other getUpdates request; make sure that only "
                         "one bot instance is running",
                    429: "Too Many Requests: retry after %s" % retry_after,
                    502: "Bad Gateway"}
        with self.cond:
            self.fails.append({"method": method, "status": status, "times": times,
                               "description": description or defaults.get(status, "Error"),
                               "retry_after": retry_after, "delay_s": delay_s,
                               "if_parse_mode": if_parse_mode, "body": body, "cut": cut, "after": after})

    def _message_id(self, chat_id):
        self.msg_ids[chat_id] = self.msg_ids.get(chat_id, 0) + 1
        return self.msg_ids[chat_id]

    def add_update(self, spec):
        """Queue one update built from a spec (see module doc); returns its update_id."""
        with self.cond:
            uid = self.next_update_id
            self.next_update_id += 1
            if "raw" in spec:
                upd = {"update_id": uid}  # first, as Telegram sends it
                upd.update(spec["raw"])
            else:
                upd = self._build(uid, spec)
            for key in UPDATE_TYPES:  # a raw update may be malformed on purpose
                chat = upd.get(key) if isinstance(upd.get(key), dict) else None
                if chat and isinstance(chat.get("chat"), dict) and "id" in chat["chat"]:
                    self.chats[chat["chat"]["id"]] = chat["chat"]
            self.updates.append(upd)
            self.cond.notify_all()
            return uid

    def _build(self, uid, spec):
        chat_id = int(spec.get("chat_id", 42))
        ctype = spec.get("chat_type", "private" if chat_id > 0 else "group")
        from_id = int(spec.get("from_id", chat_id if chat_id > 0 else 7))
        user = {"id": from_id, "is_bot": False, "first_name": spec.get("first_name", "Ann"),
                "username": spec.get("username", "ann%d" % from_id), "language_code": "en"}
        if ctype == "private":
            chat = {"id": chat_id, "first_name": user["first_name"],
                    "username": user["username"], "type": "private"}
        else:
            chat = {"id": chat_id, "title": spec.get("title", "Test group"), "type": ctype}
        msg = {"message_id": self._message_id(chat_id), "from": user, "chat": chat,
               "date": int(time.time())}
        kind = spec.get("kind", "text")
        text = spec.get("text", "") * int(spec.get("repeat", 1))
        if kind == "photo":
            msg["photo"] = [{"file_id": "AgAC%d_%d" % (uid, w), "file_unique_id": "AQAD%d" % w,
                             "file_size": w * 12, "width": w, "height": w * 3 // 4}
                            for w in (90, 320, 800)]
            if text:
                msg["caption"] = text
        elif kind == "sticker":
            msg["sticker"] = {"file_id": "CAAC%d" % uid, "file_unique_id": "AgAD%d" % uid,
                              "type": "regular", "width": 512, "height": 512,
                              "is_animated": False, "is_video": False, "emoji": "\U0001f600"}
        elif kind == "voice":
            msg["voice"] = {"file_id": "AwAC%d" % uid, "file_unique_id": "AgAD%d" % uid,
                            "duration": 2, "mime_type": "audio/ogg", "file_size": 5000}
        else:
            msg["text"] = text
            ents = _text_entities(text)
            if ents:
                msg["entities"] = ents
        if spec.get("reply_to_bot"):
            msg["reply_to_message"] = {
                "message_id": max(1, msg["message_id"] - 1), "date": msg["date"] - 5,
                "chat": chat, "text": "earlier answer",
                "from": {"id": BOT_ID, "is_bot": True, "first_name": "Mimi",
                         "username": self.username}}
        if kind == "edited":
            msg["edit_date"] = msg["date"] + 1
            return {"update_id": uid, "edited_message": msg}
        return {"update_id": uid, "message": msg}

    def state(self):
        with self.cond:
            return json.loads(json.dumps({
                "sent": self.sent, "actions": self.actions, "calls": self.calls,
                "pending": [u["update_id"] for u in self.updates], "offset": self.offset,
                "violations": self.violations, "connections": self.connections,
                "edits": self.edits, "deleted": self.deleted}))

    def wait(self, pred, timeout=30.0):
        """Block until pred(state) is true (a guard against hangs, not a timing check)."""
        end = time.time() + timeout
        while True:
            st = self.state()
            if pred(st):
                return st
            if time.time() > end:
                raise AssertionError("fake Telegram: condition not met; state: %s"
                                     % json.dumps(st)[:3000])
            time.sleep(0.05)

    # --- the API -------------------------------------------------------------
    def handle(self, method_http, path, query, body, ctype):
        if path.startswith("/_control/"):
            return self._control(method_http, path[len("/_control/"):], body)
        parts = path.strip("/").split("/")
        if len(parts) != 2 or not parts[0].startswith("bot"):
            return _err(404, "Not Found")
        if parts[0][3:] != self.token:
            return _err(401, "Unauthorized")
        method = parts[1]
        params = dict(parse_qsl(query))
        if body:
            if ctype.startswith("application/json"):
                try:
                    params.update(json.loads(body.decode("utf-8")))
                except (ValueError, UnicodeDecodeError) as e:
                    self.violations.append("%s: body is not UTF-8 JSON (%s)" % (method, e))
                    return _err(400, "Bad Request: can't parse JSON object")
            elif ctype.startswith("application/x-www-form-urlencoded"):
                params.update(parse_qsl(body.decode("utf-8")))
            elif ctype.startswith("multipart/form-data"):
                from fakes import multipart

                try:
                    for k, v in multipart.parse(ctype, body).items():
                        params[k] = v if v["filename"] is not None else v["value"].decode("utf-8")
                except (multipart.Malformed, UnicodeDecodeError) as e:
                    self.violations.append("%s: multipart body: %s" % (method, e))
                    return _err(400, "Bad Request: can't parse multipart/form-data")
            else:
                self.violations.append("%s: unexpected Content-Type %r" % (method, ctype))
        with self.cond:
            now = time.time()
            self.calls.append({"method": method, "t": now, "params": {
                k: {"filename": v["filename"], "bytes": len(v["value"])} if isinstance(v, dict) and "filename" in v
                else v for k, v in params.items()}})
            chat = str(params.get("chat_id")) if params.get("chat_id") is not None else None
            left = self.flood.get(chat, 0) - now
            if left > 0:  # Telegram refuses the chat until its retry_after has passed
                self.violations.append("%s to chat %s %.1f s before the retry_after of a 429 had "
                                       "passed" % (method, chat, left))
                return _err(429, "Too Many Requests: retry after %d" % -(-left // 1),
                            retry_after=int(-(-left // 1)))
            rule = self._take_fail(method, params)
            if rule and rule["status"] == 429 and rule["retry_after"] and chat and self.flood_control:
                self.flood[chat] = now + rule["retry_after"]
        if rule:
            if rule["delay_s"]:
                time.sleep(rule["delay_s"])
            if rule["body"] is not None:  # garbage instead of JSON
                return rule["status"], rule["body"].encode()
            if rule["cut"]:  # the whole length announced, half of it sent, then the connection closed
                return "cut", json.dumps(fn_result(self, method, params)).encode()
            extra = {"retry_after": rule["retry_after"]} if rule["retry_after"] is not None else {}
            if rule["status"] == 502:
                return 502, b"<html><body><h1>502 Bad Gateway</h1></body></html>"
            return _err(rule["status"], rule["description"], **extra)
        fn = getattr(self, "api_" + method, None)
        if fn is None:
            return _err(404, "Not Found")
        return fn(params)

    def _take_fail(self, method, params):
        for rule in self.fails:
            if rule["method"] != method or rule["times"] <= 0:
                continue
            if rule["if_parse_mode"] and not params.get("parse_mode"):
                continue
            if rule["after"] > 0:
                rule["after"] -= 1
                continue
            rule["times"] -= 1
            return rule
        return None

    def _control(self, method, what, body):
        data = json.loads(body or b"null") if body else None
        if what == "update":
            specs = data if isinstance(data, list) else [data]
            return 200, {"update_ids": [self.add_update(s) for s in specs]}
        if what == "fail":
            self.fail(**data)
            return 200, {"ok": True}
        if what == "config":
            self.configure(**data)
            return 200, {"ok": True}
        if what == "reset":
            self.reset()
            return 200, {"ok": True}
        if what == "state":
            return 200, self.state()
        return 404, {"error": "unknown control " + what}

    def api_getMe(self, params):
        return _ok({"id": BOT_ID, "is_bot": True, "first_name": "Mimi",
                    "username": self.username, "can_join_groups": True,
                    "can_read_all_group_messages": False, "supports_inline_queries": False})

    def api_getUpdates(self, p):
        try:
            offset = int(p.get("offset", 0) or 0)
            limit = int(p.get("limit", 100) or 100)
            timeout = float(p.get("timeout", 0) or 0)
        except (TypeError, ValueError):
            return _err(400, "Bad Request: wrong parameter type")
        if not 1 <= limit <= 100:
            limit = max(1, min(limit, 100))
        allowed = p.get("allowed_updates")
        if isinstance(allowed, str):
            try:
                allowed = json.loads(allowed)
            except ValueError:
                return _err(400, "Bad Request: can't parse allowed_updates JSON array")
        with self.cond:
            if allowed is not None:
                self.allowed = list(allowed) or None
            if offset > 0:
                if offset > self.offset:
                    self.offset = offset
                if not self.retain:
                    self.updates = [u for u in self.updates if u["update_id"] >= offset]
            self.poll_gen += 1
            gen = self.poll_gen
            end = time.time() + min(timeout, self.max_poll_s)
            while True:
                if self.poll_gen != gen:
                    return _err(409, "Conflict: terminated by other getUpdates request; make "
                                     "sure that only one bot instance is running")
                out = [u for u in self.updates if u["update_id"] >= offset and self._wanted(u)]
                if out or time.time() >= end:
                    return _ok(out[:limit])
                self.cond.wait(min(0.5, max(0.01, end - time.time())))

    def _wanted(self, upd):
        kinds = self.allowed or [k for k in UPDATE_TYPES if k not in ("chat_member",)]
        return any(k in upd for k in kinds)

    def _chat(self, p, method):
        cid = p.get("chat_id")
        if cid is None or cid == "":
            return None, _err(400, "Bad Request: chat_id is empty")
        try:
            cid = int(cid)
        except (TypeError, ValueError):
            return None, _err(400, "Bad Request: chat not found")
        if cid not in self.chats:
            return None, _err(400, "Bad Request: chat not found")
        return cid, None

    def _text(self, p, method):
        """(text, parse_mode, visible text, entities), or the error answer, of a message's
        text as Telegram checks it."""
        text = p.get("text")
        if not isinstance(text, str) or not text.strip():
            return _err(400, "Bad Request: message text is empty")
        mode = p.get("parse_mode") or None
        if mode not in (None, "HTML", "MarkdownV2", "Markdown"):
            return _err(400, "Bad Request: unsupported parse_mode")
        entities = []
        visible = text
        if mode == "HTML":
            try:
                visible, entities = parse_html(text)
            except EntityError as e:
                return _err(400, "Bad Request: can't parse entities: %s" % e)
        elif mode:
            self.violations.append("%s: parse_mode %s used (expected HTML)" % (method, mode))
        if u16len(visible) > MAX_LEN:
            return _err(400, "Bad Request: message is too long")
        if not visible.strip():
            return _err(400, "Bad Request: text must be non-empty")
        return text, mode, visible, entities

    def _message(self, cid, mid, date, visible, entities, **more):
        """The Message object Telegram returns for one of the bot's messages."""
        msg = {"message_id": mid, "date": date,
               "from": {"id": BOT_ID, "is_bot": True, "first_name": "Mimi",
                        "username": self.username},
               "chat": self.chats[cid], "text": visible}
        if visible is None:  # a photo: its caption instead
            del msg["text"]
        msg.update(more)
        if entities:
            msg["entities"] = entities
        return msg

    def _sent(self, cid, p):
        """The bot's recorded message p["message_id"] in chat cid, or None."""
        try:
            mid = int(p.get("message_id"))
        except (TypeError, ValueError):
            return None
        for m in self.sent:
            if m["chat_id"] == cid and m["message_id"] == mid and not m.get("deleted"):
                return m
        return None

    def api_editMessageText(self, p):
        with self.cond:
            cid, err = self._chat(p, "editMessageText")
            if err:
                return err
            m = self._sent(cid, p)
            if m is None:
                return _err(400, "Bad Request: message to edit not found")
            checked = self._text(p, "editMessageText")
            if len(checked) == 2:
                return checked
            text, mode, visible, entities = checked
            if visible == m["visible"] and entities == m["entities"]:
                return _err(400, "Bad Request: message is not modified: specified new message "
                                 "content and reply markup are exactly the same as a current "
                                 "content and reply markup of the message")
            m.update(text=text, visible=visible, parse_mode=mode, entities=entities,
                     edited=m.get("edited", 0) + 1)
            self.edits.append({"chat_id": cid, "message_id": m["message_id"], "text": text,
                               "parse_mode": mode, "t": time.time()})
            return _ok(self._message(cid, m["message_id"], int(m["t"]), visible, entities,
                                     edit_date=int(time.time())))

    def api_deleteMessage(self, p):
        with self.cond:
            cid, err = self._chat(p, "deleteMessage")
            if err:
                return err
            m = self._sent(cid, p)
            if m is None:
                return _err(400, "Bad Request: message to delete not found")
            m["deleted"] = True
            self.deleted.append([cid, m["message_id"]])
            return _ok(True)

    def api_sendMessage(self, p):
        with self.cond:
            cid, err = self._chat(p, "sendMessage")
            if err:
                return err
            checked = self._text(p, "sendMessage")
            if len(checked) == 2:
                return checked
            text, mode, visible, entities = checked
            mid = self._message_id(cid)
            self.sent.append({"chat_id": cid, "text": text, "visible": visible,
                              "parse_mode": mode, "message_id": mid, "entities": entities,
                              "reply_to": (p.get("reply_parameters") or {}).get("message_id")
                              if isinstance(p.get("reply_parameters"), dict)
                              else p.get("reply_to_message_id"),
                              "t": time.time()})
            return _ok(self._message(cid, mid, int(time.time()), visible, entities))

    def api_sendPhoto(self, p):
        """A photo uploaded as a file (multipart/form-data): kept in self.photos (bytes);
        "sent" gets {"kind": "photo", "visible": caption, "photo_bytes", "width", "height"}."""
        from fakes import multipart

        with self.cond:
            cid, err = self._chat(p, "sendPhoto")
            if err:
                return err
            photo = p.get("photo")
            if not isinstance(photo, dict):
                self.violations.append("sendPhoto: photo is not an uploaded file")
                return _err(400, "Bad Request: wrong remote file identifier specified: Wrong string length")
            data = photo["value"]
            try:
                w, h = multipart.png_size(data)
            except multipart.Malformed:
                return _err(400, "Bad Request: IMAGE_PROCESS_FAILED")
            if photo["type"] != "image/png":
                self.violations.append("sendPhoto: a PNG sent as %r" % photo["type"])
            mid = self._message_id(cid)
            self.photos.append(data)
            caption = p.get("caption") or ""
            self.sent.append({"chat_id": cid, "kind": "photo", "text": caption, "visible": caption,
                              "parse_mode": None, "message_id": mid, "entities": [], "reply_to": None,
                              "photo_bytes": len(data), "width": w, "height": h, "filename": photo["filename"],
                              "t": time.time()})
            sizes = [{"file_id": "AgAC%d" % mid, "file_unique_id": "AQAD%d" % mid, "width": w, "height": h,
                      "file_size": len(data)}]
            return _ok(self._message(cid, mid, int(time.time()), None, [], photo=sizes, caption=caption))

    def api_sendChatAction(self, p):
        with self.cond:
            cid, err = self._chat(p, "sendChatAction")
            if err:
                return err
            action = p.get("action")
            if action not in CHAT_ACTIONS:
                return _err(400, "Bad Request: wrong parameter action in request")
            self.actions.append({"chat_id": cid, "action": action, "t": time.time()})
            return _ok(True)


def _text_entities(text):
    """bot_command / mention entities with UTF-16 offsets, as Telegram adds them."""
    ents = []
    i = 0
    while i < len(text):
        c = text[i]
        if c in "/@" and (i == 0 or text[i - 1].isspace()):
            j = i + 1
            while j < len(text) and (text[j].isalnum() or text[j] in "_@"):
                j += 1
            if j - i > 1:
                kind = "bot_command" if c == "/" else "mention"
                ents.append({"offset": u16len(text[:i]), "length": u16len(text[i:j]),
                             "type": kind})
            i = j
        else:
            i += 1
    return ents


# --- HTTP ---------------------------------------------------------------------------
class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake = None

    def setup(self):
        super().setup()
        with self.fake.cond:
            self.fake.connections += 1

    def log_message(self, *a):
        pass

    def _do(self):
        u = urlsplit(self.path)
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        status, out = self.fake.handle(self.command, u.path, u.query, body,
                                       self.headers.get("Content-Type", ""))
        if status == "cut":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out[:len(out) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        if isinstance(out, bytes):
            data, ctype = out, "text/html"
        else:
            data = json.dumps(out, ensure_ascii=self.fake.ensure_ascii, separators=(",", ":")).encode("utf-8")
            ctype = "application/json"
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the bot went away (process ended, request timed out)
            self.close_connection = True

    do_GET = do_POST = _do


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        import sys

        if not isinstance(sys.exc_info()[1], OSError):  # a bot hanging up is normal
            super().handle_error(request, client_address)


class Service(dict):
    """What the fake_telegram fixture returns: JSON-able {base_url, token, username,
    control} plus the FakeTelegram's helpers (update, fail, configure, state, wait)."""

    def __init__(self, token=TOKEN):
        self.fake = FakeTelegram(token)
        handler = type("Handler", (_Handler,), {"fake": self.fake})
        self.server = _Server(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        url = "http://127.0.0.1:%d" % self.server.server_address[1]
        super().__init__(base_url=url, token=token, username=self.fake.username,
                         control=url + "/_control", bot_id=BOT_ID)

    def update(self, **spec):
        return self.fake.add_update(spec)

    def fail(self, method, status, **kw):
        self.fake.fail(method, status, **kw)

    def configure(self, **kw):
        self.fake.configure(**kw)

    def state(self):
        return self.fake.state()

    def wait(self, pred, timeout=30.0):
        return self.fake.wait(pred, timeout)

    def close(self):
        with self.fake.cond:
            self.fake.max_poll_s = 0
            self.fake.poll_gen += 1  # end waiting long polls
            self.fake.cond.notify_all()
        self.server.shutdown()
        self.server.server_close()


def start(token=TOKEN):
    return Service(token)
