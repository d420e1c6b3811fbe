# Charts on Telegram: /chart NAME [hours], or the device_history tool's chart:true. A
# device's history drawn on the board (channels/charts.py: into a temporary file, the
# drawing's code dropped after) and uploaded with sendPhoto as multipart/form-data, the
# file read a buffer at a time as it goes out (httpbody.Region), so the 29 KB picture
# is never held. Loaded for a chart and dropped after it, with the chart's code.
import mimi
from mimi import log, channels
from mimi.channels.telegram import send as out


async def chart(bot, chat_id, want):
    """want: the command's text ("/chart living_temp 48") or [name, hours]."""
    try:
        await channels.load("charts").chart(want, lambda *a: _send(bot, chat_id, *a),
                                            lambda why: out.plain(bot, chat_id, why))
    finally:
        mimi.drop("channels.charts")
        mimi.drop("channels.telegram.photo")


async def _send(bot, chat_id, name, hours, caption, part):
    httpbody = mimi.load("mimi.net.httpbody")  # (both threads load it)

    api = out._api(bot)
    if api is None:
        log.warning(out.TAG, "no connection to Telegram; chart for %s dropped", chat_id)
        return
    try:
        ctype, body = httpbody.form((("chat_id", chat_id), ("caption", caption)), "photo", name + ".png",
                                    "image/png", part)
        await api.call("sendPhoto", form=(ctype, body), chat=chat_id)  # (a 429 holds its chat)
        log.info(out.TAG, "chart (%s) sent to %s", caption, chat_id)
    except Exception as e:  # noqa: B902 - the flash, the heap or Telegram: say so
        log.error(out.TAG, "chart for %s failed: %s %s", chat_id, type(e).__name__, e)
        await out.plain(bot, chat_id, "The chart could not be sent: %s" % e)
