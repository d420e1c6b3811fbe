# What a firing rule says (services/rules/__init__.py keeps the state; this is loaded for
# one firing and dropped): a notify rule's text, {name} and {value} filled in, to the
# chat the rule was made in (or the owner's, for one made on the REPL); an ask rule's
# prompt as an agent turn in that chat (the usage ledger's spend caps apply to it as to
# any turn). At most RULE_NOTICES_HOUR of them an hour, all rules together; the rest are
# counted and summed up in one line per chat when the hour is over. While the network
# is down notices wait (RULE_HELD_MAX of them; more are counted) and go out, or are summed
# up, when it is back; an ask then is not made (its moment has passed): it is logged.
import time
from micropython import const
from mimi import log, bus, channels, limits
import mimi.services.rules as engine

TAG = "rules"
_HOUR_MS = const(3600000)
# engine.notes, made by the first notice (a firmware whose rules never spoke holds none):
_HELD = const(0)  # notices waiting for the network: [((channel, chat), text)]
_MISSED = const(1)  # (channel, chat) -> notices beyond RULE_HELD_MAX or the hourly ceiling
_BEGAN = const(2)  # ticks_ms the notice hour began
_SENT = const(3)  # notices sent in it
NOTICE = {"notice": True}  # a notice's meta: not an agent's answer, so in no session (websocket/gateway.py)


def _rule(rid, rules=None):
    """Rule `rid` of the file (read for it, unless `rules` are)."""
    import mimi

    for r in rules if rules is not None else mimi.run("services.rules.upkeep", "read"):
        if r["id"] == rid:
            return r
    return None


def _dest(r):
    """(channel, chat id) a rule's notices go to, or None (no owner: only logged)."""
    if r.get("channel"):
        return r["channel"], r["chat_id"]
    return channels.owner()


def _notes():
    n = engine.notes
    if n is None:
        n = engine.notes = [[], {}, time.ticks_ms(), 0]
    return n


def _miss(dest):
    m = _notes()[_MISSED]
    m[dest] = m.get(dest, 0) + 1


def _room(now, dest):
    """May one more notice go out this hour? Else it is counted for the hour's summary."""
    n = _notes()
    if time.ticks_diff(now, n[_BEGAN]) >= _HOUR_MS:
        n[_BEGAN], n[_SENT] = now, 0
    if n[_SENT] >= limits.RULE_NOTICES_HOUR:
        _miss(dest)
        return False
    n[_SENT] += 1
    return True


def _out(dest, text):
    """A notice to a chat now, or kept while the network is down. -> sent."""
    from mimi.services import wifi

    if not wifi.online() or not bus.outbound.put(bus.Msg(dest[0], dest[1], text, bus.REPLY, NOTICE)):
        held = _notes()[_HELD]
        if len(held) < limits.RULE_HELD_MAX:
            held.append((dest, text))
        else:
            _miss(dest)
        return False
    return True


def fire(rid, name, value, now):
    """Rule `rid` fired on device `name` reading `value` (its text)."""
    r = _rule(rid)
    if r is None:
        return
    dest = _dest(r)
    words = (r.get("text") or r.get("prompt") or "").replace("{name}", name).replace("{value}", value)
    log.info(TAG, "rule %d (%s) fired: %s %s", rid, r["name"], name, value)
    if dest is None:
        log.info(TAG, "rule %d: no chat to tell (no owner set): %s", rid, words)
        return
    if not _room(now, dest):
        return
    if r["then"] == "notify":
        _out(dest, words)
        return
    from mimi.services import wifi

    if not wifi.online():
        log.warning(TAG, "rule %d: not asked while offline: %s", rid, words)
        return
    text = "[rule %d %r: %s %s] %s" % (rid, r["name"], name, value, words)
    if not bus.inbound.put(bus.Msg(dest[0], dest[1], text, meta={"rule": rid})):
        log.warning(TAG, "rule %d: the agent is busy; not asked: %s", rid, words)


def tell(ids, text, now):
    """Something about rules `ids` (a device that stopped answering) to their chats, once each."""
    import mimi

    told = []
    rules = mimi.run("services.rules.upkeep", "read")  # (once for them all: the file and its words)
    for rid in ids:
        r = _rule(rid, rules)
        dest = r and _dest(r)
        if dest and dest not in told and _room(now, dest):
            told.append(dest)
            _out(dest, "Rule %d (%s): %s" % (rid, r["name"], text))


def release(now):
    """Online again, or the hour is over: the notices that waited, each alone when they
    are few, else summed up in one message per chat with the count of those the
    ceiling (or the offline queue) held back."""
    n = _notes()
    held, n[_HELD] = n[_HELD], []
    if not held and time.ticks_diff(now, n[_BEGAN]) < _HOUR_MS:
        return  # the hour's count waits for its end
    missed, n[_MISSED] = n[_MISSED], {}
    by = {}
    for dest, text in held:
        by.setdefault(dest, []).append(text)
    for dest in missed:
        by.setdefault(dest, [])
    for dest, texts in by.items():
        more = missed.get(dest, 0)
        if not more and len(texts) <= 3:
            for t in texts:
                _out(dest, t)
            continue
        lines = ["While I could not send, %d notices came:" % (len(texts) + more)] if texts else []
        lines += ["- " + t for t in texts]
        if more:
            lines.append("(%d more not shown: rules send at most %d notices an hour and keep %d while "
                         "offline)" % (more, limits.RULE_NOTICES_HOUR, limits.RULE_HELD_MAX))
        _out(dest, "\n".join(lines))
