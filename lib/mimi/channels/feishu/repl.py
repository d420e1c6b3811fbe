# feishu_send(id, text) on the REPL, kept out of the channel's resident module:
# queued for the running channel, or sent here and now when the loop is stopped.
import asyncio
from mimi import bus
from mimi.config import settings as config
from mimi.channels.feishu import longconn as feishu


def send(rid, text):
    cfg = config.cfg
    rid = str(rid).strip()
    if rid[:3] not in ("ou_", "oc_"):
        print("Error: a Feishu id is an open_id (ou_...) or a chat_id (oc_...)")
        return
    if not (cfg.get("feishu_app_id") and cfg.get("feishu_app_secret")):
        print("Error: no Feishu app yet: set_feishu_creds(app_id, app_secret)")
        return
    try:
        asyncio.current_task()
    except RuntimeError:  # no loop runs (stopped with Ctrl-C): send from here
        bot = feishu.install()
        ok = asyncio.run(bot.send_text(rid, str(text)))
        if bot.api:
            bot.api.close()
        print("OK: sent to %s" % rid if ok else "Error: not sent (log_tail() says why)")
        return
    if bus.outbound.put(bus.Msg(feishu.CHANNEL, rid, str(text))):
        print("OK: queued for %s (log_tail() shows a failure)" % rid)
    else:
        print("Error: the outbound queue is full; try again")
