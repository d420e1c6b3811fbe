# Proxies with a username and password, against the real thing (tests/fakes/
# realproxy.py): squid (HTTP CONNECT, Proxy-Authorization: Basic) and Dante (SOCKS5,
# RFC 1929), each started by the test on 127.0.0.1, in front of the fake LLM over TLS.
# A refusal (407/403, SOCKS authentication or rule) is reported at once, not retried.
import llmcases as c
import support
from mimi.net import http

FIXTURES = ("real_proxies", "fake_anthropic")
TIMEOUT = 90


def proxies(name):
    px = support.fixture("real_proxies")
    if not px[name]:
        support.skip(px["why"][name])
    return px, ("http" if name == "squid" else "socks5")


def via(kind, px, port, user=None, password=None):
    p = (kind, "127.0.0.1", port)
    return p + (user, password) if user is not None else p


def _answers(name):
    px, kind = proxies(name)
    c.llmfake.script(c.fixture("anthropic"), {"text": "through the proxy"}, {"text": "again"})
    p = c.provider("anthropic", proxy=via(kind, px, px[name], px["user"], px["password"]))
    assert c.turn(p).text == "through the proxy"
    assert c.turn(p).text == "again" and p.client.connects == 1  # the tunnel is kept
    p.close()


def _refused(name):
    px, kind = proxies(name)
    for user, password, words in ((px["user"], "wrong", "check proxy_user and proxy_pass"),
                                  (None, None, "set proxy_user and proxy_pass")):
        p = c.provider("anthropic", proxy=via(kind, px, px[name], user, password))
        t = c.turn(p)
        assert t.error and words in t.error and p.waits == [], (t.error, p.waits)
        p.close()
    # allowed in, but not to that port: the proxy's rules
    cl = http.Client("http://127.0.0.1:%d" % px["blocked"],
                     proxy=via(kind, px, px[name], px["user"], px["password"]))
    e = support.raises(http.ConnectFailure, cl.request, "GET", "/")
    assert getattr(e, "final", False) and ("403" in str(e) or "its rules" in str(e)), e


def test_squid_basic_auth():
    _answers("squid")


def test_squid_refusals_are_final():
    _refused("squid")


def test_dante_username_auth():
    _answers("dante")


def test_dante_refusals_are_final():
    _refused("dante")


async def test_loop_client_through_both():
    """The asyncio client (Telegram, Feishu) takes the same credentials."""
    fx = c.fixture("anthropic")
    for name in ("squid", "dante"):
        px = support.fixture("real_proxies")
        if not px[name]:
            continue
        kind = "http" if name == "squid" else "socks5"
        cl = http.AsyncClient(fx["control"], proxy=via(kind, px, px[name], px["user"], px["password"]))
        r = await cl.request("GET", "/_requests?bodies=0&last=1")
        assert r.status == 200 and "requests" in r.json(), r.status
        cl.close()
        bad = http.AsyncClient(fx["control"], proxy=via(kind, px, px[name], px["user"], "nope"))
        e = await _raises(bad.request("GET", "/_requests"))
        assert getattr(e, "final", False) and "proxy_pass" in str(e), e
        bad.close()


async def _raises(coro):
    try:
        await coro
    except http.HTTPError as e:
        return e
    raise AssertionError("no error")
