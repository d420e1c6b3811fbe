"""No channel is spelled outside the channel table (lib/mimi/channels/__init__.py)
and the channel's own modules: everything else reads the table, so adding a channel
is its module plus one row, and no other code can route it somewhere else.

Checked on the code's tokens, not its comments: a channel's name or session prefix
as a string literal, quoted inside a string ('telegram', "tg_1"), as a module path,
or as an identifier (`from mimi.channels import telegram`; not `system`, a common
name for the system prompt). Prose such as "Telegram
bot token" is not an identifier and is left alone.
"""
import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT / "lib" / "mimi"
NAMES = ("telegram", "websocket", "feishu", "system")
PREFIXES = ("tg", "ws", "feishu", "sys")
# The table, and each channel's own code (its package, and the modules only channels use).
# A path ending in "/" is a channel's package: every file in it.
OWN = {"channels/__init__.py", "channels/sending.py",
       "channels/telegram/", "channels/websocket/", "channels/feishu/"}
# The LLM APIs have a "system" of their own (Anthropic's field, OpenAI's role).
SYSTEM_OK = ("llm/",)
# RFC 6455's own words in the WebSocket client: the ws:// scheme and the
# "Upgrade: websocket" token, not the channel.
PROTOCOL_OK = {"net/wsclient.py": ("'ws'", "'websocket'")}

QUOTED = re.compile(r"""['"](%s)['"]""" % "|".join(NAMES))
QUOTED_KEY = re.compile(r"""['"](%s)_""" % "|".join(PREFIXES))
MODULE = re.compile(r"channels[./](%s)\b" % "|".join(NAMES))


def own(rel):
    return rel in OWN or any(rel.startswith(p) for p in OWN if p.endswith("/"))


def spellings(rel, source):
    """(line, what) for each channel spelled in the code of one file."""
    found = []
    system_ok = rel.startswith(SYSTEM_OK)
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME and tok.string in NAMES[:3]:  # `system` is also the prompt
            found.append((tok.start[0], "identifier " + tok.string))
        if tok.type != tokenize.STRING:
            continue
        value = ast.literal_eval(tok.string)
        if isinstance(value, bytes):
            value = value.decode("latin-1")
        hits = []
        v = value.strip()
        if v in NAMES or v in PREFIXES or v.rstrip("_") in PREFIXES and v.endswith("_"):
            hits.append(v)
        hits += [m.group(0) for m in QUOTED.finditer(value)]
        hits += [m.group(0) for m in QUOTED_KEY.finditer(value)]
        hits += [m.group(0) for m in MODULE.finditer(value)]
        for h in hits:
            if not (system_ok and "system" in h) and repr(h) not in PROTOCOL_OK.get(rel, ()):
                found.append((tok.start[0], "string %r" % h))
    return found


def test_no_channel_spelled_outside_the_table_and_its_modules():
    bad = []
    for path in sorted(LIB.rglob("*.py")):
        rel = str(path.relative_to(LIB))
        if own(rel):
            continue
        for line, what in spellings(rel, path.read_text()):
            bad.append("lib/mimi/%s:%d: %s" % (rel, line, what))
    assert bad == [], "\n".join(bad)


def test_the_check_sees_each_kind_of_spelling():
    cases = {
        'x = "telegram"\n': 1,
        'PREFIX = {"tg": 1}\n': 1,
        'if key.startswith("ws_"): pass\n': 1,
        'HELP = "forget a chat: \'tg_123\' or a bare id"\n': 1,
        'DESC = "Optional: \'websocket\' or \'system\'"\n': 2,
        'MOD = "mimi.channels.feishu"\n': 1,
        'from mimi.channels import telegram\n': 1,
        'x = cfg.get("tg_token")  # a setting, not a channel\n': 0,
        'x = "Telegram bot token"  # prose\n': 0,
        'url = "https://api.telegram.org"\n': 0,
    }
    for source, n in cases.items():
        assert len(spellings("x.py", source)) == n, source
    assert spellings("llm/openai.py", 'm = {"role": "system"}\n') == []
    assert spellings("net/wsclient.py", 'h = {"Upgrade": "websocket"}\nok = s in ("ws", "wss")\n') == []
    assert len(spellings("net/wsclient.py", 'c = "telegram"\n')) == 1
    assert len(spellings("net/http.py", 'h = {"Upgrade": "websocket"}\n')) == 1
    assert len(spellings("services/cron.py", 'c = "system"\n')) == 1


def test_the_table_names_the_own_modules():
    table = (LIB / "channels" / "__init__.py").read_text()
    for name in ("telegram", "websocket", "feishu"):
        assert '"mimi.channels.%s.' % name in table and "channels/%s/" % name in OWN
