# Heartbeat: every `heartbeat_min` minutes (0 = off) look at /spiffs/HEARTBEAT.md;
# when it has open tasks, run an agent turn (the system channel, chat "heartbeat")
# that reads the file and acts on it. With nothing open there is no LLM call.
#
# A line is an open task unless, after leading spaces, it is empty, a "#" header,
# a checked box ("- [x]" / "* [x]", either case), a bare bullet or empty box, or
# inside an HTML comment (<!-- ... -->, which may span lines). Unchecked boxes
# ("- [ ] water the plants") and plain text count.
#
# Unlike MimiClaw, answers from the system channel reach a person: this module is
# the system channel's code (channels.TABLE), and its send() delivers every reply
# on it (heartbeat turns, cron jobs made on the REPL) to the owner, channels.owner()
# (the first chat of the first configured channel with an allow-list), except a
# heartbeat reply that is just HEARTBEAT_OK; with no owner they are logged.
import asyncio
from mimi import limits, log, fs, bus, channels

PATH = limits.SPIFFS + "/HEARTBEAT.md"
CHAT_ID = "heartbeat"
OK = "HEARTBEAT_OK"
PROMPT = ("Heartbeat check: read /spiffs/HEARTBEAT.md with read_file and follow any "
          "instructions or open tasks listed there. If something needs the user's "
          "attention, say it briefly. If nothing needs attention, reply with just: " + OK)

last_result = None  # what the last check did, for heartbeat_trigger()


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


def is_ok(text):
    t = (text or "").strip().strip("*_`.!\"' \n")
    return t.upper() == OK


def check(submit=None, path=PATH):
    """One heartbeat check. submit(msg) -> bool starts the agent turn (default: the
    inbound queue). Returns a sentence saying what happened."""
    global last_result
    tasks = read_tasks(path)
    if not tasks:
        last_result = "no open tasks in %s; no LLM call" % path
    else:
        submit = submit or bus.inbound.put
        if submit(bus.Msg(channels.SYSTEM, CHAT_ID, PROMPT, meta={"heartbeat": len(tasks), "stateless": True})):
            dest = channels.owner()
            last_result = "%d open task(s); heartbeat turn queued, answer goes to %s" % (
                len(tasks), "%s:%s" % dest if dest else "the log (no owner: %s)" % _no_owner())
        else:
            last_result = "%d open task(s) but the agent is busy; skipped this time" % len(tasks)
    log.info("heartbeat", last_result)
    return last_result


def _no_owner():
    return " or ".join("set %s and allow a chat in %s" % (r.needs, r.allow)
                       for r in channels.available() if r.allow)


async def send(msg, out=None):
    """The system channel's sender (replies to heartbeat and system cron turns): to
    the owner, unless it is a heartbeat's HEARTBEAT_OK."""
    if msg.kind != bus.REPLY:
        return
    text = msg.content or ""
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


async def run(sleep=asyncio.sleep):
    """Loop task (started by channels.start(), which registers send()): a check every
    heartbeat_min minutes (first one after one period), counted from when the clock
    is valid (SNTP)."""
    from mimi.config import cfg
    from mimi.services import ntp

    await ntp.wait_valid()
    waited = 0
    while True:
        await sleep(limits.HEARTBEAT_POLL_S)
        minutes = cfg.get("heartbeat_min")
        if not minutes:
            waited = 0
            continue
        waited += limits.HEARTBEAT_POLL_S
        if waited >= minutes * 60:
            waited = 0
            try:
                check()
            except Exception as e:
                log.exception("heartbeat", "check failed", e)


def trigger():
    """REPL: one check now."""
    print("heartbeat:", check())
