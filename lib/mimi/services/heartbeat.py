# Heartbeat: every `heartbeat_min` minutes (0 = off) look at /spiffs/HEARTBEAT.md;
# when it has open tasks, run an agent turn (the system channel, chat "heartbeat")
# that reads the file and acts on it. With nothing open there is no LLM call.
# Unlike MimiClaw, answers from the system channel reach a person: this module is
# the system channel's code (channels.TABLE), and its send() delivers every reply
# on it (heartbeat turns, cron jobs made on the REPL) to the owner, channels.owner()
# (the first chat of the first configured channel with an allow-list), except a
# heartbeat reply that is just HEARTBEAT_OK; with no owner they are logged.
# What the check does, and that delivery: services/hbcheck.py, loaded for each.
import asyncio
import mimi
from mimi import limits, log, bus

PATH = limits.SPIFFS + "/HEARTBEAT.md"
CHAT_ID = "heartbeat"
OK = "HEARTBEAT_OK"


def check(submit=None, path=PATH):
    """One heartbeat check (services/hbcheck.py). submit(msg) -> bool starts the agent
    turn (default: the inbound queue). Returns a sentence saying what happened."""
    return mimi.run("services.hbcheck", "check", submit, path)


async def send(msg, out=None):
    """The system channel's sender (replies to heartbeat and system cron turns): to
    the owner, unless it is a heartbeat's HEARTBEAT_OK (hbcheck.py's reply(), loaded
    for it; a status or partial goes nowhere)."""
    if msg.kind == bus.REPLY:
        mimi.run("services.hbcheck", "reply", msg, out)


async def run(sleep=asyncio.sleep):
    """Loop task (started by dispatch.start(), which registers send()): a check every
    heartbeat_min minutes (first one after one period), counted from when the clock
    is valid (SNTP). The period's work is _beat()'s: the frame that waits here holds
    little."""
    from mimi.services import ntp

    await ntp.wait_valid()
    waited = 0
    while True:
        await sleep(limits.HEARTBEAT_POLL_S)
        waited = _beat(waited + limits.HEARTBEAT_POLL_S)


def _beat(waited):
    """One poll period gone, `waited` seconds counted: the check when they make
    heartbeat_min minutes -> the seconds counted from now on."""
    from mimi.config.settings import cfg

    minutes = cfg.get("heartbeat_min")
    if not minutes:
        return 0
    if waited < minutes * 60:
        return waited
    try:
        check()
    except Exception as e:
        log.exception("heartbeat", "check failed", e)
    return 0


def trigger():
    """REPL: one check now."""
    print("heartbeat:", check())
