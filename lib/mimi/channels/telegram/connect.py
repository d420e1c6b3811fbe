# The Telegram poller's code for rare moments, loaded for the call and dropped
# (mimi.run): connecting to the Bot API (at boot, after a new token or base URL: the
# saved update offset read back), the waits for a token, for WiFi and for the clock,
# what to do after a poll failed (Telegram's refusals, the network), and the apology
# for replies that found no room. The state stays in the resident poller
# (channels/telegram/poller.py).
import json
from mimi import limits, log, bus
from mimi.config import settings as config
from mimi.channels.telegram import poller
from mimi.channels.telegram.poller import TAG, Api
from mimi.net import http
from mimi.services import wifi, ntp


def connect(bot, token):
    """A new poll connection for token; the offset saved for this bot read back."""
    close(bot)
    bot.bot_id = token.split(":", 1)[0]
    bot.poll_api = Api(config.cfg.get("tg_api_base"), token, limits.TG_POLL_TIMEOUT_S + limits.TG_HTTP_SLACK_S)
    bot.username = None
    bot.offset = bot.unsaved = 0
    bot.saved_offset = None
    try:
        with open(limits.TG_OFFSET_PATH) as f:
            bot.saved_offset = 0  # (the file is there: rewritten in place)
            d = json.load(f)
        if str(d.get("bot")) == str(bot.bot_id):
            bot.offset = bot.saved_offset = int(d.get("offset") or 0)
    except (OSError, ValueError, AttributeError, TypeError):
        pass


async def wait(bot, token):
    """The poller cannot poll (no token, WiFi down, or the clock not set): wait for
    the first of them -> True when it waited for WiFi (the backoff starts again)."""
    if not token:
        close(bot)
        log.info(TAG, "no bot token; Telegram idle until set_tg_token(...)")
        while not config.cfg.get("tg_token"):
            await bus.wait_event(bot.changed, 3600)
        return False
    if not wifi.online():
        bot.paused = True
        log.info(TAG, "WiFi offline; polling paused")
        network_lost(bot)  # (reconnect after)
        await wifi.wait_online()
        log.info(TAG, "WiFi back; polling resumes")
        bot.paused = False
        return True
    # The board boots at 2000-01-01: mbedTLS checks certificate dates
    # (MBEDTLS_HAVE_TIME_DATE), so every handshake fails until SNTP ran.
    log.info(TAG, "waiting for the clock (SNTP) before HTTPS")
    await ntp.wait_valid()
    return False


def failed(bot, e, backoff, conflict):
    """After poll failure e -> (seconds to wait, whether a change of the Telegram
    settings ends the wait early, next backoff, next conflict wait); 0 seconds: go
    round at once (the top of the loop waits for WiFi)."""
    if isinstance(e, poller.ApiError):  # (apierror.py, loaded by e or here)
        wifi.healthy()  # Telegram answered: the network is fine
        if e.code == 409:
            log.warning(TAG, "409 Conflict: another program is polling this bot (or a "
                        "webhook is set): %s; retrying in %d s", e.description, conflict)
            return conflict, True, backoff, min(conflict * 2, limits.TG_CONFLICT_MAX_S)
        if e.code == 429:
            wait = min(e.retry_after or backoff, limits.TG_RETRY_AFTER_MAX_S)
            log.warning(TAG, "429 Too Many Requests; waiting %d s", wait)
            return wait, False, backoff, conflict
        if e.code in (401, 404):
            log.error(TAG, "the bot token was refused (%s); check set_tg_token(...)", e)
            close(bot)
            return limits.TG_BAD_TOKEN_S, True, backoff, conflict
        log.warning(TAG, "getUpdates failed: %s; retry in %d s", e, backoff)
        return backoff, False, min(backoff * 2, limits.TG_BACKOFF_MAX_S), conflict
    # network, TLS, timeouts: the client reconnects next time
    if isinstance(e, (http.ConnectFailure, http.Timeout)):  # (net/httperr.py, loaded by e)
        wifi.suspect(TAG)  # a few in a row while "online": WiFi reconnects
        network_lost(bot)
    if not wifi.online():
        return 0, False, backoff, conflict
    bot.limit = max(1, bot.limit // 2)  # maybe too much for the heap or the deadline
    log.warning(TAG, "polling failed: %s %s; retry in %d s", type(e).__name__, e, backoff)
    return backoff, False, min(backoff * 2, limits.TG_BACKOFF_MAX_S), conflict


def close(bot):
    """The bot's connections closed (a new token, a token refused or taken away)."""
    for api in (bot.poll_api, bot.send_api):
        if api:
            api.close()
    bot.poll_api = bot.send_api = None


def network_lost(bot):
    """The network went away: the kept-alive sockets are dead, each Api reconnects
    before its next call."""
    for api in (bot.poll_api, bot.send_api):
        if api:
            api.stale = True


async def say_owed(bot):
    """The replies that found no room (Telegram.owe()) told, on the poll's connection."""
    while bot.owed:
        chat, mid = bot.owed.popitem()
        p = {"chat_id": chat, "text": (
            "Sorry, my answer did not fit in the board's free memory to be sent. It is saved in "
            "this chat: ask me to repeat it, shorter.")}
        try:
            if mid is not None:  # said by the turn's progress message (the answer so far, stale)
                p["message_id"] = mid
                try:
                    await bot.poll_api.call("editMessageText", p)
                except poller.ApiError as e:  # (gone, or not editable: below it, then)
                    log.warning(TAG, "telling %s in its progress message: %s", chat, e)
                    mid = None
                    del p["message_id"]
            if mid is None:
                await bot.poll_api.call("sendMessage", p)
            log.warning(TAG, "told %s that its reply found no room in the heap", chat)
        except Exception as e:  # (MemoryError too: not again)
            log.error(TAG, "telling %s that its reply found no room failed: %s", chat, e)

