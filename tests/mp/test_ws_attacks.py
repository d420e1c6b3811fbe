# Attacks on the WebSocket gateway from many client addresses (127.0.x.y: the whole
# 127/8 is loopback, so each is an address of its own for the gateway): token guessing
# that rotates through more addresses than the back-off table holds (issue 25, item
# 11), and idle sockets from many addresses against a slow client (item 12).
# tests/host/test_gateway_attacks.py makes the same attacks on the simulator.
import time
import socket
import asyncio
from mimi import limits
from mimi.channels.websocket import gateway
from mimi.net import httpserver as hs
from mimi.net.httpserver import Reader
from test_ws_gateway import setup, start, TOKEN  # noqa: F401 - setup() is this module's too

TIMEOUT = 90
UPGRADE = ("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")


class Conn:
    """A connection to the gateway from address src, taken by the gateway before this
    returns (its record is the newest in gateway._conns)."""

    def __init__(self, src):
        self.s = socket.socket()
        self.s.bind(socket.getaddrinfo(src, 0)[0][-1])
        self.src = src

    async def open(self):
        last = gateway._conns[-1] if gateway._conns else None
        self.s.connect(socket.getaddrinfo("127.0.0.1", gateway.port)[0][-1])
        self.s.setblocking(False)
        self.st = asyncio.StreamReader(self.s)
        for _ in range(5000):
            if gateway._conns and gateway._conns[-1] is not last:
                return self
            await asyncio.sleep_ms(1)
        raise AssertionError("the gateway did not take the connection from %s" % self.src)

    async def send(self, data):
        self.st.write(data)
        await self.st.drain()

    async def status(self, path="/?token=" + TOKEN, sent=0):
        """Send the upgrade (past its first `sent` bytes) -> the answer's status, or None
        if the gateway closed the connection without one (shed)."""
        try:
            await self.send((UPGRADE % (path, gateway.port)).encode()[sent:])
            head = await asyncio.wait_for(hs.read_head(Reader(self.st), 4096), 10)
            return int(head.split(b" ")[1])
        except (EOFError, OSError):
            return None
        finally:
            self.close()

    def close(self):
        self.s.close()


async def opened(src):
    return await Conn(src).open()


async def upgrade(src, path="/?token=" + TOKEN):
    return await (await opened(src)).status(path)


async def test_rotating_addresses_share_one_back_off():
    # 17+ addresses in turn had every wrong token looked at: the table of 16 forgot
    # the one about to come back. Once it is full, the others share one back-off.
    limits.WS_AUTH_BACKOFF_S = 30  # no back-off ends while the test runs
    await start()
    for i in range(limits.WS_AUTH_PEERS):
        assert await upgrade("127.0.4.%d" % (i + 1), "/?token=wrong-token-1") == 401
    assert await upgrade("127.0.5.1", "/?token=wrong-token-2") == 401  # the shared one's first
    for i in range(2, 40):  # every other address now waits with it, the right token too
        assert await upgrade("127.0.5.%d" % i, "/?token=wrong-token-3") == 429, i
    assert await upgrade("127.0.6.1") == 429
    for i in range(limits.WS_AUTH_PEERS):  # the table's own keep their own back-off
        assert await upgrade("127.0.4.%d" % (i + 1), "/?token=wrong-token-4") == 429
    assert len(gateway._fails) == limits.WS_AUTH_PEERS + 1
    # the shared back-off over: the next wrong one is looked at and doubles it
    n, _ = gateway._fails["*"]
    gateway._fails["*"] = (n, time.ticks_ms())
    assert await upgrade("127.0.7.1", "/?token=wrong-token-5") == 401
    assert gateway._fails["*"][0] == 2
    assert await upgrade("127.0.7.2") == 429


async def test_forgotten_only_long_after_the_back_off():
    limits.WS_AUTH_FORGET_S = 0
    limits.WS_AUTH_BACKOFF_S = 1
    await start()
    assert await upgrade("127.0.4.1", "/?token=wrong-token-1") == 401
    assert await upgrade("127.0.4.1", "/?token=wrong-token-2") == 429  # its back-off runs
    await asyncio.sleep_ms(1100)
    assert await upgrade("127.0.4.2", "/?token=wrong-token-3") == 401  # ended: forgotten
    assert list(gateway._fails) == [bytes([127, 0, 4, 2])]
    assert await upgrade("127.0.4.1") == 101


async def squat(addrs, per):
    """Idle connections from each of addrs (per each), opened one after the other."""
    out = []
    for a in addrs:
        for _ in range(per):
            out.append(await opened(a))
    return out


async def test_the_address_holding_the_most_loses_one():
    await start()
    first = await opened("127.0.0.1")  # the oldest, alone at its address
    crowd = await squat(["127.0.3.1"], limits.WS_PEER_PENDING)
    crowd.append(await opened("127.0.3.2"))
    assert len(gateway._conns) == limits.WS_MAX_CONN
    newer = await opened("127.0.3.3")
    addrs = [c[0] for c in gateway._conns]
    assert addrs[0] == bytes([127, 0, 0, 1]) and addrs.count(bytes([127, 0, 3, 1])) == 1, addrs
    assert await first.status() == 101 and await newer.status() == 101
    for c in crowd:
        c.close()


async def test_a_slow_client_outlasts_idle_sockets_from_many_addresses():
    # A client that waited 0.4 s before its request was dropped in 2 of 5 tries while
    # 24 addresses held idle sockets: the oldest not upgraded went, which soon was it.
    await start()
    addrs = ["127.0.3.%d" % i for i in range(1, 25)]
    held = await squat(addrs, 2)  # every address has been shed since: it keeps coming back
    slow = await opened("127.0.0.1")
    held += await squat(addrs, 2)  # 48 more while the slow one thinks
    assert await slow.status() == 101
    for c in held:
        c.close()


async def test_a_client_shed_once_outlasts_addresses_that_keep_coming():
    # A slow client shed once (its first try, on a loaded host) then tied with every
    # squatter as "shed lately" and lost each next try too: the addresses are now told
    # apart by how many connections they opened or lost lately.
    await start()
    addrs = ["127.0.3.%d" % i for i in range(1, 25)]
    held = await squat(addrs, 2)
    hs.remember(gateway._shed_lately, bytes([127, 0, 0, 1]))  # its last try was shed
    slow = await opened("127.0.0.1")
    held += await squat(addrs, 2)
    assert await slow.status() == 101
    for c in held:
        c.close()


async def test_one_sending_its_request_is_never_shed():
    # fresh addresses, one idle socket each: no address holds more, none was shed
    # before, so the oldest would go, the one that has begun its request
    await start()
    slow = await opened("127.0.0.1")
    await slow.send(b"GET /?tok")  # a request begun
    while not gateway._conns[0][3].got:
        await asyncio.sleep_ms(1)
    held = await squat(["127.0.8.%d" % i for i in range(1, 25)], 1)
    assert gateway._conns[0][0] == bytes([127, 0, 0, 1]), gateway._conns
    assert await slow.status(sent=9) == 101  # the rest of it
    for c in held:
        c.close()


async def test_one_byte_squatters_cannot_hold_the_gateway():
    # Sockets that begin a request and stall are not "sending" it for ever: past
    # HTTP_HEAD_GRACE_MS they may go, or two addresses could lock the gateway.
    limits.HTTP_HEAD_GRACE_MS = 0
    await start()
    held = []
    for a in ("127.0.9.1", "127.0.9.2", "127.0.9.3"):
        for _ in range(limits.WS_PEER_PENDING):
            c = await opened(a)
            await c.send(b"G")
            held.append(c)
    assert await upgrade("127.0.0.1") == 101
    for c in held:
        c.close()
