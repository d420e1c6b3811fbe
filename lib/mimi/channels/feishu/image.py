# Charts on Feishu: /chart NAME [hours], or the device_history tool's chart:true. The
# PNG drawn on the board (services/history/chart.py) is uploaded through Feishu's image
# API (POST /open-apis/im/v1/images, multipart/form-data, image_type=message: the app
# needs the im:resource permission), read from the file it was drawn into
# (channels/charts.py) as it goes out, then sent as an image message. Without that permission (Feishu answers 99991672) the chart
# comes as a text summary (min, max, mean and a dozen points: what device_history
# says). Loaded for a chart and dropped after it, with the chart's code.
import json
import mimi
from mimi import log, channels

TAG = "feishu"
IMAGES = "/open-apis/im/v1/images"
NO_SCOPE = (99991672, 99991679)  # access denied: the app lacks a permission (scope)


async def chart(bot, rid, want):
    """want: the command's text ("/chart living_temp 48") or [name, hours]."""
    try:
        await channels.load("charts").chart(want, lambda *a: _send(bot, rid, *a),
                                            lambda why: bot.send_text(rid, why))
    finally:
        if bot.api:
            bot.api.close()
        mimi.drop("channels.charts")
        mimi.drop("channels.feishu.image")


async def _send(bot, rid, name, hours, caption, part):
    from mimi.config.settings import tz_s
    from mimi.channels.feishu.longconn import ApiError, MESSAGES

    try:
        key = await _upload(bot, name, part)
        body = json.dumps({"receive_id": rid, "msg_type": "image", "content": json.dumps({"image_key": key})})
        await bot._post(MESSAGES + ("chat_id" if rid.startswith("oc_") else "open_id"), body.encode(), False)
        log.info(TAG, "chart (%s) sent to %s", caption, rid)
        return
    except ApiError as e:
        if e.code not in NO_SCOPE:
            log.error(TAG, "chart for %s failed: %s", rid, e)
            await bot.send_text(rid, "The chart could not be sent: %s" % e)
            return
        log.warning(TAG, "no image upload (%s): the app needs the im:resource permission; "
                    "the chart goes as text", e)
    except Exception as e:  # noqa: B902 - the flash, the heap: say so
        log.error(TAG, "chart for %s failed: %s %s", rid, type(e).__name__, e)
        await bot.send_text(rid, "The chart could not be sent: %s" % e)
        return
    query = mimi.load("mimi.services.history.query")  # (the agent's device_history loads them too)
    summary = mimi.load("mimi.services.history.summary")
    await bot.send_text(rid, summary.text(summary.summary(name, hours), tz_s(), *query.units(name)) +
                        "\n(a picture needs the app's im:resource permission)")


async def _upload(bot, name, part):
    """The chart (part: the PNG as a body part) uploaded -> its image_key."""
    httpbody = mimi.load("mimi.net.httpbody")  # (both threads load it)
    from mimi.channels.feishu.longconn import ApiError, NO_TEXT

    ctype, body = httpbody.form((("image_type", "message"),), "image", name + ".png", "image/png", part)
    obj = await bot._api().call("POST", IMAGES, body, ctype=ctype)
    key = (obj.get("data") or {}).get("image_key")
    if not isinstance(key, str) or not key:
        raise ApiError(NO_TEXT, "no image_key in the answer")
    return key
