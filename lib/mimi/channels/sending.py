# The chat channels' retrying send, one copy for Telegram (telegram/send.py) and Feishu: a
# message is sent again only when the service answered that it did not take it (the
# channel's `again` says which answers) or the connection was never made, so a retry
# cannot duplicate it. hold (the agent's replies): while WiFi is down or the service
# cannot be reached at all, the message is kept and tried again (capped backoff)
# instead of given up. Also the lines that tell a chat what of its replies could not be
# sent (missing(), lost()). Loaded by a sender when it sends.
import asyncio
from mimi import limits, log
from mimi.net import http
from mimi.services import wifi


async def deliver(attempt, again, hold, tag, online, lost):
    """-> await attempt(); raises the last error. again(e): did the service refuse
    without taking the message (e.retry_after: its wait)? online(): awaited before each
    try when holding; lost(): after a connection that failed."""
    tries = held = 0
    while True:
        if hold:
            await online()
        try:
            return await attempt()
        except Exception as e:  # noqa: B902 - sorted below; anything else is raised
            failed = isinstance(e, http.ConnectFailure)  # (net/httperr.py: loaded by the first error)
            if failed:
                wifi.suspect(tag)
                lost()
            if not (failed or again(e)):
                raise
            if hold and failed:
                wait = min(limits.SEND_HOLD_MIN_S << min(held, 6), limits.SEND_HOLD_MAX_S)
                held += 1
            else:
                if tries >= limits.SEND_RETRIES:
                    raise
                wait = min(getattr(e, "retry_after", None) or 1 << tries, limits.SEND_RETRY_AFTER_MAX_S)
                tries += 1
            log.warning(tag, "sending failed (%s); retry in %d s", e, wait)
        await asyncio.sleep(wait)


def missing(parts, n, why):
    """The line that tells a chat which parts of a reply the service refused for good
    (their numbers, of n) and its reason: said once, after the reply's last part."""
    what = "this reply" if n == 1 else "part%s %s of %d" % ("s" if len(parts) > 1 else "", ", ".join(
        str(k) for k in parts), n)
    return "(%s could not be sent: %s)" % (what, why[:limits.LLM_ERROR_BODY_MAX] if why else "refused")


def lost(n):
    """The line that tells a chat that n replies to it were dropped from its channel's
    full lane (channels/dispatch.py): said once, when the lane has caught up."""
    return "(%s could not be sent: too many messages were waiting to go out)" % (
        "an earlier reply" if n == 1 else "%d earlier replies" % n)
