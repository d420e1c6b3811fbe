# The shared network parts (lib/mimi/net/__init__.py, net/httpserver.py): URL
# splitting, secret comparison, HTML escaping, random ids, the buffered request
# reader and request parsing of the gateway and the portal, port picking.
import errno
from support import raises
from mimi import net
from mimi.net import httpserver as hs


class Src:
    """An asyncio-like stream over fixed bytes; records how much was read."""

    def __init__(self, data, step=None):
        self.data = data
        self.pos = 0
        self.step = step

    async def read(self, n):
        if self.step:
            n = min(n, self.step)
        d = self.data[self.pos:self.pos + n]
        self.pos += len(d)
        return d


def reader(data, step=None):
    return hs.Reader(Src(data, step))


def test_split_url():
    assert net.split_url("https://h:8443/a/b?q=1") == ("https", "h", 8443, "/a/b?q=1")
    assert net.split_url("http://localhost:11434") == ("http", "localhost", 11434, "")
    assert net.split_url("https://api.openai.com/") == ("https", "api.openai.com", None, "/")
    assert net.split_url("ws://10.0.0.1") == ("ws", "10.0.0.1", None, "")
    url = "https://openrouter.ai/api/v1"
    path = net.split_url(url)[3]
    assert url[:len(url) - len(path)] == "https://openrouter.ai"  # the origin, as documented
    for bad in ("api.openai.com", "://h", "http://", "http://:80/x", "http://h:port/", "http://h:-1"):
        raises(ValueError, net.split_url, bad)


def test_secrets_equal():
    assert net.secrets_equal(b"abc", "abc") and net.secrets_equal("", b"")
    assert not net.secrets_equal("abc", "abd") and not net.secrets_equal("abc", "abcd")
    assert net.secrets_equal("\u4f60", "\u4f60".encode())


def test_html_escape():
    s = "<a href=\"x\">Tom & 'Jerry'</a>"
    assert net.html_escape(s) == "&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;"
    assert net.html_escape(s, False) == "&lt;a href=\"x\"&gt;Tom &amp; 'Jerry'&lt;/a&gt;"
    assert net.html_escape(42) == "42"


def test_random_id():
    ids = [net.random_id(4) for _ in range(50)]
    assert all(len(i) == 8 and all(c in "0123456789abcdef" for c in i) for i in ids)
    assert len(set(ids)) > 45  # 32 random bits each
    assert len(net.random_id(12)) == 24


async def test_reader_buffers_and_skips():
    r = reader(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n\x81\x00rest", step=3)
    assert await hs.read_head(r, 4096) == b"GET / HTTP/1.1\r\nHost: x"
    assert await r.readexactly(2) == b"\x81\x00"
    await r.skip(2)
    assert await r.readexactly(2) == b"st"
    big = reader(b"x" * 9000)
    e = None
    try:
        await hs.read_head(big, 4096)
    except ValueError as ex:
        e = ex
    assert e is not None


def test_parse_request_and_query():
    head = (b"GET /?token=a%2Fb+c&x=1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\nUpgrade: websocket\r\n"
            b"Connection: keep-alive, Upgrade\r\nX-A: 1\r\nx-a: 2")
    method, path, q, h = hs.parse_request(head)
    assert (method, path) == ("GET", "/")
    assert q == {"token": "a/b c", "x": "1"}
    assert h["upgrade"] == "websocket" and h["x-a"] == "1, 2"
    assert hs.has_token(h["connection"], "upgrade") and not hs.has_token(h["connection"], "close")
    raises(ValueError, hs.parse_request, b"GARBAGE")
    raises(ValueError, hs.parse_request, b"GET / HTTP/1.1\r\nno colon here")
    raises(ValueError, hs.parse_request, b"GET / HTTP/1.1\r\nX: \xff\xfe")
    assert hs.unquote("%E4%BD%A0+%2B") == "\u4f60 +"
    for bad in ("%E4%BD%A0%zz", "%4", "ab%", "%FF%FE", "%ED%A0%80", "%C0%80"):  # never junk, never ""
        raises(ValueError, hs.unquote, bad)
    assert hs.parse_query("a=1&b=x+y&&c") == {"a": "1", "b": "x y", "c": ""}


def test_http_response():
    r = hs.http_response("401 Unauthorized", "no\n", extra=("WWW-Authenticate: Bearer",))
    assert r.startswith(b"HTTP/1.1 401 Unauthorized\r\n") and r.endswith(b"\r\n\r\nno\n")
    assert b"Content-Length: 3\r\n" in r and b"WWW-Authenticate: Bearer\r\n" in r


async def test_on_port_fixed_or_random_free():
    tried = []

    async def make(port):
        tried.append(port)
        if len(tried) < 3:
            raise OSError(errno.EADDRINUSE, "taken")
        return "server"

    assert await hs.on_port(0, make, (20000, 20100), 5) == ("server", tried[-1])
    assert len(tried) == 3 and all(20000 <= p < 20100 for p in tried)
    tried.clear()
    e = None
    try:
        await hs.on_port(0, make, (20000, 20100), 2)  # two tries, both ports taken
    except OSError as ex:
        e = ex
    assert e is not None and e.errno == errno.EADDRINUSE and len(tried) == 2
    tried[:] = [1, 2]
    assert await hs.on_port(18789, make, (20000, 20100), 5) == ("server", 18789)
    tried.clear()
    e = None
    try:
        await hs.on_port(18789, make, (20000, 20100), 5)  # a fixed port is not replaced
    except OSError as ex:
        e = ex
    assert e is not None and tried == [18789]
