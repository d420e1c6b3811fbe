# Settings in /config.json: defaults, validation on every set, masked display and
# atomic saves. Only values that differ from the built-in default are stored, so a
# new firmware's better defaults reach boards that never changed them.
# What each setting accepts is a short rule here; config/rules.py checks the
# rules (and masks, lists and explains settings) and is loaded only for that.
import json
import _thread
import mimi
from mimi import limits, fs, log

# The LLM providers and their defaults (used when `api_base` / `model` are empty);
# here, not in llm/, so reading settings never loads the LLM code.
PROVIDERS = ("anthropic", "openai")
DEFAULT_BASE = {"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com"}
DEFAULT_MODEL = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-5-mini"}

# key: (default, rule, secret). Rules (config/rules.py): "str:N" text of at most N
# characters; "int:LO:HI"; "choice:A,B"; "url" http(s) or empty; "ids:num" / "ids:open"
# comma-separated chat ids (numbers / open_ids and chat_ids); "token" no spaces; "bool"
# on/off; and one rule of each special kind.
SCHEMA = {
    "wifi_ssid": ("", "str:32", False),
    "wifi_pass": ("", "wifi_pass", True),
    "tg_token": ("", "tg_token", True),
    "tg_allow": ("", "ids:num", False),
    "provider": ("anthropic", "choice:anthropic,openai", False),
    "api_key": ("", "token", True),
    "model": ("", "str:100", False),
    "api_base": ("", "url", False),
    "stream": (True, "bool", False),  # answers shown as they come (off: servers that can't stream)
    "max_tokens": (limits.MAX_TOKENS_DEFAULT, "int:1:128000", False),
    "tavily_key": ("", "token", True),
    "search_key": ("", "token", True),
    "proxy_host": ("", "str:100", False),
    "proxy_port": (0, "int:0:65535", False),
    "proxy_type": ("http", "choice:http,socks5", False),
    "proxy_user": ("", "str:100", False),  # empty: a proxy without authentication
    "proxy_pass": ("", "str:100", True),
    "ws_port": (limits.WS_PORT, "int:0:65535", False),  # 0: any free port (tests)
    "ws_token": (None, "ws_token", True),  # None: generated at first boot; "" turns auth off
    "tz": ("+00:00", "tz", False),
    "heartbeat_min": (limits.HEARTBEAT_MIN_DEFAULT, "int:0:1440", False),
    "tg_api_base": ("https://api.telegram.org", "url", False),
    "feishu_app_id": ("", "feishu_app_id", False),
    "feishu_app_secret": ("", "token", True),
    # who is served: open_ids (ou_...) and group chat_ids (oc_...); empty = nobody
    "feishu_allow": ("", "ids:open", False),
    "feishu_api_base": ("https://open.feishu.cn", "url", False),  # Lark: https://open.larksuite.com
    "ap_pass": (None, "ap_pass", True),  # onboarding AP's WPA2 password; None: made when first needed
    "ota_key": ("", "token", True),  # shared secret: update bundles must carry its HMAC-SHA256
    # pins the GPIO tools may use ("4-18,21"; "" = none); devices/pins.py's DEFAULT
    "gpio_allow": ("1,2,4-18,21,38-42,47,48", "gpio", False),
    # a known board whose own parts (its LED) are devices; devices/boards.py
    "board": ("", "board", False),
    # what the file tools' files may take; 0: what the flash leaves (tools/files.py)
    "files_quota_kb": (0, "int:0:%d" % limits.FILES_QUOTA_MAX_KB, False),
    # spend caps (usage/ledger.py): LLM calls in a local hour, a local day; tokens a day; 0 = off
    "max_calls_hour": (limits.MAX_CALLS_HOUR, "int:0:1000000", False),
    "max_calls_day": (limits.MAX_CALLS_DAY, "int:0:1000000", False),
    "max_tokens_day": (0, "int:0:1000000000", False),
    # USD per million tokens for usage()'s cost estimate; 0: the built-in table's price
    "price_in": (0, "price", False),
    "price_out": (0, "price", False),
    "ca_file": ("", "ca_file", False),  # PEM/DER roots trusted besides the shipped ones
}


def _rules(fn, *args):
    return mimi.run("config.rules devices.pins devices devices.boards", fn, *args)


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
        try:
            with open(self.path) as f:
                text = f.read()
            # a hand-edited "\udc00" must not come back as a lone surrogate (jsonutil's
            # code loaded for it: at boot nothing else may need it)
            raw = mimi.run("jsonutil utf8", "loads", text)
        except OSError:
            raw = {}
        except ValueError as e:
            raw = e
        values, self.problems = _rules("parse", self.path, raw)
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
        clean = _rules("check", changes)
        with self._lock:
            new = dict(self._values)
            for key, value in clean.items():
                if value == SCHEMA[key][0]:
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
        """The value for a person: secrets masked, '(not set)' when empty."""
        return _rules("shown", self, key)

    def rows(self):
        """(key, shown value, 'set'|'default') for every setting, secrets masked."""
        return _rules("rows", self)

    def missing(self):
        """What a person still has to configure, in plain words."""
        return _rules("missing", self)


cfg = Config()


def tz_s():
    """The `tz` setting in seconds east of UTC: the one offset for local time (notes,
    prompt, daily cron jobs, get_current_time). 0 if unreadable, never an error."""
    from mimi.board.clock import parse_tz

    try:
        return parse_tz(cfg.get("tz"))
    except Exception:
        return 0
