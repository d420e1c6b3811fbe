# Charts on Telegram: /chart NAME [hours], or the device_history tool's chart:true. A
# device's history drawn on the board (services/history/chart.py) and uploaded with
# sendPhoto as multipart/form-data: its Content-Length is known before the first byte
# (Chart.size()) and the PNG goes out as it is drawn, a few rows at a time between
# writes (http.Pieces), so the 29 KB picture is never held and the loop runs between
# them. Loaded for a chart and dropped after it, with the chart's code.
import mimi
from mimi import log, channels
from mimi.channels.telegram import send as out


async def chart(bot, chat_id, want):
    """want: the command's text ("/chart living_temp 48") or [name, hours]."""
    try:
        await channels.load("charts").chart(want, lambda name, hours: _send(bot, chat_id, name, hours),
                                            lambda why: out.plain(bot, chat_id, why))
    finally:
        mimi.drop("channels.charts")
        mimi.drop("channels.telegram.photo")


async def _send(bot, chat_id, name, hours):
    from mimi.config.settings import tz_s
    from mimi.net import httpbody
    from mimi.services.history import query
    from mimi.services.history.chart import Chart

    api = out._api(bot)
    if api is None:
        log.warning(out.TAG, "no connection to Telegram; chart for %s dropped", chat_id)
        return
    try:
        c = Chart(name, hours, tz_s(), query.units(name)[0])
        ctype, body = httpbody.form((("chat_id", chat_id), ("caption", "%s, last %s h" % (name, query.num(hours)))),
                                    "photo", name + ".png", "image/png", httpbody.Pieces(c.size(), c.pieces))
        await api.call("sendPhoto", form=(ctype, body), chat=chat_id)  # (a 429 holds its chat)
        log.info(out.TAG, "chart of %s (%s h) sent to %s", name, query.num(hours), chat_id)
    except Exception as e:  # noqa: B902 - the flash, the heap or Telegram: say so
        log.error(out.TAG, "chart for %s failed: %s %s", chat_id, type(e).__name__, e)
        await out.plain(bot, chat_id, "The chart could not be sent: %s" % e)
