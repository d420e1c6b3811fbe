# What the Telegram tests share (test_telegram*.py): the fake Bot API's control
# (tests/fakes/telegram.py) and a bot started against it. A module of its own, small: a
# test in a capped heap imports it without test_telegram.py's ~50 KB of source.
import asyncio
import support
import tghttp
from tghttp import until
from mimi import bus, limits
from mimi.config import settings as config
from mimi.channels.telegram import poller as telegram
from mimi.services import wifi

cfg = config.cfg
ALLOWED = 42
CHAT = str(ALLOWED)  # (bot.typing's keys: the chat ids as the bus has them)


def tg():
    return support.fixture("fake_telegram")


async def control(what, obj=None):
    return await tghttp.request_json(tg()["base_url"], "POST" if obj is not None else "GET",
                                     "/_control/" + what, obj)


async def state():
    return await control("state")


async def update(**spec):
    return (await control("update", spec))["update_ids"][0]


async def fail(**rule):
    await control("fail", rule)


def setup():
    cfg.load()
    cfg.update({"tg_token": tg()["token"], "tg_api_base": tg()["base_url"], "tg_allow": str(ALLOWED)})
    limits.TG_BACKOFF_MIN_S = 1
    limits.TG_CONFLICT_MIN_S = 1
    while bus.inbound.get_nowait():
        pass


def make_bot():
    if not wifi.online():  # the host's always-connected WLAN: the supervisor goes online at once
        asyncio.create_task(wifi.supervisor.run())
    return telegram.Telegram()


async def started():
    b = make_bot()
    task = asyncio.create_task(b.run())
    await until(lambda: b.username, "getMe")
    return b, task


async def inbound():
    return await until(bus.inbound.get_nowait, "a message on bus.inbound")


def sent_to(st, chat):
    return [m for m in st["sent"] if m["chat_id"] == chat]


async def _confirmed(uid):
    st = await state()
    return st if st["offset"] > uid else None


CJK = {"text": "\u4e2d", "repeat": 8000}  # ~48 KB as escaped JSON (the fake sends \\uXXXX)


async def _flood_then_owner():
    """Ten ~48 KB updates from a stranger, then the owner's message: the owner's
    reaches the agent and every update is confirmed. -> the fake's state."""
    for _ in range(10):
        await update(chat_id=666, **CJK)
    last = await update(chat_id=ALLOWED, text="the owner")
    b, task = await started()
    assert (await inbound()).content == "the owner"
    st = await until(lambda: _confirmed(last), "every update confirmed")
    task.cancel()
    return st
