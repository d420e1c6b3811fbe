# A chart for a chat, what Telegram's and Feishu's senders share (telegram/photo.py,
# feishu/image.py send it their way): the request read ("/chart NAME [hours]", or
# device_history's [name, hours]) and the PNG drawn (services/history/chart.py).
#
# In two steps, so that the heap holds the larger of the two, not their sum: the PNG is
# drawn into a temporary file on the flash (limits.CHART_SPILL, outside /spiffs, a few
# rows per write and the loop let run between them), the history's code dropped, then
# the sender uploads the file, read a buffer at a time as it goes out (httpbody.Region).
# The file goes after, or at the next boot (startup.clean_tmp) if a reset came first.
# A flash with no room for it: the PNG goes out as it is drawn (httpbody.Pieces), the
# drawing's code and the connection then held at once. Loaded with the senders.
import sys
import asyncio
import mimi
from mimi import limits, log, fs

_HISTORY = "mimi.services.history"
_BODY = "mimi.net.httpbody"
_TAG = "charts"
_ROWS = 16  # pieces (about a row each) written between two turns of the loop


async def chart(want, send, say):
    """await send(name, hours, caption, part): part the PNG as a body part of the
    multipart upload (net/httpbody.py); or await say(why) when there is no such history."""
    from mimi.net import random_id

    had = [m for m in sys.modules if m.startswith(_HISTORY)]
    body = _BODY in sys.modules
    path = limits.CHART_SPILL % random_id(4)
    try:
        try:
            name, hours, caption, png = await _draw(want, path, had)
        except ValueError as e:
            return await say(str(e))
        except Exception as e:  # noqa: B902 - the flash, the heap: say so
            log.error(_TAG, "chart of %s failed: %s %s", want, type(e).__name__, e)
            return await say("The chart could not be drawn: %s" % e)
        if isinstance(png, int):
            _drop(had)  # (drawn: the history's code goes before the upload)
        httpbody = mimi.load("mimi.net.httpbody")  # (both threads load it)

        part = httpbody.Region(path, 0, png) if isinstance(png, int) else httpbody.Pieces(png.size(), png.pieces)
        png = None
        await send(name, hours, caption, part)
    finally:
        _drop(had)
        if not body:
            mimi.unload(_BODY)
        fs.remove(path)


def _drop(had, names=None):
    """The history's modules loaded since (those of `names` only, when given) forgotten."""
    gone = [m for m in sys.modules if m.startswith(_HISTORY) and m not in had and
            (names is None or m[len(_HISTORY) + 1:] in names)]
    for m in gone:
        mimi.unload(m)
    if gone:
        import gc

        gc.collect()


async def _draw(want, path, had):
    """The chart drawn into the file at path -> (name, hours, caption, its bytes), or
    with the Chart in place of its bytes when the flash has no room for it."""
    from mimi.config.settings import tz_s

    # The agent's device_history loads and drops the same modules (mimi.run): loaded
    # under the flash's lock, so that neither thread takes one half-made (MicroPython
    # has no import lock); used outside it (store.py takes its own lock, then the flash's)
    query = mimi.load(_HISTORY + ".query")  # (store.py with it)
    Chart = mimi.load(_HISTORY + ".chart").Chart
    name, hours = query.request(want) if isinstance(want, str) else (want[0], float(want[1]))
    c = Chart(name, hours, tz_s(), query.units(name)[0])
    caption = "%s, last %s h" % (name, query.num(hours))
    query = None
    _drop(had, ("store", "query"))  # (the chart keeps what it read: their code can go)
    f = None
    try:
        with fs.lock:
            f = open(path, "wb")
        n = k = 0
        for p in c.pieces():
            with fs.lock:
                n += f.write(p)
            k += 1
            if k % _ROWS == 0:
                await asyncio.sleep_ms(0)
        with fs.lock:
            f.close()
        f = None
        if n != c.size():
            raise OSError("the chart's file has %d bytes, not %d" % (n, c.size()))
        return name, hours, caption, n
    except OSError as e:  # (most likely no room on the flash): sent as it is drawn
        log.warning(_TAG, "%s: the chart goes as it is drawn (%s)", path, fs.why(e))
        return name, hours, caption, c
    finally:
        if f:
            with fs.lock:
                f.close()
