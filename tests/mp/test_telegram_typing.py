# A turn's "typing" in a Telegram chat ending (TG_TYPING_MAX_S) with no progress message
# shown and no reply come (a refused cron turn, an empty answer): its Status goes, not
# kept until the chat writes again with the sending connection and code it holds.
from mimi import bus, limits
import test_telegram as tt
from tghttp import until

FIXTURES = ("fake_telegram",)
HEAPSIZE = "2m"
TIMEOUT = 120
setup = tt.setup  # (the runner's: tgbot.py's)


async def test_a_turn_that_ends_with_no_reply_and_no_message_keeps_no_status():
    limits.TG_TYPING_S = 1
    limits.TG_PROGRESS_AFTER_S = 3600  # no progress message
    limits.TG_TYPING_MAX_S = 1
    b, task = await tt.started()
    await tt.update(chat_id=tt.ALLOWED, text="hi")
    await tt.inbound()
    await b.send(bus.Msg("telegram", tt.ALLOWED, "working", kind=bus.STATUS))
    typing = b.typing[tt.CHAT].task
    await until(typing.done, "the typing's end")
    st = await tt.state()
    assert st["sent"] == [] and tt.CHAT not in b.typing, (st["sent"], b.typing)
    task.cancel()
