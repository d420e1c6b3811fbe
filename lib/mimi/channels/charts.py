# A chart for a chat, what Telegram's and Feishu's senders share (telegram/photo.py,
# feishu/image.py draw and send it their way): the request read ("/chart NAME [hours]",
# or device_history's [name, hours]) and the history's code the chart loads dropped
# after it, whoever loaded it first. Loaded with them.
import sys
import mimi

_HISTORY = "mimi.services.history"


async def chart(want, draw, say):
    """await draw(name, hours); or await say(why) when there is no such history."""
    had = [m for m in sys.modules if m.startswith(_HISTORY)]
    try:
        from mimi.services.history import query

        try:
            name, hours = query.request(want) if isinstance(want, str) else (want[0], float(want[1]))
        except ValueError as e:
            return await say(str(e))
        await draw(name, hours)
    finally:
        for m in [m for m in sys.modules if m.startswith(_HISTORY) and m not in had]:
            mimi.unload(m)
