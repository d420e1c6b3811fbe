# mimi.net.tls: one client context per process, roots loaded/skipped with the reason,
# out of memory told apart from a bad root, the ca_file setting, and the rule that keeps
# a loop client's connection closed while the agent's LLM call needs the memory.
import support
from mimi import board, limits, log
from mimi.net import http, tls
from mimi.board import host

FIXTURES = ("http_env",)
HEAPSIZE = "2m"
HEAP = {"test_a_huge_ca_file_is_refused_and_never_read_whole": "256k"}
BAD = "-----BEGIN CERTIFICATE-----\nMAMCAQE=\n-----END CERTIFICATE-----\n"  # DER, not a cert


def env():
    return support.fixture("http_env")


def pem(name):
    return support.read(board.host_path(env()["ca"][name]))


def url():
    return "https://localhost:%d" % env()["tls"]


def messages():
    return log.recent()


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
        with support.Opened() as opened:
            e = support.raises(http.TLSFailure, http.Client(url()).request, "GET", "/hello")
        assert "no memory for the CA roots" in str(e) and "1 loaded" in str(e), e
        assert tls.stats()["contexts"] == 0
        # the bundle, read as the roots were loaded, is closed (not left to the GC)
        assert opened.files and not opened.left(), opened.left()
    finally:
        host.SIM_C_HEAP = None
    # not made again on every request: tried again after TLS_RETRY_S (or a changed file)
    e = support.raises(http.TLSFailure, http.Client(url()).request, "GET", "/hello")
    assert "no memory for the CA roots" in str(e) and tls.stats()["failed"] == 1
    limits.TLS_RETRY_S = 0
    assert http.Client(url()).request("GET", "/hello").status == 200
    assert tls.stats()["contexts"] == 1 and tls.stats()["failed"] == 1


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
    import os

    os.remove("/certs/mine.pem")  # a file removed after it was set: logged, the shipped roots stay
    support.raises(http.TLSFailure, http.Client(url()).request, "GET", "/hello")
    assert any("ca_file /certs/mine.pem: no such file" in str(r) for r in log.recent())


def test_loop_clients_yield_only_when_memory_is_tight():
    support.write(limits.CA_BUNDLE, pem("ca"))
    other = http.Client(url())  # stands for Telegram's open long poll
    assert other.request("GET", "/hello").status == 200
    calls = []
    tls.watch(lambda: calls.append(tls.busy))
    llm = http.Client(url())
    tls.claim(llm)  # a board with PSRAM: nobody yields, nothing waits
    assert not tls.must_yield()
    tls.release()
    assert calls == [1, 0], calls
    assert tls.stats()["open"] == 1, tls.stats()
    host.SIM_C_HEAP = limits.TLS_CONN_ROOM - 1  # no PSRAM, one connection's room left
    tls.watch(other.close)  # the loop client closes when told
    try:
        assert not tls.must_yield()  # no LLM call in flight
        tls.claim(llm)
        try:
            assert tls.must_yield() and tls.stats()["open"] == 0
            assert llm.request("GET", "/hello").body == b"hello"
            assert tls.stats()["open"] == 1
        finally:
            tls.release()
        assert not tls.must_yield()
    finally:
        host.SIM_C_HEAP = None


# --- what the ca_file setting may hold (issue 25, items 1-3) ---------------------
BEGIN, END = "-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----"


def body(name):
    """The base64 lines of a PEM certificate."""
    return [ln for ln in pem(name).split("\n") if ln and not ln.startswith("-----")]


def cut(name, lines):
    """A paste cut short: the first lines of a certificate, then its END line."""
    return "\n".join([BEGIN] + body(name)[:lines] + [END]) + "\n"


def warnings():
    return [m for m in messages() if " W tls: " in m]


class Makes:
    """Counts the contexts made (net/tlsroots.py's make() run) while it is on."""

    def __enter__(self):
        import mimi

        self.real, self.n = mimi.run, 0

        def run(names, fn, *args):
            if names == "net.tlsroots" and fn == "make":
                self.n += 1
            return self.real(names, fn, *args)

        mimi.run = run
        return self

    def __exit__(self, *exc):
        import mimi

        mimi.run = self.real


def test_a_bad_certificate_in_ca_file_costs_no_other_root():
    # A PEM with a good root and broken ones (bad base64 padding, a truncated paste)
    # made the whole context fail: every HTTPS connection, the shipped roots' too.
    from mimi.config.settings import cfg

    support.write(limits.CA_BUNDLE, "# Test Root\n" + pem("ca"))  # the shipped roots know the server
    mine = ("# Unrelated\n" + pem("other_ca") + "# Broken Padding\n" + BEGIN + "\nMAMCAQ\n" + END
            + "\n" + cut("ca", 6) + BEGIN + "\nMIIB\n")  # the last one has no END line
    starts = [i + 1 for i, ln in enumerate(mine.split("\n")) if ln == BEGIN]
    support.write("/certs/mine.pem", mine)
    cfg.set("ca_file", "/certs/mine.pem")  # one good root in it: accepted
    assert http.Client(url()).request("GET", "/hello").body == b"hello"
    w = "\n".join(warnings())
    assert "ca_file /certs/mine.pem: 1 roots loaded, 3 skipped" in w, w
    assert "certificate 2 at line %d (Broken Padding): not valid base64" % starts[1] in w, w
    # a cut DER whose subject is still whole is named by it
    assert "certificate 3 at line %d (CN=MimiClaw Test Root CA): mbedTLS cannot parse it" % starts[2] in w, w
    assert "certificate 4 at line %d: no END line" % starts[3] in w, w
    # the other way round: the server's root in ca_file after a broken one, unknown to the bundle
    support.write(limits.CA_BUNDLE, pem("other_ca"))
    support.write("/certs/mine.pem", BEGIN + "\nMAMCAQ\n" + END + "\n" + pem("ca"))
    assert http.Client(url()).request("GET", "/hello").body == b"hello"
    assert tls.stats()["contexts"] == 2


def big_pem(path, lines):
    """One certificate block of that many 64-character lines, written a line at a time."""
    with open(path, "w") as f:
        f.write(BEGIN + "\n")
        for _ in range(lines):
            f.write("QUFB" * 16 + "\n")
        f.write(END + "\n")


def test_a_huge_ca_file_is_refused_and_never_read_whole():
    # 3 MB in ca_file: "memory allocation failed" for every HTTPS connection, and the
    # whole file read again for each request.
    from mimi.config.settings import cfg

    support.write(limits.CA_BUNDLE, pem("ca"))
    big_pem("/certs/big.pem", 8000)  # 520 KB: more than this test's heap
    e = support.raises(ValueError, cfg.set, "ca_file", "/certs/big.pem")
    assert "ca_file: /certs/big.pem: 520" in str(e) and "over the 32 KB" in str(e), e
    assert cfg.get("ca_file") == ""
    # set while it was sound, then grown: the shipped roots only, and it is not read again
    support.write("/certs/big.pem", pem("other_ca"))
    cfg.set("ca_file", "/certs/big.pem")
    big_pem("/certs/big.pem", 8000)
    with Makes() as made:
        for _ in range(3):
            assert http.Client(url()).request("GET", "/hello").body == b"hello"
    assert made.n == 1, made.n
    assert any("ca_file /certs/big.pem: not loaded: 520" in m for m in messages()), messages()
    # one certificate over CA_CERT_MAX in a file within the cap: that one skipped
    big_pem("/certs/big.pem", limits.CA_CERT_MAX // 48 + 2)
    with open("/certs/big.pem", "a") as f:
        f.write(pem("other_ca"))
    assert http.Client(url()).request("GET", "/hello").body == b"hello"
    assert any("certificate 1 at line 1: over %d bytes" % limits.CA_CERT_MAX in m for m in warnings())
    assert any("ca_file /certs/big.pem: 1 roots loaded, 1 skipped" in m for m in warnings())


def test_a_failed_context_is_not_made_again_for_every_request():
    import os

    from mimi import fs

    if fs.exists(limits.CA_BUNDLE):
        os.remove(limits.CA_BUNDLE)
    with Makes() as made:
        for _ in range(3):
            e = support.raises(http.TLSFailure, http.Client(url()).request, "GET", "/hello")
            assert "no CA bundle" in str(e), e
        assert made.n == 1, made.n
        support.write(limits.CA_BUNDLE, pem("ca"))  # a changed root file: made again at once
        assert http.Client(url()).request("GET", "/hello").body == b"hello"
        assert made.n == 2, made.n


def test_a_ca_file_without_certificates_is_refused():
    from mimi.config.settings import cfg

    support.write(limits.CA_BUNDLE, pem("ca"))
    support.write("/certs/junk.pem", "hello, this is not a certificate\n" * 20)
    support.write("/certs/cut.pem", BEGIN + "\nMAMCAQ\n" + END + "\n")
    cfg.set("tz", "+01:00")  # /config.json exists
    for path, why in (("/certs/junk.pem", "holds no certificate"), ("/certs", "a folder"),
                      ("/config.json", "holds no certificate"), ("/certs/none.pem", "no such file"),
                      ("/certs/cut.pem", "certificate 1 at line 1: not valid base64")):
        e = support.raises(ValueError, cfg.set, "ca_file", path)
        assert str(e).startswith("ca_file: %s: " % path) and why in str(e), e
        assert cfg.get("ca_file") == ""
    # a file that held roots when it was set and none now: a warning, the shipped roots stay
    support.write("/certs/mine.pem", pem("other_ca"))
    cfg.set("ca_file", "/certs/mine.pem")
    support.write("/certs/mine.pem", "garbage\n")
    assert http.Client(url()).request("GET", "/hello").body == b"hello"
    assert any("ca_file /certs/mine.pem: no certificate in it" in m for m in warnings()), messages()
    assert not any("ca_file" in m and " I tls: " in m for m in messages())


def pem_garble(r, text):
    """PEM text with 1-3 faults a person or a bad copy makes: cut anywhere, a line
    dropped, doubled or cut, bytes changed, a BEGIN or END line lost, junk lines or
    binary inside a block, a certificate's body swapped for another's."""
    lines = text.split(b"\n")
    for _ in range(r.below(3) + 1):
        k = r.below(8)
        i = r.below(len(lines))
        if k == 0:
            lines = b"\n".join(lines)[:r.below(len(b"\n".join(lines)) + 1)].split(b"\n")
        elif k == 1 and len(lines) > 1:
            del lines[i]
        elif k == 2:
            lines.insert(i, lines[i])
        elif k == 3:
            lines[i] = lines[i][:r.below(len(lines[i]) + 1)]
        elif k == 4 and lines[i]:
            b = bytearray(lines[i])
            for _ in range(r.below(4) + 1):
                b[r.below(len(b))] = r.pick(b"=-#/+A\x00\xff \t")
            lines[i] = bytes(b)
        elif k == 5:
            j = [n for n, ln in enumerate(lines) if ln.startswith(b"-----")]
            if j:
                del lines[r.pick(j)]
        elif k == 6:
            lines.insert(i, r.pick((b"garbage", r.bytes(r.below(200)), b"=" * 70, b"# \xed\xa0\x80",
                                    BEGIN.encode(), END.encode(), b"-----BEGIN PRIVATE KEY-----")))
        else:
            lines[i:i] = [b"QUFB" * 16] * r.below(200)
    return b"\n".join(lines)


def test_garbled_ca_files_never_cost_the_shipped_roots():
    # issue 25 items 1-3 as a fuzz: whatever ca_file holds, config_set stores it or
    # refuses it naming the setting, and HTTPS to a server of the shipped roots works
    import fuzz
    from mimi.config.settings import cfg

    support.write(limits.CA_BUNDLE, pem("ca"))
    sound = ("# Mine\n" + pem("other_ca") + "# Also mine\n" + pem("other_ca")).encode()
    for n, r in fuzz.cases(40, "ca_file"):
        data = pem_garble(r, sound)
        try:
            with open("/certs/mine.pem", "wb") as f:
                f.write(data)
            try:
                cfg.set("ca_file", "/certs/mine.pem")
            except ValueError as e:
                if not str(e).startswith("ca_file: /certs/mine.pem: "):
                    fuzz.fail("ca_file", n, "refused without naming it: %s" % e, data)
                support.write("/certs/mine.pem", pem("other_ca"))  # set a sound one, then break it
                cfg.set("ca_file", "/certs/mine.pem")
                with open("/certs/mine.pem", "wb") as f:
                    f.write(data)
            body = http.Client(url()).request("GET", "/hello").body
        except Exception as e:  # noqa: B902 - anything else is the failure looked for
            fuzz.crash("ca_file", n, e, data)
        if body != b"hello":
            fuzz.fail("ca_file", n, "answered %r" % body, data)
        cfg.set("ca_file", "")
