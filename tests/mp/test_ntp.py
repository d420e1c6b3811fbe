# SNTP client (services/sntp.py) against fake loopback NTP servers (tests/fakes/ntp.py); clock helpers.
import struct
from support import raises, fixture
from mimi import board
from mimi.board.clock import Clock, EPOCH_2000
from mimi.services import ntp, sntp

FIXTURES = ("fake_ntp",)
TIMEOUT = 30


def srv():
    return fixture("fake_ntp")


def test_request_packet():
    pkt, stamp = sntp.request()
    assert len(pkt) == 48 and pkt[0] == 0x23 and bytes(pkt[40:48]) == stamp


def test_parse_rejects_bad_replies():
    pkt, stamp = sntp.request()
    good = bytearray(48)
    good[0], good[1] = 0x24, 2
    good[24:32] = stamp
    good[40:48] = struct.pack("!II", 1893456000 + sntp.NTP_TO_UNIX, 1 << 31)
    t = sntp.parse(good, stamp)
    # an int, rounded: the board's floats are 32-bit (a float Unix time is off by up to 64 s)
    assert t == 1893456001 and isinstance(t, int)
    good[40:48] = struct.pack("!II", 1893456000 + sntp.NTP_TO_UNIX, (1 << 31) - 1)
    assert sntp.parse(good, stamp) == 1893456000
    raises(sntp.NTPError, sntp.parse, good[:40], stamp)
    for i, v in ((0, 0x23), (1, 0), (1, 16), (0, 0xE4)):  # client mode, KoD, bad stratum, LI=3
        bad = bytearray(good)
        bad[i] = v
        raises(sntp.NTPError, sntp.parse, bad, stamp)
    raises(sntp.NTPError, sntp.parse, good, b"12345678")
    zero = bytearray(good)
    zero[40:48] = bytes(8)
    raises(sntp.NTPError, sntp.parse, zero, stamp)


async def test_query_fake_server():
    s = srv()
    t = await sntp.aquery("127.0.0.1", s["good"])
    assert t == s["unix"] and isinstance(t, int)  # the fake sends .25 s: rounded down
    assert await sntp.aquery("127.0.0.1", s["era1"]) == s["unix_era1"]  # after the 2036 wrap
    for name, word in (("kod", "stratum"), ("client", "mode"), ("silent", "no reply")):
        e = None
        try:
            await sntp.aquery("127.0.0.1", s[name], 1)
        except sntp.NTPError as x:
            e = x
        assert e is not None and word in str(e), (name, e)


async def test_sync_sets_the_board_clock():
    s = srv()
    skew = board.clock.skew
    try:
        assert await ntp.sync_once(["127.0.0.1"], s["good"])
        assert abs(board.clock.unix() - s["unix"]) <= 2
        assert abs(ntp.last_sync - s["unix"]) <= 2
        assert ntp.clock_ready()
        # a silent server then a good one: the second one is used
        board.clock.skew = skew
        sntp.HOSTS[:] = ["127.0.0.1"]
        assert not await ntp.sync_once(["127.0.0.1"], s["kod"])
        assert "stratum" in ntp.last_error
        assert await ntp.sync_once(["127.0.0.1", "127.0.0.1"], s["good"])
    finally:
        board.clock.skew = skew


async def test_async_query_ignores_forged_reply_then_times_out():
    s = srv()
    e = None
    try:
        await sntp.aquery("127.0.0.1", s["forged"], 1)
    except sntp.NTPError as x:
        e = x
    assert e is not None and "no reply" in str(e)


def test_set_unix_on_a_2000_epoch_port():
    class T2000:
        def __init__(self):
            import time

            self.real = time
            self.now = 100  # 2000-01-01 00:01:40: the RTC was never set

        def time(self):
            return self.now

        def gmtime(self, secs):
            return self.real.gmtime(secs + EPOCH_2000)

    t = T2000()
    c = Clock(t)
    assert c.epoch_offset == EPOCH_2000 and not c.valid()
    t.now = 1893456000 - EPOCH_2000  # what board.set_unix() makes the RTC hold
    assert c.unix() == 1893456000 and c.valid()


async def test_wait_valid_returns_when_clock_is_set():
    import asyncio

    skew = board.clock.skew
    board.clock.skew = -board.clock.unix() + 1000  # back to 1970
    try:
        assert not ntp.clock_ready()
        waiter = asyncio.create_task(ntp.wait_valid())
        await asyncio.sleep_ms(20)
        assert not waiter.done()
        ntp.apply(1893456000)
        await asyncio.wait_for(waiter, 5)
        assert ntp.clock_ready()
    finally:
        board.clock.skew = skew


async def test_host_run_skips_sync():
    await ntp.run()  # returns at once on the host: the system clock is used
    assert board.NAME == "host"


def test_tz_s_is_the_one_local_offset():
    from mimi.config.settings import cfg, tz_s
    from mimi.memory import store
    from mimi.services import cron
    from mimi.tools.clock import now_text

    cfg.load()
    assert tz_s() == 0
    cfg.set("tz", "-08:00")
    assert tz_s() == -8 * 3600
    assert store.tz_s is tz_s and cron.Scheduler().tz is tz_s
    assert "UTC-08:00" in now_text()
    cfg.set("tz", "+05:30")
    assert tz_s() == 19800 and "UTC+05:30" in now_text()
