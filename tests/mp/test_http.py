# mimi.net.http against loopback servers (tests/fakes/httpserver.py via the
# http_env fixture): TLS verification, framing, keep-alive, deadlines, caps, proxies.
import json

import support
from mimi import board, limits
from mimi.net import http

FIXTURES = ("http_env",)
HEAPSIZE = "2m"
HEAP = {"test_sink_1mb_in_a_small_heap": "256k",  # 1 MB bodies: never held whole
        "test_chunked_body_in_a_fragmented_heap": "384k"}
TIMEOUT = 60


def env():
    return support.fixture("http_env")


def ca(name="ca"):
    return board.host_path(env()["ca"][name])


def https(port_name="tls", **kw):
    kw.setdefault("ca", ca())
    return http.Client("https://localhost:%d" % env()[port_name], **kw)


def plain(**kw):
    return http.Client("http://127.0.0.1:%d" % env()["plain"], **kw)


def stats():
    c = http.Client("http://127.0.0.1:%d" % env()["control"])
    try:
        return c.request("GET", "/stats").json()
    finally:
        c.close()


def test_valid_cert_accepted():
    c = https()
    r = c.request("GET", "/hello")
    assert (r.status, r.reason, r.body, r.text) == (200, "OK", b"hello", "hello"), r
    assert r.headers["content-length"] == "5"
    assert c.handshakes == 1 and c.connects == 1
    c.close()
    s = stats()["tls"]
    assert s["handshakes"] == 1 and s["sni"] == ["localhost"], s  # SNI sent


def test_ca_given_as_pem_or_der_bytes():
    for name in ("ca", "ca_der"):
        with open(ca(name), "rb") as f:
            data = f.read()
        c = https(ca=data)
        assert c.request("GET", "/hello").body == b"hello"
        c.close()


def test_bundle_with_several_roots():
    with open(ca("other_ca"), "rb") as f:
        data = f.read()
    with open(ca("ca"), "rb") as f:
        data += f.read()
    support.write("/certs/roots.pem", data.decode())
    c = http.Client("https://localhost:%d" % env()["tls"])  # default: limits.CA_BUNDLE
    assert c.request("GET", "/hello").status == 200
    c.close()


def test_unknown_ca_refused():
    c = https(ca=ca("other_ca"))
    e = support.raises(http.TLSFailure, c.request, "GET", "/hello")
    assert "localhost" in str(e), e
    assert stats()["tls"]["requests"] == 0


def test_wrong_hostname_refused():
    c = https("wrong")
    e = support.raises(http.TLSFailure, c.request, "GET", "/hello")
    assert isinstance(e, http.HTTPError)
    assert stats()["wrong"]["requests"] == 0


def test_no_ca_bundle_refuses_https():
    c = http.Client("https://localhost:%d" % env()["tls"])  # /certs/roots.pem is absent
    e = support.raises(http.TLSFailure, c.request, "GET", "/hello")
    assert limits.CA_BUNDLE in str(e), e
    assert stats()["tls"]["connections"] == 0  # refused before connecting


def test_plain_http():
    c = plain()
    r = c.request("GET", "/hello")
    assert r.body == b"hello" and c.handshakes == 0 and c.connects == 1


def test_chunked_decoded():
    r = https().request("GET", "/chunked")
    assert r.status == 200 and r.body == b"0123456789" * 300
    assert r.headers["transfer-encoding"] == "chunked"


def test_content_length_request_and_response():
    c = plain()
    r = c.request("POST", "/echo", {"X-Api-Key": "k1"}, {"a": [1, "é"]})
    got = r.json()
    assert got["method"] == "POST" and got["path"] == "/echo"
    assert got["headers"]["x-api-key"] == "k1"
    assert got["headers"]["content-type"] == "application/json"
    assert int(got["headers"]["content-length"]) == len(got["body"].encode())
    assert json.loads(got["body"]) == {"a": [1, "é"]}
    assert r.headers["content-length"] == str(len(r.body))
    r = c.request("POST", "/echo", body=b"raw\x00bytes")
    assert r.json()["body"] == "raw\x00bytes"


def test_keep_alive_reused():
    c = https()
    for _ in range(3):
        assert c.request("GET", "/hello").body == b"hello"
    assert c.connects == 1 and c.handshakes == 1
    s = stats()["tls"]
    assert s["connections"] == 1 and s["handshakes"] == 1 and s["requests"] == 3, s


def test_base_url_path_prefix():
    c = http.Client("http://127.0.0.1:%d/v1/" % env()["plain"])
    r = c.request("GET", "/echo")
    assert r.status == 404 and "GET /v1/echo" in r.text, r.text
    support.raises(ValueError, c.request, "GET", "echo")


def test_deadline_enforced():
    c = https()
    e = support.raises(http.Timeout, c.request, "GET", "/slow", deadline_s=0.5)
    assert isinstance(e, http.HTTPError)
    assert c.request("GET", "/hello").body == b"hello"  # a fresh connection afterwards
    assert c.connects == 2


def test_deadline_is_per_request_not_per_read():
    # 40 bytes, one every 0.1 s: no read waits long, the whole answer takes 4 s.
    c = https()
    support.raises(http.Timeout, c.request, "GET", "/trickle", deadline_s=1)
    assert c.request("GET", "/trickle", deadline_s=20).body == b"x" * 40


def test_deadline_covers_a_stalled_tls_handshake():
    c = https("silent")
    support.raises(http.Timeout, c.request, "GET", "/hello", deadline_s=0.5)
    assert c.handshakes == 1


def test_hangup_after_request_is_not_a_connect_failure():
    # ConnectFailure promises the server never saw the request (safe to resend).
    c = plain()
    e = support.raises(http.ProtocolError, c.request, "GET", "/hangup")
    assert not isinstance(e, http.ConnectFailure)


def test_oversized_body():
    c = https()
    e = support.raises(http.TooLarge, c.request, "GET", "/big")
    assert str(limits.HTTP_RESPONSE_MAX) in str(e), e
    e = support.raises(http.TooLarge, c.request, "GET", "/bigchunked")
    assert str(limits.HTTP_RESPONSE_MAX) in str(e), e
    assert c.request("GET", "/hello").body == b"hello"


def test_oversized_headers():
    e = support.raises(http.TooLarge, plain().request, "GET", "/bighead")
    assert str(limits.HTTP_HEADER_MAX) in str(e), e


def _drive(gen, data, step):
    """Run a protocol generator against canned bytes delivered `step` bytes at a time."""
    pos, res, out = 0, None, []
    while True:
        try:
            op, arg = gen.send(res)
        except StopIteration as e:
            return e.value, b"".join(out)
        if op == http._W:
            out.append(bytes(arg))
            res = None
        else:
            n = min(step, len(arg), len(data) - pos)
            arg[0:n] = data[pos:pos + n]
            pos += n
            res = n


def _exchange(buf, head, body, method, cap):
    """The three protocol generators a client runs for one request, as one."""
    yield from http._ask(buf, head, body)
    yield from buf.fill("response headers")
    return (yield from http._exchange(buf, method, cap))


def test_parser_in_small_pieces():
    cases = [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: 1\r\nx-a: 2\r\n\r\nhello", b"hello", True),
        (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\nok", b"ok", True),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
         b"5;ext=1\r\nhello\r\n1A\r\n" + b"z" * 26 + b"\r\n0\r\nX-Trailer: t\r\n\r\n", b"hello" + b"z" * 26, True),
        (b"HTTP/1.0 200 OK\r\n\r\nuntil eof", b"until eof", False),
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", b"", False),
    ]
    for raw, body, keep in cases:
        for step in (1, 3, 7, 1000):
            buf = http._Buf(64)  # small: forces the buffer to wrap around
            (resp, k), sent = _drive(_exchange(buf, b"GET / HTTP/1.1\r\n\r\n", None, "GET", 1000),
                                     raw, step)
            assert (resp.body, k) == (body, keep), (raw, step, resp.body, k)
            assert sent == b"GET / HTTP/1.1\r\n\r\n"
    resp, _ = _drive(_exchange(http._Buf(256), b"HEAD / HTTP/1.1\r\n\r\n", None, "HEAD", 10),
                     b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", 5)[0]
    assert resp.body == b"" and resp.headers["content-length"] == "99"
    r = _drive(_exchange(http._Buf(256), b"x", None, "GET", 100),
               cases[0][0].replace(b"X-A: 1", b"X-A: 1", 1), 4)[0][0]
    assert r.headers["x-a"] == "1, 2", r.headers
    for bad in (b"HTTP/1.1 2x0 OK\r\n\r\n", b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
                b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort"):
        support.raises(http.ProtocolError, _drive, _exchange(http._Buf(256), b"x", None, "GET", 100),
                       bad, 3)
    # A header line longer than the receive buffer is read and dropped; the others count.
    raw = b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 100 + b"\r\nContent-Length: 2\r\n\r\nok"
    for step in (1, 5, 1000):
        resp, keep = _drive(_exchange(http._Buf(32), b"x", None, "GET", 100), raw, step)[0]
        assert (resp.body, keep, "x-long" in resp.headers) == (b"ok", True, False), resp.headers
    raw = b"HTTP/1.1 200 OK\r\n" + b"X-A: 1\r\n" * (limits.HTTP_HEADER_MAX // 8) + b"\r\n"
    e = support.raises(http.TooLarge, _drive, _exchange(http._Buf(32), b"x", None, "GET", 100),
                       raw, 50)
    assert str(limits.HTTP_HEADER_MAX) in str(e), e


def test_connect_proxy():
    port = env()["connect"]
    c = https(proxy=("http", "127.0.0.1", port))
    for _ in range(2):
        assert c.request("GET", "/hello").body == b"hello"
    s = stats()
    assert s["connect"]["tunnels"] == 1, s
    assert s["connect"]["targets"] == ["localhost:%d" % env()["tls"]], s
    assert s["tls"]["connections"] == 1


def test_socks5_proxy():
    port = env()["socks"]
    c = https(proxy=("socks5", "127.0.0.1", port))
    assert c.request("GET", "/chunked").body == b"0123456789" * 300
    p = http.Client("http://localhost:%d" % env()["plain"], proxy=("socks5", "127.0.0.1", port))
    assert p.request("GET", "/hello").body == b"hello"
    s = stats()["socks"]
    assert s["tunnels"] == 2, s
    assert "localhost:%d" % env()["tls"] in s["targets"], s


def test_proxy_cannot_reach_target():
    for kind, name in (("http", "connect"), ("socks5", "socks")):
        c = http.Client("https://localhost:1", ca=ca(), proxy=(kind, "127.0.0.1", env()[name]))
        e = support.raises(http.ConnectFailure, c.request, "GET", "/")
        assert "localhost:1" in str(e), e


def test_proxy_from_config():
    from mimi.config.settings import cfg

    assert http.proxy_from_config(cfg) is None
    cfg.update({"proxy_host": "10.0.0.2", "proxy_port": 1080, "proxy_type": "socks5"})
    assert http.proxy_from_config(cfg) == ("socks5", "10.0.0.2", 1080)
    cfg.update({"proxy_user": "ann", "proxy_pass": "pw"})
    assert http.proxy_from_config(cfg) == ("socks5", "10.0.0.2", 1080, "ann", "pw")


def test_closed_keepalive_reopened():
    c = https()
    assert c.request("GET", "/drop").body == b"bye"  # the server then hangs up silently
    assert c.request("GET", "/hello").body == b"hello"
    assert c.connects == 2
    assert stats()["tls"]["connections"] == 2


def test_unsolicited_response_never_taken_for_the_next_answer():
    # issue 16: a server that sends a second response on a kept-alive connection
    import time

    for c in (https(), plain()):
        assert c.request("GET", "/twice").body == b"first"
        time.sleep(1)  # the stray response is in the socket by now
        assert c.request("GET", "/hello").body == b"hello"
        assert c.connects == 2  # the connection out of step was closed, not read


def test_chunked_body_in_a_fragmented_heap():
    # issue 16: a chunked body is not grown in place (old and new copy at once, again and
    # again): its pieces fill small holes and only the final body needs one block.
    import gc

    c = plain()
    assert len(c.request("GET", "/hello").body) == 5  # the client's buffers are made
    gc.collect()
    hold, holes = [], []
    while gc.mem_free() > 200 * 1024:
        holes.append(bytearray(3000))
        hold.append(bytearray(64))
    holes = None
    gc.collect()
    r = c.request("GET", "/chunked96k")
    assert len(r.body) == 96 * 1024 and r.body[:3] == b"yyy"


def test_connection_close_honoured():
    c = plain()
    assert c.request("GET", "/close").body == b"closing"
    assert c.request("GET", "/hello").body == b"hello"
    assert c.connects == 2


def test_malformed_response():
    c = plain()
    e = support.raises(http.ProtocolError, c.request, "GET", "/garbage")
    assert "status line" in str(e), e
    assert c.request("GET", "/hello").status == 200


def test_bad_json_is_clear():
    r = plain().request("GET", "/badjson")
    e = support.raises(http.ProtocolError, r.json)
    assert "not valid JSON" in str(e) and "{not json" in str(e), e


def test_connection_refused():
    e = support.raises(http.ConnectFailure, http.Client("http://127.0.0.1:1").request, "GET", "/")
    assert "127.0.0.1" in str(e)


def test_header_injection_rejected():
    c = plain()
    support.raises(ValueError, c.request, "GET", "/hello", {"X-A": "1\r\nX-B: 2"})


async def test_async_https_keepalive():
    c = http.AsyncClient("https://localhost:%d" % env()["tls"], ca=ca())
    for _ in range(3):
        r = await c.request("GET", "/hello")
        assert r.body == b"hello"
    r = await c.request("GET", "/chunked")
    assert r.body == b"0123456789" * 300
    assert c.connects == 1 and c.handshakes == 1
    c.close()
    s = stats()["tls"]
    assert s["connections"] == 1 and s["requests"] == 4, s


async def test_async_errors_and_proxy():
    bad = http.AsyncClient("https://localhost:%d" % env()["tls"], ca=ca("other_ca"))
    try:
        await bad.request("GET", "/hello")
        raise AssertionError("unknown CA accepted")
    except http.TLSFailure:
        pass
    c = http.AsyncClient("https://localhost:%d" % env()["tls"], ca=ca())
    try:
        await c.request("GET", "/slow", deadline_s=0.5)
        raise AssertionError("no Timeout")
    except http.Timeout:
        pass
    r = await c.request("GET", "/hello")
    assert r.body == b"hello"
    p = http.AsyncClient("https://localhost:%d" % env()["tls"], ca=ca(),
                         proxy=("socks5", "127.0.0.1", env()["socks"]))
    assert (await p.request("GET", "/hello")).body == b"hello"
    p = http.AsyncClient("https://localhost:%d" % env()["tls"], ca=ca(),
                         proxy=("http", "127.0.0.1", env()["connect"]))
    assert (await p.request("GET", "/hello")).body == b"hello"
    assert (await p.request("GET", "/hello")).body == b"hello"
    s = stats()
    assert s["socks"]["tunnels"] == 1 and s["connect"]["tunnels"] == 1, s


async def test_async_timeout_refused_malformed():
    c = http.AsyncClient("https://localhost:%d" % env()["silent"], ca=ca())
    try:
        await c.request("GET", "/", deadline_s=0.5)
        raise AssertionError("no Timeout")
    except http.Timeout:
        pass
    try:
        await http.AsyncClient("https://localhost:1", ca=ca()).request("GET", "/")
        raise AssertionError("connected to port 1")
    except http.ConnectFailure:
        pass
    p = http.AsyncClient("http://127.0.0.1:%d" % env()["plain"])
    try:
        await p.request("GET", "/garbage")
        raise AssertionError("garbage accepted")
    except http.ProtocolError:
        pass
    r = await p.request("POST", "/echo", body={"k": 1})
    assert json.loads(r.json()["body"]) == {"k": 1}
    assert (await p.request("GET", "/drop")).body == b"bye"
    assert (await p.request("GET", "/hello")).body == b"hello"  # reopened transparently


# ---- sink: bodies handed over piece by piece as they arrive (OTA downloads) ----
def _mega_sha():
    import hashlib

    h = hashlib.sha256()
    block = bytes(range(256))
    for _ in range(4096):
        h.update(block)
    return h.digest()


class Hashing:
    """A sink that keeps nothing but the SHA-256 and the count of what it was given."""

    def __init__(self):
        import hashlib

        self.h = hashlib.sha256()
        self.n = 0
        self.head = None

    def begin(self, status, headers):
        self.head = (status, headers)

    def __call__(self, piece):
        self.h.update(piece)
        self.n += len(piece)


async def test_sink_1mb_in_a_small_heap():
    import gc

    want = _mega_sha()
    c = http.AsyncClient("http://127.0.0.1:%d" % env()["plain"])
    for path, length in (("/mega", "1048576"), ("/megachunked", None)):
        gc.collect()
        sink = Hashing()
        r = await c.request("GET", path, sink=sink)
        assert r.status == 200 and r.body == b"" and sink.head[0] == 200, path
        assert sink.head[1].get("content-length") == length, sink.head
        assert sink.n == 1 << 20 and sink.h.digest() == want, (path, sink.n)
    assert (await c.request("GET", "/hello")).body == b"hello"
    assert c.connects == 1  # every body read to its end left the connection reusable
    t = http.AsyncClient("https://localhost:%d" % env()["tls"], ca=ca())
    sink = Hashing()
    await t.request("GET", "/chunked", sink=sink)
    assert sink.n == 3000 and sink.head[1]["transfer-encoding"] == "chunked"
    t.close()


async def test_sink_deadline_covers_the_body():
    # the head comes at once, then 40 bytes one every 0.1 s: the 1 s deadline of the
    # request runs out while the body is being handed over
    c = http.AsyncClient("http://127.0.0.1:%d" % env()["plain"])
    sink = Hashing()
    try:
        await c.request("GET", "/trickle", deadline_s=1, sink=sink)
        raise AssertionError("no Timeout")
    except http.Timeout:
        pass
    assert 0 < sink.n < 40, sink.n
    assert (await c.request("GET", "/hello")).body == b"hello"
    assert c.connects == 2



async def test_a_file_sent_as_a_body_is_closed_when_the_connection_fails():
    # a request whose body is read from a file (the LLM request's prompt, a chart's
    # PNG) and whose connection fails while it goes: the file is closed then, not left
    # to the GC's finaliser (on the host that closes it outside fs.lock)
    import asyncio
    from mimi.net import httpbody

    async def hang_up(r, w):  # reads the head, then closes with the body unread (a reset)
        while (await r.readline()) not in (b"\r\n", b""):
            pass
        w.close()
        await w.wait_closed()

    from mimi.net.listen import on_port

    server, port = await on_port(0, lambda p: asyncio.start_server(hang_up, "127.0.0.1", p),
                                 limits.WS_PORT_ANY, 32)
    support.write("/spiffs/body.bin", "x" * 8192)
    body = (httpbody.Region("/spiffs/body.bin", 0, 8192),) * 2048  # 16 MB, one open file
    try:
        with support.Opened() as opened:
            c = http.AsyncClient("http://127.0.0.1:%d" % port)
            try:
                await c.request("POST", "/", body=body)
                raise AssertionError("a 16 MB body went to a server that hung up")
            except http.HTTPError:
                pass
            c.close()
    finally:
        server.close()
    assert opened.files and not opened.left(), opened.left()


async def test_a_body_made_before_its_code_was_let_go_is_sent_whole():
    # the agent lets net/httpbody.py go after a turn on a short heap (worker._forget())
    # while the loop holds a body made with it (a long Telegram reply's part in Pieces,
    # waiting for the LLM call's TLS room): the request, which loads the code again,
    # took the old copy's parts for none of its own (TypeError: the part was lost)
    import mimi
    from mimi.net import httpbody

    support.write("/spiffs/part.bin", "from a file")
    body = ("a ", httpbody.Pieces(6, lambda: iter((b"pie", b"ces"))), " and ",
            httpbody.Region("/spiffs/part.bin", 0, 11))
    httpbody = None
    mimi.drop("net.httpbody")
    for c in (plain(), http.AsyncClient("http://127.0.0.1:%d" % env()["plain"])):
        r = c.request("POST", "/echo", body=body)
        if not isinstance(r, http.Response):
            r = await r
        assert r.json()["body"] == "a pieces and from a file", r.json()
        c.close()
