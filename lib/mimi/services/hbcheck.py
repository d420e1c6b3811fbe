# One heartbeat check: the open tasks in HEARTBEAT.md and, when there are any,
# the system turn that acts on them. Loaded by services/heartbeat.py for a check
# (every heartbeat_min minutes, or heartbeat_trigger()) and dropped after it; and
# for a system turn's reply (heartbeat.send()): to the owner, unless HEARTBEAT_OK.
#
# A line is an open task unless, after leading spaces, it is empty, a "#" header,
# a checked box ("- [x]" / "* [x]", either case), a bare bullet or empty box, or
# inside an HTML comment (<!-- ... -->, which may span lines). Unchecked boxes
# ("- [ ] water the plants") and plain text count.
from mimi import limits, log, fs, bus, channels
from mimi.services.heartbeat import PATH, CHAT_ID, OK

PROMPT = ("Heartbeat check: read /spiffs/HEARTBEAT.md with read_file and follow any "
          "instructions or open tasks listed there. If something needs the user's "
          "attention, say it briefly. If nothing needs attention, reply with just: " + OK)


def open_tasks(text):
    """The actionable lines of HEARTBEAT.md text."""
    out = []
    in_comment = False
    for raw in text.split("\n"):
        line = raw.strip()
        # drop HTML comments, which may open and close anywhere on the line
        kept = ""
        while line:
            if in_comment:
                end = line.find("-->")
                if end < 0:
                    line = ""
                else:
                    in_comment = False
                    line = line[end + 3:]
            else:
                start = line.find("<!--")
                if start < 0:
                    kept += line
                    line = ""
                else:
                    kept += line[:start]
                    in_comment = True
                    line = line[start + 4:]
        line = kept.strip()
        if not line or line.startswith("#"):
            continue
        low = line.lower()
        if low[:5] in ("- [x]", "* [x]"):
            continue
        if low in ("-", "*", "- [ ]", "* [ ]", "-[ ]"):
            continue
        out.append(line)
    return out


def read_tasks(path=PATH):
    try:
        return open_tasks(fs.read_text(path, limits.HEARTBEAT_FILE_MAX))
    except OSError:
        return []  # no file: nothing to do


def check(submit=None, path=PATH):
    """One heartbeat check. submit(msg) -> bool starts the agent turn (default: the
    inbound queue). Returns a sentence saying what happened."""
    tasks = read_tasks(path)
    capped = tasks and _capped()
    if not tasks:
        result = "no open tasks in %s; no LLM call" % path
    elif capped:
        result = "%d open task(s) but %s; no LLM call" % (len(tasks), capped)
    else:
        submit = submit or bus.inbound.put
        if submit(bus.Msg(channels.SYSTEM, CHAT_ID, PROMPT, meta={"heartbeat": len(tasks), "stateless": True})):
            dest = channels.owner()
            result = "%d open task(s); heartbeat turn queued, answer goes to %s" % (
                len(tasks), "%s:%s" % dest if dest else "the log (no owner: %s)" % _no_owner())
        else:
            result = "%d open task(s) but the agent is busy; skipped this time" % len(tasks)
    log.info("heartbeat", result)
    return result


def _capped():
    """Why the usage ledger refuses LLM calls now, or None (usage/ledger.py)."""
    from mimi.usage import ledger as usage

    return usage.check((channels.SYSTEM, CHAT_ID))


def _no_owner():
    return " or ".join("set %s and allow a chat in %s" % (r.needs, r.allow)
                       for r in channels.available() if r.allow)


def is_ok(text):
    t = (text or "").strip().strip("*_`.!\"' \n")
    return t.upper() == OK


def reply(msg, out=None):
    """heartbeat.send(): a system turn's reply to the owner, unless it is a
    heartbeat's HEARTBEAT_OK."""
    text = "".join(bus.pieces(msg.content))  # (a system turn's answer is never streamed: a str)
    log.info(channels.SYSTEM, "%s: %s", msg.chat_id, text[:128])
    if msg.chat_id == CHAT_ID and is_ok(text):
        return
    dest = channels.owner()
    if dest is None:
        return
    if msg.chat_id != CHAT_ID:
        text = "[%s] %s" % (msg.chat_id, text)
    out = bus.outbound if out is None else out  # an empty Queue is falsy
    if not out.put(bus.Msg(dest[0], dest[1], text, bus.REPLY)):
        log.warning("heartbeat", "outbound queue full; result for %s:%s only logged", dest[0], dest[1])
