# mimi.dns: the loop's resolver against a fake DNS server (tests/fakes/dns.py):
# answers, CNAME chains, NXDOMAIN, strays and silence, the cache, and the loop
# running on while an answer is awaited.
import os
import asyncio

import support
from mimi import limits
from mimi.net import dns

FIXTURES = ("fake_dns", "http_env")


def server():
    return ("127.0.0.1", support.fixture("fake_dns")["port"])


def setup():
    dns._cache.clear()
    limits.DNS_TIMEOUT_MS = 1000  # module constant, shortened: a silent server costs 2 tries of 1 s, not of 2


async def test_answers_cname_and_addresses():
    assert await dns.resolve("api.telegram.test", server()) == "127.0.0.1"
    assert await dns.resolve("alias.example.test", server()) == "127.0.0.2"  # CNAME, then A
    assert await dns.resolve("10.1.2.3", server()) == "10.1.2.3"  # an address is no question
    e = None
    try:
        await dns.resolve("nowhere.example.test", server())
    except OSError as err:
        e = err
    assert e is not None and "no such name" in str(e) and "nowhere.example.test" in str(e), e


async def test_forged_reply_ignored_silence_times_out():
    assert await dns.resolve("forged.example.test", server()) == "127.0.0.1"  # not 10.6.6.6
    e = None
    try:
        await dns.resolve("silent.example.test", server())
    except OSError as err:
        e = err
    assert e is not None and e.errno == dns.ETIMEDOUT and "silent.example.test" in str(e), e


async def test_cache_and_last_address_when_the_server_goes_quiet():
    assert await dns.resolve("api.telegram.test", server()) == "127.0.0.1"
    quiet = ("127.0.0.1", 9)  # nothing answers there
    assert await dns.resolve("api.telegram.test", quiet) == "127.0.0.1"  # cached
    ip, _ = dns._cache["api.telegram.test"]
    dns._cache["api.telegram.test"] = (ip, dns.time.ticks_add(dns.time.ticks_ms(), -1))  # expired
    with support.Capture():
        assert await dns.resolve("api.telegram.test", quiet) == "127.0.0.1"  # stale, logged
    from mimi import log

    assert any("using its last address" in line for line in log.recent(5))
    for i in range(limits.DNS_CACHE_MAX - 1):  # a full cache: the soonest to expire makes room
        dns._cache["n%d.test" % i] = ("1.1.1.1", dns.time.ticks_add(dns.time.ticks_ms(), 100000 + i))
    await dns.resolve("real.example.test", server())
    assert len(dns._cache) == limits.DNS_CACHE_MAX and "real.example.test" in dns._cache
    assert "api.telegram.test" not in dns._cache  # it had expired: the first to go


async def test_the_loop_runs_while_an_answer_is_awaited():
    t = support.Ticker()
    await asyncio.sleep_ms(0)
    before = t.count
    assert await dns.resolve("slow.telegram.test", server()) == "127.0.0.1"  # answered late
    t.stop()
    assert t.count > before + 1  # other tasks ran meanwhile (a blocking lookup: none)


def test_packets():
    q = dns.question("api.example.com")
    assert q == b"\x03api\x07example\x03com\x00\x00\x01\x00\x01"
    support.raises(OSError, dns.question, "a..b")
    support.raises(OSError, dns.question, "x" * 64 + ".com")
    # a reply that is cut short, and one for another query
    head = b"\x12\x34\x81\x80\x00\x01\x00\x01\x00\x00\x00\x00"
    support.raises(OSError, dns.parse, head + q + b"\xc0\x0c\x00\x01", 0x1234)
    assert dns.parse(head + q, 0x4321) is None
    assert dns.skip_name(b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xc0\x0c", 12) == 14


async def test_the_async_http_client_resolves_on_the_loop():
    # Telegram's client: the board's network DNS (board.dns_server(); MIMI_DNS on the host)
    from mimi.net import http

    os.putenv("MIMI_DNS", "%s:%d" % server())
    try:
        c = http.AsyncClient("http://api.telegram.test:%d" % support.fixture("http_env")["plain"])
        r = await c.request("GET", "/hello")
        assert r.body == b"hello"
        c.close()
        bad = http.AsyncClient("http://nowhere.example.test:%d" % support.fixture("http_env")["plain"])
        e = None
        try:
            await bad.request("GET", "/hello")
        except http.ConnectFailure as err:
            e = err
        assert e is not None and "no such name" in str(e), e
    finally:
        os.unsetenv("MIMI_DNS")
    assert "api.telegram.test" in dns._cache
