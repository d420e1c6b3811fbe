# Settings in /config.json: defaults, validation on every set, masked display and
# atomic saves. Only values that differ from the built-in default are stored, so a
# new firmware's better defaults reach boards that never changed them.
import json
import _thread
from mimi import limits, fs, log
from mimi.board.clock import parse_tz
from mimi.net import split_url
from mimi import gpio_policy

PROXY_TYPES = ("http", "socks5")
# The LLM providers and their defaults (used when `api_base` / `model` are empty);
# here, not in llm/, so reading settings never loads the LLM code.
PROVIDERS = ("anthropic", "openai")
DEFAULT_BASE = {"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com"}
DEFAULT_MODEL = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-5-mini"}


def _str(maxlen):
    def check(v):
        v = str(v)
        if len(v) > maxlen:
            raise ValueError("at most %d characters" % maxlen)
        if any(ord(c) < 32 for c in v):
            raise ValueError("control characters are not allowed")
        return v

    return check


def _int(lo, hi):
    def check(v):
        if isinstance(v, bool):
            raise ValueError("must be a whole number")
        if isinstance(v, str):
            v = v.strip()
            if not v.lstrip("-").isdigit():
                raise ValueError("must be a whole number")
        try:
            v = int(v)
        except (TypeError, ValueError):
            raise ValueError("must be a whole number")
        if not lo <= v <= hi:
            raise ValueError("must be between %d and %d" % (lo, hi))
        return v

    return check


def _choice(options):
    def check(v):
        v = str(v).strip().lower()
        if v not in options:
            raise ValueError("must be one of: %s" % ", ".join(options))
        return v

    return check


def _url(v):
    v = str(v).strip()
    if v == "":
        return v
    if not (v.startswith("https://") or v.startswith("http://")):
        raise ValueError("must start with https:// or http://")
    if len(v) > 200 or " " in v:
        raise ValueError("not a valid URL")
    split_url(v)  # ValueError: no host, or a port that is not a number
    return v.rstrip("/")


def _tg_token(v):
    v = str(v).strip()
    if v == "":
        return v
    num, sep, rest = v.partition(":")
    if not sep or not num.isdigit() or len(rest) < 20 or len(v) > 100:
        raise ValueError("a bot token looks like 123456789:AA... (from @BotFather)")
    for c in rest:
        if not (c.isalpha() or c.isdigit() or c in "_-"):
            raise ValueError("a bot token looks like 123456789:AA... (from @BotFather)")
    return v


def _id_list(ok, what):
    """A comma-separated list of ids (or a list), each passing ok(id), duplicates dropped."""
    def check(v):
        if isinstance(v, (list, tuple)):
            items = [str(x) for x in v]
        else:
            items = str(v).replace(" ", "").split(",")
        out = []
        for item in items:
            if not item:
                continue
            if not ok(item):
                raise ValueError("%s, comma-separated (got %r)" % (what, item))
            if item not in out:
                out.append(item)
        return ",".join(out)

    return check


def _feishu_id(v):
    # open_id "ou_..." (a person) or chat_id "oc_..." (a group)
    return v[:3] in ("ou_", "oc_") and 3 < len(v) <= 64 and all(c.isalpha() or c.isdigit() for c in v[3:])


def _feishu_app_id(v):
    v = str(v).strip()
    if v and (not v.startswith("cli_") or len(v) > 64 or any(ord(c) <= 32 for c in v)):
        raise ValueError("a Feishu/Lark app id looks like cli_a1b2c3d4e5f6 (from the developer console)")
    return v


def _tz(v):
    from mimi.board.clock import format_tz

    return format_tz(parse_tz(v))


def _wifi_pass(v):
    v = str(v)
    if v and not 8 <= len(v) <= 63:
        raise ValueError("a WPA password has 8 to 63 characters (empty for an open network)")
    return v


def _ap_pass(v):
    v = str(v)
    if not 8 <= len(v) <= 63 or any(not 32 < ord(c) < 127 for c in v):
        raise ValueError("8 to 63 printable ASCII characters, no spaces")
    return v


def _token(v):
    v = str(v).strip()
    if len(v) > 128 or any(ord(c) <= 32 for c in v):
        raise ValueError("at most 128 characters, no spaces")
    return v


def _gpio_allow(v):
    return gpio_policy.normalize(v)


# key: (default, validator, secret)
SCHEMA = {
    "wifi_ssid": ("", _str(32), False),
    "wifi_pass": ("", _wifi_pass, True),
    "tg_token": ("", _tg_token, True),
    "tg_allow": ("", _id_list(lambda v: v.lstrip("-").isdigit(), "chat ids are numbers"), False),
    "provider": ("anthropic", _choice(PROVIDERS), False),
    "api_key": ("", _token, True),
    "model": ("", _str(100), False),
    "api_base": ("", _url, False),
    "max_tokens": (limits.MAX_TOKENS_DEFAULT, _int(1, 128000), False),
    "tavily_key": ("", _token, True),
    "search_key": ("", _token, True),
    "proxy_host": ("", _str(100), False),
    "proxy_port": (0, _int(0, 65535), False),
    "proxy_type": ("http", _choice(PROXY_TYPES), False),
    "ws_port": (limits.WS_PORT, _int(0, 65535), False),  # 0: any free port (tests)
    "ws_token": (None, _token, True),  # None: generated at first boot; "" turns auth off
    "tz": ("+00:00", _tz, False),
    "heartbeat_min": (limits.HEARTBEAT_MIN_DEFAULT, _int(0, 1440), False),
    "tg_api_base": ("https://api.telegram.org", _url, False),
    "feishu_app_id": ("", _feishu_app_id, False),
    "feishu_app_secret": ("", _token, True),
    # who is served: open_ids (ou_...) and group chat_ids (oc_...); empty = nobody
    "feishu_allow": ("", _id_list(_feishu_id, "Feishu ids are open_ids (ou_...) or chat_ids (oc_...)"), False),
    "feishu_api_base": ("https://open.feishu.cn", _url, False),  # Lark: https://open.larksuite.com
    "ap_pass": (None, _ap_pass, True),  # onboarding AP's WPA2 password; None: made when first needed
    "ota_key": ("", _token, True),  # shared secret: update bundles must carry its HMAC-SHA256
    # pins the GPIO tools may use ("4-18,21"; "" = none); see mimi/gpio_policy.py
    "gpio_allow": (_gpio_allow(gpio_policy.DEFAULT), _gpio_allow, False),
    # what the file tools' files may take; 0: what the flash leaves (tools/files.py)
    "files_quota_kb": (0, _int(0, limits.FILES_QUOTA_MAX_KB), False),
}


def mask(value):
    if value is None or value == "":
        return "(not set)"
    v = str(value)
    if len(v) <= 8:
        return "****"
    return v[:4] + "****"


class Config:
    def __init__(self, path=limits.CONFIG_PATH):
        self.path = path
        self._values = {}
        self._lock = _thread.allocate_lock()
        self._watchers = []
        self._held = {}  # applied but not saved (the flash was full): kept over load()
        self.problems = []

    def load(self):
        """Read the file; bad or unknown entries are reported and left out, never fatal."""
        self.problems = []
        values = {}
        try:
            with open(self.path) as f:
                raw = json.load(f)
            if not isinstance(raw, dict):
                raise ValueError("not a JSON object")
        except OSError:
            raw = {}
        except ValueError as e:
            self.problems.append("%s is not valid JSON (%s); using defaults" % (self.path, e))
            raw = {}
        for k, v in raw.items():
            if k not in SCHEMA:
                self.problems.append("unknown setting %r ignored" % k)
                continue
            try:
                values[k] = SCHEMA[k][1](v)
            except ValueError as e:
                self.problems.append("setting %s ignored: %s" % (k, e))
        with self._lock:
            values.update(self._held)
            self._values = values
        for p in self.problems:
            log.warning("config", p)
        return self

    def get(self, key):
        if key not in SCHEMA:
            raise KeyError("unknown setting %r" % key)
        return self._values[key] if key in self._values else SCHEMA[key][0]

    def __getitem__(self, key):
        return self.get(key)

    def is_set(self, key):
        return key in self._values

    def set(self, key, value):
        """Validate and save one setting; ValueError (nothing written) when refused."""
        return self.update({key: value})

    def update(self, changes, save=True):
        """Validate every change first, then save once; all or nothing: ValueError
        when refused, OSError when the save failed (nothing changed). save=False
        applies them for this boot only, as when the flash is full."""
        clean = {}
        for key, value in changes.items():
            if key not in SCHEMA:
                raise ValueError("unknown setting %r; known: %s" % (key, ", ".join(sorted(SCHEMA))))
            try:
                clean[key] = SCHEMA[key][1](value)
            except ValueError as e:
                raise ValueError("%s: %s" % (key, e))
        with self._lock:
            new = dict(self._values)
            for key, value in clean.items():
                default = SCHEMA[key][0]
                if value == default:
                    new.pop(key, None)
                else:
                    new[key] = value
            if save:
                self._save(new)
                for key in clean:
                    self._held.pop(key, None)
            else:
                self._held.update(clean)
            self._values = new
        self._notify(list(clean))
        return clean

    def hold(self, changes):
        """update() for this boot only (their save failed): kept over load()."""
        return self.update(changes, False)

    def unset(self, key):
        if key not in SCHEMA:
            raise ValueError("unknown setting %r" % key)
        with self._lock:
            new = dict(self._values)
            new.pop(key, None)
            self._save(new)
            self._values = new
        self._notify([key])

    def reset(self):
        with self._lock:
            self._save({})
            self._values = {}
        self._notify(list(SCHEMA))

    def _save(self, values):
        fs.write_atomic(self.path, json.dumps(values))

    def watch(self, fn):
        """fn(changed_keys) after every successful change."""
        self._watchers.append(fn)

    def _notify(self, keys):
        for fn in self._watchers:
            try:
                fn(keys)
            except Exception as e:  # a watcher's bug must not undo a saved setting
                log.exception("config", "watcher failed", e)

    def shown(self, key):
        v = self.get(key)
        if SCHEMA[key][2]:
            return mask(v)
        return "(not set)" if v == "" or v is None else str(v)

    def rows(self):
        """(key, shown value, 'set'|'default') for every setting, secrets masked."""
        return [(k, self.shown(k), "set" if k in self._values else "default") for k in sorted(SCHEMA)]

    def missing(self):
        """What a person still has to configure, in plain words."""
        out = []
        if not self.get("api_key") and not self.get("api_base"):
            out.append("no LLM API key: set_api_key('...')")
        if not self.get("tg_token"):
            out.append("no Telegram bot token: set_tg_token('...') (WebSocket chat still works)")
        elif not self.get("tg_allow"):
            out.append("Telegram allow-list is empty: nobody is served until allow_chat(<id>)")
        if self.get("feishu_app_id") and not self.get("feishu_app_secret"):
            out.append("Feishu app secret missing: set_feishu_creds(app_id, app_secret)")
        elif self.get("feishu_app_id") and not self.get("feishu_allow"):
            out.append("Feishu allow-list is empty: nobody is served until allow_feishu(<id>)")
        if self.get("ws_token") == "":
            out.append("WebSocket gateway auth is OFF (ws_token is empty)")
        return out


cfg = Config()


def tz_s():
    """The `tz` setting in seconds east of UTC: the one offset for local time (notes,
    prompt, daily cron jobs, get_current_time). 0 if unreadable, never an error."""
    try:
        return parse_tz(cfg.get("tz"))
    except Exception:
        return 0
