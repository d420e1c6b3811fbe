# What each setting accepts (the rules named in config.SCHEMA), how settings are
# shown and what a person still has to set. Loaded by config.py for a check or a
# listing and dropped after it: none of this stays in RAM between changes.
from mimi.config.settings import SCHEMA


def _str(v, maxlen):
    v = str(v)
    if len(v) > maxlen:
        raise ValueError("at most %d characters" % maxlen)
    if any(ord(c) < 32 for c in v):
        raise ValueError("control characters are not allowed")
    return v


def _int(v, lo, hi):
    if isinstance(v, bool):
        raise ValueError("must be a whole number")
    if isinstance(v, str):
        v = v.strip()
        if not v.lstrip("-").isdigit():
            raise ValueError("must be a whole number")
    try:
        v = int(v)
    except (TypeError, ValueError, OverflowError):  # OverflowError: inf
        raise ValueError("must be a whole number")
    if not lo <= v <= hi:
        raise ValueError("must be between %d and %d" % (lo, hi))
    return v


def _bool(v):
    if isinstance(v, bool):
        return v
    w = str(v).strip().lower()
    if w in ("1", "on", "true", "yes"):
        return True
    if w in ("0", "off", "false", "no"):
        return False
    raise ValueError("must be on or off (True or False)")


def _choice(v, options):
    v = str(v).strip().lower()
    if v not in options:
        raise ValueError("must be one of: %s" % ", ".join(options))
    return v


def _url(v):
    v = str(v).strip()
    if v == "":
        return v
    if not (v.startswith("https://") or v.startswith("http://")):
        raise ValueError("must start with https:// or http://")
    if len(v) > 200 or " " in v:
        raise ValueError("not a valid URL")
    from mimi.net import split_url

    split_url(v)  # ValueError: no host, or a port that is not a number
    return v.rstrip("/")


_BOT_TOKEN = "a bot token looks like 123456789:AA... (from @BotFather)"


def _tg_token(v):
    v = str(v).strip()
    if v == "":
        return v
    num, sep, rest = v.partition(":")
    if not sep or not num.isdigit() or len(rest) < 20 or len(v) > 100:
        raise ValueError(_BOT_TOKEN)
    for c in rest:
        if not (c.isalpha() or c.isdigit() or c in "_-"):
            raise ValueError(_BOT_TOKEN)
    return v


def _feishu_id(v):
    # open_id "ou_..." (a person) or chat_id "oc_..." (a group)
    return v[:3] in ("ou_", "oc_") and 3 < len(v) <= 64 and all(c.isalpha() or c.isdigit() for c in v[3:])


_IDS = {
    "num": (lambda v: v.lstrip("-").isdigit(), "chat ids are numbers"),
    "open": (_feishu_id, "Feishu ids are open_ids (ou_...) or chat_ids (oc_...)"),
}


def _ids(v, kind):
    """A comma-separated list of ids (or a list), each passing the kind's check,
    duplicates dropped."""
    ok, what = _IDS[kind]
    items = [str(x) for x in v] if isinstance(v, (list, tuple)) else str(v).replace(" ", "").split(",")
    out = []
    for item in items:
        if not item:
            continue
        if not ok(item):
            raise ValueError("%s, comma-separated (got %r)" % (what, item[:40]))
        if item not in out:
            out.append(item)
    return ",".join(out)


def _feishu_app_id(v):
    v = str(v).strip()
    if v and (not v.startswith("cli_") or len(v) > 64 or any(ord(c) <= 32 for c in v)):
        raise ValueError("a Feishu/Lark app id looks like cli_a1b2c3d4e5f6 (from the developer console)")
    return v


def _tz(v):
    from mimi.board.clock import format_tz, parse_tz

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


def _ws_token(v):
    from mimi import limits

    v = _token(v)
    if v and len(v) < limits.WS_TOKEN_MIN:
        raise ValueError("at least %d characters (an empty one turns gateway auth off)" % limits.WS_TOKEN_MIN)
    return v


def _ca_file(v):
    from mimi import limits

    v = str(v).strip()
    if v and (not v.startswith("/") or v.startswith(limits.SPIFFS + "/") or len(v) > 100):
        raise ValueError("a file path on the flash outside %s (where the file tools cannot "
                         "change it), e.g. /certs/mine.pem" % limits.SPIFFS)
    return v


def _price(v):
    try:
        if isinstance(v, bool):
            raise TypeError
        v = float(v.strip() if isinstance(v, str) else v)
    except (TypeError, ValueError):
        raise ValueError("a price in USD per million tokens, e.g. 3 or 0.25")
    if not 0 <= v <= 10000:
        raise ValueError("between 0 and 10000 (USD per million tokens; 0: the built-in price)")
    return int(v) if v == int(v) else v


def _gpio(v):
    from mimi.devices import pins as gpio_policy

    return gpio_policy.normalize(v)


def _board(v):
    from mimi.devices import boards

    return boards.check(v)


_PLAIN = {"board": _board, "url": _url, "tg_token": _tg_token, "feishu_app_id": _feishu_app_id, "tz": _tz,
          "wifi_pass": _wifi_pass, "ap_pass": _ap_pass, "token": _token, "gpio": _gpio,
          "ws_token": _ws_token, "ca_file": _ca_file, "price": _price, "bool": _bool}


def value(key, v):
    """v as setting `key` stores it; ValueError (naming the key) when refused."""
    if key not in SCHEMA:
        raise ValueError("unknown setting %r; known: %s" % (key, ", ".join(sorted(SCHEMA))))
    kind, _, arg = SCHEMA[key][1].partition(":")
    try:
        if kind == "str":
            return _str(v, int(arg))
        if kind == "int":
            lo, hi = arg.split(":")
            return _int(v, int(lo), int(hi))
        if kind == "choice":
            return _choice(v, arg.split(","))
        if kind == "ids":
            return _ids(v, arg)
        return _PLAIN[kind](v)
    except ValueError as e:
        raise ValueError("%s: %s" % (key, e))


def check(changes):
    """{key: value} -> the values as stored; ValueError for the first one refused.
    A new ca_file must hold roots (not checked at load: the file may change later)."""
    out = {k: value(k, v) for k, v in changes.items()}
    if out.get("ca_file"):
        import mimi

        try:
            mimi.run("net.tlsroots", "check", out["ca_file"])
        except ValueError as e:
            raise ValueError("ca_file: %s: %s" % (out["ca_file"], e))
    return out


def parse(path, raw):
    """What config.json held (a dict, or the ValueError of bad JSON) -> (values,
    problems): bad or unknown entries are left out and reported."""
    if isinstance(raw, ValueError):
        return {}, ["%s is not valid JSON (%s); using defaults" % (path, raw)]
    if not isinstance(raw, dict):
        return {}, ["%s is not valid JSON (not a JSON object); using defaults" % path]
    values, problems = {}, []
    for k, v in raw.items():
        if k not in SCHEMA:
            problems.append("unknown setting %r ignored" % k)
            continue
        try:
            values[k] = value(k, v)
        except ValueError as e:
            problems.append("setting %s ignored: %s" % (k, str(e)[len(k) + 2:]))
    return values, problems


def mask(v):
    if v is None or v == "":
        return "(not set)"
    v = str(v)
    return "****" if len(v) <= 8 else v[:4] + "****"


def shown(cfg, key):
    v = cfg.get(key)
    if SCHEMA[key][2]:
        return mask(v)
    return "(not set)" if v == "" or v is None else str(v)


def rows(cfg):
    return [(k, shown(cfg, k), "set" if cfg.is_set(k) else "default") for k in sorted(SCHEMA)]


def missing(cfg):
    out = []
    g = cfg.get
    if not g("api_key") and not g("api_base"):
        out.append("no LLM API key: set_api_key('...')")
    if not g("tg_token"):
        out.append("no Telegram bot token: set_tg_token('...') (WebSocket chat still works)")
    elif not g("tg_allow"):
        out.append("Telegram allow-list is empty: nobody is served until allow_chat(<id>)")
    if g("feishu_app_id") and not g("feishu_app_secret"):
        out.append("Feishu app secret missing: set_feishu_creds(app_id, app_secret)")
    elif g("feishu_app_id") and not g("feishu_allow"):
        out.append("Feishu allow-list is empty: nobody is served until allow_feishu(<id>)")
    if g("ws_token") == "":
        out.append("WebSocket gateway auth is OFF (ws_token is empty)")
    return out
