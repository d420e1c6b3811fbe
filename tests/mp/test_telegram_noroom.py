# A Telegram reply that finds no room in the heap before any of it went (the dispatcher
# sends it again after freeing, or its apology, or the poller owes the chat its word),
# on a turn whose progress message is on the chat: it becomes the answer, never stays
# a stale partial.
from mimi import bus, limits
from mimi.channels import dispatch
import test_telegram as tt
from tghttp import until

FIXTURES = ("fake_telegram",)
HEAPSIZE = "2m"
TIMEOUT = 120
setup = tt.setup  # (the runner's: tgbot.py's)


async def _answering():
    """A chat with its turn's progress message showing the answer so far."""
    b, task = await tt.started()
    limits.TG_TYPING_S = 1
    limits.TG_PROGRESS_AFTER_S = 0
    await tt.update(chat_id=tt.ALLOWED, text="hi")
    await tt.inbound()
    await b.send(bus.Msg("telegram", tt.ALLOWED, "working", kind=bus.STATUS))
    await until(lambda: tt._sent_n(1), "the progress message")
    await b.send(bus.Msg("telegram", tt.ALLOWED, "It is sun", bus.PARTIAL))
    await until(lambda: tt._edits_n(1), "the answer so far")
    return b, task


async def test_a_reply_that_found_no_room_before_it_went_still_ends_in_its_progress_message():
    # the heap runs out before the reply's first part is made (the turn's progress message
    # on the chat): nothing went, so the dispatcher frees what it can and sends it again.
    # The retry had lost the turn's Status (taken off bot.typing by the first try): the
    # answer came as a new message below the streamed partial, left standing stale
    from mimi import channels

    b, task = await _answering()
    fmt = channels.load("telegram.format")
    render, calls = fmt.render_html, []

    def failing(runs):
        calls.append(1)
        if len(calls) == 1:
            raise MemoryError("memory allocation failed, allocating 4097 bytes")
        return render(runs)

    fmt.render_html = failing
    st = await tt._through_a_lane(b, "**Sunny** in Lisbon")
    assert calls == [1]  # the retry loaded the formatter again
    assert [m["visible"] for m in st["sent"]] == ["Sunny in Lisbon"], st["sent"]
    assert st["deleted"] == [] and st["edits"][-1]["text"] == "<b>Sunny</b> in Lisbon", st["edits"]
    assert tt.CHAT not in b.typing and b.send_api is None
    task.cancel()


async def test_a_reply_that_never_found_room_leaves_no_partial_standing():
    # the same, and neither the reply nor the dispatcher's apology finds room: the poller
    # owes the chat its word (Telegram.owe()), said on its own connection by editing the
    # progress message, not as a line below the stale partial; the chat keeps no Status
    # (its send connection closes)
    from mimi import channels

    b, task = await _answering()
    tgsend = channels.load("telegram.send")
    parts, calls = tgsend._parts, []

    async def failing(*a):
        calls.append(1)
        raise MemoryError("memory allocation failed, allocating 4097 bytes")

    tgsend._parts = failing
    try:
        lane = dispatch.Lane("telegram", b.send, b.owe)
        lane.push(bus.Msg("telegram", tt.ALLOWED, "**Sunny** in Lisbon"))
        await until(lambda: lane.task is None, "the lane's task ended")
    finally:
        tgsend._parts = parts
    assert len(calls) == 3  # the reply, again, the apology
    assert tt.CHAT not in b.typing
    st = await until(lambda: tt._edits_n(2), "the owed word")
    assert [m["visible"] for m in st["sent"]] == [st["edits"][-1]["text"]], st["sent"]
    assert st["sent"][0]["visible"].startswith("Sorry, my answer did not fit"), st["sent"]
    task.cancel()


async def test_a_poll_that_found_no_room_holds_nothing_of_it_while_it_waits():
    # a poll that runs out of heap while its answer is read waits its back-off before
    # the next: what its batch took (an update's buffer, the updates read) is not held
    # by the poller's frame meanwhile (it was, until the next poll replaced it)
    import gc
    from mimi import log
    from mimi.channels.telegram import poller

    limits.TG_BACKOFF_MIN_S = 30
    held = []

    class Hog(poller.Updates):
        def __call__(self, mv):
            self.buf = bytearray(40000)  # (an update being read)
            gc.collect()
            held.append(gc.mem_alloc())
            raise MemoryError("memory allocation failed, allocating 4097 bytes")

    await tt.update(chat_id=tt.ALLOWED, text="hi")
    updates, poller.Updates = poller.Updates, Hog
    try:
        b, task = await tt.started()
        await until(lambda: any("polling found no room" in x for x in log.recent()), "the failed poll")
    finally:
        poller.Updates = updates
    gc.collect()
    assert held and gc.mem_alloc() < held[0] - 30000, (held, gc.mem_alloc())
    task.cancel()
