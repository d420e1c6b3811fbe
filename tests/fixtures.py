"""Shared pytest fixtures (CPython side)."""
import pytest


# --- fake LLM servers (tests/fakes/llm.py) -------------------------------------
@pytest.fixture(scope="session")
def llm_certs(tmp_path_factory):
    from fakes import tlsca

    return tlsca.make(tmp_path_factory.mktemp("llm_certs"))


@pytest.fixture
def fake_anthropic(llm_certs):
    """Fake Anthropic Messages API: a dict (base_url https, http_base_url, ca, api_key,
    control) + .script(...), .requests, .violations; see tests/fakes/llm.py."""
    from fakes import llm

    svc = llm.start("anthropic", llm_certs)
    yield svc
    svc.close()


@pytest.fixture
def fake_openai(llm_certs):
    """Fake OpenAI Chat Completions API; same shape as fake_anthropic."""
    from fakes import llm

    svc = llm.start("openai", llm_certs)
    yield svc
    svc.close()


@pytest.fixture(scope="session")
def real_proxies(tmp_path_factory):
    """Real squid and Dante with username/password auth on 127.0.0.1 (tests/fakes/
    realproxy.py): {"user", "password", "squid", "dante" (ports or None), "blocked",
    "why": {name: why it is missing}}."""
    import shutil
    import tempfile
    from fakes import realproxy

    folder = tempfile.mkdtemp(prefix="mimi-proxies-")  # (pytest's are closed to squid's user)
    px = realproxy.start(folder)
    yield px.info()
    px.stop()
    shutil.rmtree(folder, ignore_errors=True)


# --- fake Telegram Bot API (tests/fakes/telegram.py) ----------------------------
@pytest.fixture
def fake_telegram():
    """Fake Telegram Bot API: a dict (base_url, token, username, control, bot_id) +
    .update(...), .fail(...), .configure(...), .state(), .wait(pred)."""
    from fakes import telegram

    svc = telegram.start()
    yield svc
    svc.close()


# --- fake Feishu / Lark open platform (tests/fakes/feishu.py) -------------------
@pytest.fixture
def fake_feishu():
    """Fake Feishu: a dict (base_url, app_id, app_secret, bot_open_id, control) +
    .event(...), .push(...), .fail(...), .configure(...), .drop(), .expire_tokens(),
    .state(), .wait(pred)."""
    from fakes import feishu

    svc = feishu.start()
    yield svc
    svc.close()


@pytest.fixture
def feishu_frames():
    """pbbp2.Frames encoded by the fake's own protobuf code (tests/fakes/feishu.py), as
    hex, with what they hold: the firmware's codec is checked against another one."""
    from fakes import feishu

    big = 1 << 40
    frames = [
        {"SeqID": 7, "LogID": big, "service": 33554678, "method": 1,
         "headers": [["type", "event"], ["message_id", "m1"], ["sum", "1"], ["seq", "0"],
                     ["trace_id", "\u4e2d\u6587"]], "payload": '{"code":200}'},
        {"SeqID": 0, "LogID": 0, "service": -5, "method": 0, "headers": [["type", "ping"]], "payload": None},
    ]
    out = []
    for f in frames:
        enc = dict(f, headers=[tuple(h) for h in f["headers"]],
                   payload=None if f["payload"] is None else f["payload"].encode())
        out.append({"hex": feishu.encode_frame(enc).hex(), "frame": f})
    return out


# --- OTA bundles over loopback HTTP (tests/fakes/otaserver.py) -------------------
@pytest.fixture
def ota_server(tmp_path, llm_certs):
    """{"base": http URL, "key", "files", "fw_sha256", "fw_size"}; see tests/fakes/otaserver.py."""
    from fakes import otaserver

    svc = otaserver.start(tmp_path / "ota_www", llm_certs)
    yield svc
    svc.close()


# --- fake SNTP servers on loopback UDP (tests/fakes/ntp.py) ----------------------
@pytest.fixture
def fake_ntp():
    """{"good": port, "era1", "kod", "forged", "client", "silent", "unix", "unix_era1"}."""
    from fakes import ntp

    srv = ntp.Server()
    yield srv.info()
    srv.close()


# --- a fake DNS server on loopback UDP (tests/fakes/dns.py) ----------------------
@pytest.fixture
def fake_dns():
    """{"port": UDP port, "names": {name: ip}}; slow./silent./forged. names behave so."""
    from fakes import dns

    srv = dns.Server({"api.telegram.test": "127.0.0.1", "slow.telegram.test": "127.0.0.1",
                      "silent.example.test": "127.0.0.1", "forged.example.test": "127.0.0.1",
                      "alias.example.test": "cname:real.example.test",
                      "real.example.test": "127.0.0.2"})
    yield srv.info()
    srv.close()


# --- fake Tavily and Brave search APIs (tests/fakes/search.py) -------------------
@pytest.fixture
def fake_search():
    """{"tavily": base URL, "brave": base URL} + .tavily/.brave (.requests, .violations)."""
    from fakes import search

    svc = search.start()
    yield svc
    svc.close()


# --- HTTP client tests (tests/fakes/tlsca.py, tests/fakes/httpserver.py) ---------
@pytest.fixture(scope="session")
def test_ca(tmp_path_factory):
    """Paths of a test CA, a localhost/127.0.0.1 server cert, an unrelated CA and a
    wrong-hostname cert: {"ca", "ca_der", "cert", "key", "other_ca", "wrong_cert", "wrong_key"}."""
    from fakes import tlsca

    return tlsca.make(tmp_path_factory.mktemp("test_ca"))


@pytest.fixture
def http_env(test_ca):
    """Loopback servers for tests/mp/test_http.py: ports of an HTTPS server ("tls"), one
    with a wrong-hostname cert ("wrong"), plain HTTP ("plain"), CONNECT and SOCKS5
    proxies, one that never answers ("silent"), and a plain "control" server whose
    GET /stats reports their counters."""
    import sys
    from pathlib import Path

    lib = str(Path(__file__).resolve().parent.parent / "lib")
    if lib not in sys.path:
        sys.path.append(lib)
    from mimi import limits
    from fakes.httpserver import ConnectProxy, Server, Silent, Socks5Proxy, client_test_routes

    wrong = dict(test_ca, cert=test_ca["wrong_cert"], key=test_ca["wrong_key"])
    servers = {"tls": Server(test_ca), "wrong": Server(wrong), "plain": Server(),
               "connect": ConnectProxy(), "socks": Socks5Proxy(), "silent": Silent()}
    for name in ("tls", "wrong", "plain"):
        client_test_routes(servers[name], limits.HTTP_RESPONSE_MAX + 1)
    control = Server()
    control.route("GET", "/stats", Server.stats_route(servers))
    for s in list(servers.values()) + [control]:
        s.start()
    yield dict({k: s.port for k, s in servers.items()}, control=control.port, ca=test_ca)
    for s in list(servers.values()) + [control]:
        s.stop()


@pytest.fixture
def harness_probe():
    """A JSON value for tests/host/test_harness.py's probe of the PARAMS knob."""
    return {"value": 42}


# --- micropython-lib drivers the board's firmware freezes -----------------------
MPLIB_MODULES = {  # module -> its path in MicroPython v1.28.0's source tarball
    "onewire": "lib/micropython-lib/micropython/drivers/bus/onewire/onewire.py",
    "ds18x20": "lib/micropython-lib/micropython/drivers/sensor/ds18x20/ds18x20.py",
    "dht": "lib/micropython-lib/micropython/drivers/sensor/dht/dht.py",
    "neopixel": "lib/micropython-lib/micropython/drivers/led/neopixel/neopixel.py",
}


@pytest.fixture(scope="session")
def micropython_lib():
    """The real onewire, ds18x20, dht and neopixel (micropython-lib at the commit v1.28.0
    pins, frozen into the official ESP32_GENERIC_S3 firmware), taken from MicroPython's
    source ($MPY_SRC, default ../shared/micropython/, as `make frozen` takes it) into
    build/mplib/, never into the repository: {"dir": path or None, "why": ...}."""
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root / "tools"))
    import mpbuild

    out, why = mpbuild.copy_modules(MPLIB_MODULES, root / "build" / "mplib")
    return {"dir": str(out) if out else None, "why": why}
