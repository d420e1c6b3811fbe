# The outbound dispatcher (lib/mimi/channels/dispatch.py): routing by channel, order
# within a channel, and a slow channel not holding up the others.
import asyncio
from support import raises
from mimi import bus, log
from mimi.channels import dispatch

TIMEOUT = 60


async def test_routes_by_channel_keeps_order_and_slow_channel_blocks_nobody():
    got = []
    gate = asyncio.Event()

    async def slow(msg):
        await gate.wait()  # stuck until the test opens it
        got.append(("slow", msg.content))

    async def fast(msg):
        got.append(("fast", msg.content))

    dispatch.register("telegram", slow)
    dispatch.register("websocket", fast)
    task = asyncio.create_task(dispatch.run())
    for i in range(3):
        assert bus.outbound.put(bus.Msg("telegram", "1", "t%d" % i))
        assert bus.outbound.put(bus.Msg("websocket", "a", "w%d" % i, bus.STATUS if i == 0 else bus.REPLY))
    assert bus.outbound.put(bus.Msg("system", "cron", "for the log only"))  # not running here
    e = raises(ValueError, bus.Msg, "nowhere", "x", "lost")  # never a message at all
    assert "unknown channel 'nowhere'" in str(e) and "telegram" in str(e)
    for _ in range(200):
        if len(got) == 3:
            break
        await asyncio.sleep_ms(5)
    assert got == [("fast", "w0"), ("fast", "w1"), ("fast", "w2")]  # telegram still stuck
    gate.set()
    for _ in range(200):
        if len(got) == 6:
            break
        await asyncio.sleep_ms(5)
    assert got[3:] == [("slow", "t0"), ("slow", "t1"), ("slow", "t2")]
    lines = "\n".join(log.recent())
    assert "system is not running; reply to cron only logged: for the log only" in lines
    task.cancel()


async def test_a_failing_send_does_not_stop_the_lane():
    got = []

    async def flaky(msg):
        if msg.content == "bad":
            raise OSError(104)
        got.append(msg.content)

    dispatch.register("websocket", flaky)
    task = asyncio.create_task(dispatch.run())
    for text in ("one", "bad", "two"):
        assert bus.outbound.put(bus.Msg("websocket", "a", text))
    for _ in range(200):
        if len(got) == 2:
            break
        await asyncio.sleep_ms(5)
    assert got == ["one", "two"]
    assert "sending" in "\n".join(log.recent())
    task.cancel()


async def test_a_reply_whose_second_try_fails_otherwise_does_not_stop_the_lane():
    # a reply finds no room, and sent again after room was made it fails otherwise (the
    # connection reset): logged, and the messages behind it still go (the lane's task
    # ended with the error: they waited for the next message to start it again)
    got = []

    async def send(msg):
        if msg.content == "big":
            got.append("try")
            raise MemoryError("memory allocation failed, allocating 9000 bytes") if len(got) == 1 else OSError(104)
        got.append(msg.content)

    lane = dispatch.Lane("websocket", send)
    lane.push(bus.Msg("websocket", "a", "big"))
    lane.push(bus.Msg("websocket", "a", "next"))
    for _ in range(200):
        if lane.task is None:
            break
        await asyncio.sleep_ms(5)
    assert got == ["try", "try", "next"], got
    assert "sending" in "\n".join(log.recent())


def test_lane_overflow_drops_status_first():
    lane = dispatch.Lane("telegram", None)
    import mimi.limits as limits

    lane.push(bus.Msg("telegram", "1", "working", bus.STATUS))
    for i in range(limits.DISPATCH_LANE_MAX - 1):
        lane.push(bus.Msg("telegram", "1", "r%d" % i))
    lane.push(bus.Msg("telegram", "1", "newest"))
    assert len(lane.items) == limits.DISPATCH_LANE_MAX
    assert all(m.kind == bus.REPLY for m in lane.items)  # the status made room
    lane.push(bus.Msg("telegram", "1", "newer still"))
    assert lane.items[0].content == "r1" and lane.items[-1].content == "newer still"
    assert "not keeping up" in "\n".join(log.recent())


async def _overflow(chats):
    """A lane held at its first message while DISPATCH_LANE_MAX replies wait behind it,
    then one more for each of `chats` (each pushes out the oldest waiting reply), then
    let go -> what was sent, in order, as (chat, text)."""
    import mimi.limits as limits

    got = []
    gate = asyncio.Event()

    async def slow(msg):
        await gate.wait()
        got.append((msg.chat_id, msg.content))

    lane = dispatch.Lane("telegram", slow)
    lane.push(bus.Msg("telegram", "0", "held"))
    await asyncio.sleep_ms(10)  # (taken by the lane's task, waiting at the gate)
    for i, chat in enumerate(chats):
        lane.push(bus.Msg("telegram", chat, "old%d" % i))
    for i in range(limits.DISPATCH_LANE_MAX):
        lane.push(bus.Msg("telegram", "0", "r%d" % i))
    assert len(lane.items) == limits.DISPATCH_LANE_MAX  # (bounded)
    gate.set()
    for _ in range(2000):  # (a hang guard: 10 s)
        if lane.task is None:
            break
        await asyncio.sleep_ms(5)
    assert lane.task is None
    return got


async def test_a_reply_dropped_from_a_full_lane_is_told_to_its_chat_once():
    # a full lane drops its oldest reply (kept bounded, logged); the person it was for
    # is told, once the lane has caught up, in one short line however many of theirs
    # went; nobody else is told anything. Without it they never learnt of it.
    import mimi.limits as limits

    got = await _overflow(["1", "1", "1", "2"])
    said = [g for g in got if g[1].startswith("(")]
    assert sorted(said) == [("1", "(3 earlier replies could not be sent: too many messages were waiting to go out)"),
                            ("2", "(an earlier reply could not be sent: too many messages were waiting to go out)")], got
    assert got[:-2] == [("0", "held")] + [("0", "r%d" % i) for i in range(limits.DISPATCH_LANE_MAX)], got
    assert "not keeping up" in "\n".join(log.recent())
    got = await _overflow(["1"])  # told again after another overflow
    assert got[-1] == ("1", "(an earlier reply could not be sent: too many messages were waiting to go out)"), got


async def test_a_full_lane_tells_at_most_a_few_chats():
    # the chats to tell are kept for DISPATCH_LOST_MAX of them: a lane that overflows
    # for many chats (a flood) says no more than that, and holds no more
    import mimi.limits as limits

    chats = [str(c) for c in range(1, limits.DISPATCH_LOST_MAX + 4)]
    got = await _overflow(chats)
    said = [g[0] for g in got if g[1].startswith("(")]
    assert sorted(said) == chats[:limits.DISPATCH_LOST_MAX], got
    assert len(got) == 1 + limits.DISPATCH_LANE_MAX + limits.DISPATCH_LOST_MAX


def test_partials_waiting_in_a_lane_are_coalesced_and_dropped_first():
    lane = dispatch.Lane("telegram", None)
    import mimi.limits as limits

    for text in ("He", "Hell", "Hello"):
        lane.push(bus.Msg("telegram", "1", text, bus.PARTIAL))
    lane.push(bus.Msg("telegram", "2", "Ot", bus.PARTIAL))  # another chat's: its own
    assert [(m.chat_id, m.content) for m in lane.items] == [("1", "Hello"), ("2", "Ot")]
    lane.push(bus.Msg("telegram", "1", "Hello!"))  # the reply closes it: what follows is new
    lane.push(bus.Msg("telegram", "1", "N", bus.PARTIAL))
    assert [m.content for m in lane.items] == ["Hello", "Ot", "Hello!", "N"]
    while len(lane.items) < limits.DISPATCH_LANE_MAX:
        lane.push(bus.Msg("telegram", "3", "r"))
    lane.push(bus.Msg("telegram", "3", "last"))
    assert [m.content for m in lane.items[:2]] == ["Ot", "Hello!"]  # the oldest partial went
