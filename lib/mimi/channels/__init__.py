# The channel table: every channel the firmware talks on, one row each. The bus
# (session prefixes), the dispatcher, the agent thread, cron, heartbeat, the REPL,
# the prompt and app's task list read it; no other module spells a channel name.
#
# A row names its module as a string and nothing here is imported at the top: a
# channel's code loads only when the channel starts. The module provides run()
# (its loop task) and `async def send(msg)` (the dispatcher's sender for its
# outbound messages), and keeps its own formatter and limits (Telegram's:
# channels/telegram/format.py, limits.TG_*). Adding a channel: docs/internals.md.


class Channel:
    __slots__ = ("name", "prefix", "module", "label", "needs", "allow")

    def __init__(self, name, prefix, module=None, label=None, needs=None, allow=None):
        self.name = name  # bus.Msg.channel, "channel" in cron.json
        self.prefix = prefix  # sessions: /spiffs/sessions/<prefix>_<chat_id>.jsonl
        self.module = module  # its code; None: not in this firmware, never started
        self.label = label  # how the prompt names it; None: no person writes on it
        self.needs = needs  # the setting it starts with (set later: starts then); None: always
        # its allow-list setting (comma-separated chat ids): the first one is the
        # owner, who gets heartbeat and system cron results; a cron job made on the
        # REPL for this channel must name its chat
        self.allow = allow


SYSTEM = "system"  # heartbeat and cron turns that belong to no chat; results go to the owner

# Order matters: the owner is looked for in this order, and a bare chat id on the
# REPL (session_clear) belongs to the first row.
TABLE = [
    Channel("telegram", "tg", "mimi.channels.telegram.poller", "Telegram", "tg_token", "tg_allow"),
    Channel("feishu", "feishu", "mimi.channels.feishu.longconn", "Feishu", "feishu_app_id", "feishu_allow"),
    Channel("websocket", "ws", "mimi.channels.websocket.gateway", "a WebSocket chat"),
    Channel(SYSTEM, "sys", "mimi.services.heartbeat"),
]


def find(name):
    """The row of channel `name`, or None."""
    for row in TABLE:
        if row.name == name:
            return row
    return None


def get(name):
    """The row of channel `name`; ValueError naming the known channels when there is none."""
    row = find(name)
    if row is None:
        raise ValueError("unknown channel %r (known: %s)" % (name, ", ".join(r.name for r in TABLE)))
    return row


def available():
    """The rows whose code is in this firmware."""
    return [row for row in TABLE if row.module]


def tell_again(told, chat_id, window_s, most):
    """May a chat outside a channel's allow-list be told its id (again)? Once per
    window_s; told (chat id -> ticks_ms) keeps at most `most` chats. When all of them
    are still inside their window nobody new is told: strangers taking turns get at
    most `most` replies a window, not one each time."""
    import time

    now = time.ticks_ms()  # not wall time: an NTP step must not reopen the window
    span = window_s * 1000
    last = told.get(chat_id)
    if last is not None and 0 <= time.ticks_diff(now, last) < span:
        return False
    if chat_id not in told and len(told) >= most:
        old = min(told, key=lambda k: time.ticks_diff(told[k], now))
        if 0 <= time.ticks_diff(now, told[old]) < span:
            return False
        del told[old]
    told[chat_id] = now
    return True


def load(name):
    """Module mimi.channels.<name> (a channel's code used now and then), imported after
    a gc.collect() when it is not loaded: it lands in the lowest free holes instead
    of across the heap, so the big blocks a turn needs stay whole. mimi.drop() lets it
    go again."""
    import sys

    full = "mimi.channels." + name
    if full not in sys.modules:
        import gc

        gc.collect()
        __import__(full)
    return sys.modules[full]


def usage_text():
    """The usage ledger's report for a chat (/usage), or why there is none."""
    import mimi

    try:
        return mimi.run("usage.report usage.file", "report")["text"]
    except Exception as e:  # noqa: B902 - out of memory, a broken ledger file: say so
        return "No usage report now: %s %s" % (type(e).__name__, e)


def of_setting(key):
    """The row that starts with setting `key` (a channel's REPL shortcuts find it so)."""
    for row in TABLE:
        if row.needs == key:
            return row
    raise ValueError("no channel starts with setting %r" % key)


def of_session(key):
    """The row whose session prefix starts `key` ('<prefix>_<chat id>'), or None."""
    for row in TABLE:
        if key.startswith(row.prefix + "_"):
            return row
    return None


def spoken(words, last):
    """['a', 'b', 'c'], 'or' -> 'a, b or c' (for the texts that list channels)."""
    return ", ".join(words[:-1]) + " %s " % last + words[-1] if len(words) > 1 else "".join(words)


def configured(row, cfg):
    return row.module and (not row.needs or cfg.get(row.needs))


def owner():
    """(channel, chat_id) of the owner, who gets heartbeat and system cron results:
    the first id in the allow-list of the first configured channel that has one;
    None when there is none (the results are then only logged)."""
    from mimi.config.settings import cfg

    for row in TABLE:
        if row.allow and configured(row, cfg):
            ids = [x for x in (cfg.get(row.allow) or "").split(",") if x]
            if ids:
                return row.name, ids[0]
    return None
