# mimi.net.tls: one client context per process, roots loaded/skipped with the reason,
# out of memory told apart from a bad root, the ca_file setting, and the rule that keeps
# a loop client's connection closed while the agent's LLM call needs the memory.
import support
from mimi import board, limits, log
from mimi.net import http, tls
from mimi.board import host

FIXTURES = ("http_env",)
HEAPSIZE = "2m"
BAD = "-----BEGIN CERTIFICATE-----\nMAMCAQE=\n-----END CERTIFICATE-----\n"  # DER, not a cert


def env():
    return support.fixture("http_env")


def pem(name):
    return support.read(board.host_path(env()["ca"][name]))


def url():
    return "https://localhost:%d" % env()["tls"]


def messages():
    return [r[3] if len(r) > 3 else str(r) for r in log.recent()]


def test_one_context_for_every_client():
    support.write(limits.CA_BUNDLE, "# Test Root\n" + pem("ca"))
    clients = [http.Client(url()) for _ in range(3)]
    for c in clients:
        assert c.request("GET", "/hello").body == b"hello"
    assert tls.stats()["contexts"] == 1
    assert tls.stats()["open"] == 3 and tls.stats()["open_peak"] == 3
    for c in clients:
        c.close()
    assert tls.stats()["open"] == 0 and tls.stats()["handshakes"] == 3


async def test_async_clients_share_it_too():
    support.write(limits.CA_BUNDLE, pem("ca"))
    assert http.Client(url()).request("GET", "/hello").status == 200
    a = http.AsyncClient(url())
    assert (await a.request("GET", "/hello")).body == b"hello"
    a.close()
    assert tls.stats()["contexts"] == 1


def test_bad_root_skipped_and_named():
    support.write(limits.CA_BUNDLE, "# Broken Root\n" + BAD + "# Test Root\n" + pem("ca"))
    c = http.Client(url())
    assert c.request("GET", "/hello").body == b"hello"
    text = "\n".join(str(r) for r in log.recent())
    assert "1 roots loaded, 1 skipped" in text and "Broken Root" in text, text


def test_out_of_memory_is_not_a_bad_root():
    # On the board mbedTLS says "invalid cert" when it runs out of memory too: with the
    # C heap short, a root that fails twice fails the context (built again next time)
    # instead of leaving the bundle silently short of roots.
    support.write(limits.CA_BUNDLE, "# Test Root\n" + pem("ca") + "# Second Root\n" + BAD)
    host.SIM_C_HEAP = limits.TLS_ROOT_ROOM - 1
    try:
        e = support.raises(http.TLSFailure, http.Client(url()).request, "GET", "/hello")
        assert "no memory for the CA roots" in str(e) and "1 loaded" in str(e), e
        assert tls.stats()["contexts"] == 0
    finally:
        host.SIM_C_HEAP = None
    assert http.Client(url()).request("GET", "/hello").status == 200
    assert tls.stats()["contexts"] == 1


def test_ca_file_setting_adds_a_root():
    from mimi.config.settings import cfg

    support.write(limits.CA_BUNDLE, pem("other_ca"))  # shipped roots don't know the server
    e = support.raises(http.TLSFailure, http.Client(url()).request, "GET", "/hello")
    support.write("/certs/mine.pem", pem("ca"))
    cfg.set("ca_file", "/certs/mine.pem")
    assert http.Client(url()).request("GET", "/hello").body == b"hello"
    assert tls.stats()["contexts"] == 2  # the setting changed: a new shared context
    for bad in ("/spiffs/ca.pem", "certs/x.pem"):
        e = support.raises(ValueError, cfg.set, "ca_file", bad)
        assert "outside /spiffs" in str(e), e
    cfg.set("ca_file", "/certs/none.pem")  # a missing file: logged, the shipped roots stay
    support.raises(http.TLSFailure, http.Client(url()).request, "GET", "/hello")
    assert any("ca_file /certs/none.pem: no such file" in str(r) for r in log.recent())


def test_loop_clients_yield_only_when_memory_is_tight():
    support.write(limits.CA_BUNDLE, pem("ca"))
    other = http.Client(url())  # stands for Telegram's open long poll
    assert other.request("GET", "/hello").status == 200
    calls = []
    tls.watch(lambda: calls.append(tls.busy))
    llm = http.Client(url())
    with tls.priority(llm):  # a board with PSRAM: nobody yields, nothing waits
        assert not tls.must_yield()
    assert calls == [1, 0], calls
    assert tls.stats()["open"] == 1, tls.stats()
    host.SIM_C_HEAP = limits.TLS_CONN_ROOM - 1  # no PSRAM, one connection's room left
    tls.watch(other.close)  # the loop client closes when told
    try:
        assert not tls.must_yield()  # no LLM call in flight
        with tls.priority(llm):
            assert tls.must_yield() and tls.stats()["open"] == 0
            assert llm.request("GET", "/hello").body == b"hello"
            assert tls.stats()["open"] == 1
        assert not tls.must_yield()
    finally:
        host.SIM_C_HEAP = None
