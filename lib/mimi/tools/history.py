# device_history (SPEC §14): a logging device's min, max, mean and a dozen points in time
# over the last hours (services/history/summary.py, loaded for the answer and dropped);
# chart=true also sends the chart to the chat the turn is in (its channel draws it:
# a PNG on Telegram and Feishu, an SVG on the chat page).
import mimi
from mimi import bus, channels


def device_history(args, ctx):
    hours = args.get("hours")
    if hours is None:
        hours = 24
    if isinstance(hours, str):
        try:
            hours = float(hours.strip().rstrip("h"))
        except ValueError:
            pass
    if isinstance(hours, bool) or not isinstance(hours, (int, float)) or not 0 < hours <= 2400:
        return "Error: 'hours' is a number from 1 to 2400 (24 if not given)"
    from mimi.config.settings import tz_s

    out = mimi.run("services.history.summary services.history.query services.history.store services.history",
                   "answer", args.get("name"), hours, tz_s())
    if args.get("chart") and not out.startswith("Error"):
        out += "\n" + send_chart(ctx, args["name"], hours)
    return out


def send_chart(ctx, name, hours):
    """The chart of `name` to the turn's chat (its channel's sender draws it)."""
    dest = (ctx.channel, ctx.chat_id) if ctx and ctx.channel else None
    if dest and not channels.get(dest[0]).label:  # a cron or heartbeat turn: the owner's chat
        dest = channels.owner()
    if dest is None:
        return "(no chat to send a chart to here)"
    if not bus.outbound.put(bus.Msg(dest[0], dest[1], "%s, last %s h" % (name, hours), bus.REPLY,
                                    {"chart": [name, hours]})):
        return "(the chart was not sent: the outbound queue is full)"
    return "The chart was sent to the chat."
