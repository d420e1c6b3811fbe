# Settings: validation, masking, atomic save, REPL functions.
import json
from support import raises, Capture
from mimi import fs
from mimi.config import settings as config
from mimi.config.settings import Config


def fresh():
    return Config("/config.json").load()


def test_config_is_a_leaf():
    # read everywhere from boot on: importing it must load none of the firmware's parts
    import sys

    parts = ("mimi.llm", "mimi.tools", "mimi.services", "mimi.channels", "mimi.agent", "mimi.memory")
    assert [m for m in sys.modules if m.startswith(parts)] == []


def test_defaults_when_no_file():
    c = fresh()
    assert c.get("provider") == "anthropic"
    assert c.get("ws_port") == 18789
    assert c.get("max_tokens") == 4096
    assert c.get("heartbeat_min") == 30
    assert c.get("tg_api_base") == "https://api.telegram.org"
    assert c.get("ws_token") is None
    assert not fs.exists("/config.json")


def test_set_saves_only_non_defaults_and_reloads():
    c = fresh()
    c.set("api_key", "sk-ant-1234567890")
    c.set("max_tokens", "2048")
    c.set("provider", "anthropic")  # the default: not stored
    with open("/config.json") as f:
        stored = json.load(f)
    assert stored == {"api_key": "sk-ant-1234567890", "max_tokens": 2048}
    c2 = fresh()
    assert c2.get("max_tokens") == 2048 and c2.get("api_key") == "sk-ant-1234567890"


def test_unknown_key_refused_nothing_written():
    c = fresh()
    e = raises(ValueError, c.set, "wifi_password", "x")
    assert "unknown setting" in str(e) and "wifi_pass" in str(e)
    assert not fs.exists("/config.json")


def test_bad_values_refused_with_reason():
    c = fresh()
    cases = [
        ("provider", "gemini", "anthropic, openai"),
        ("max_tokens", "lots", "whole number"),
        ("max_tokens", 0, "between"),
        ("ws_port", 70000, "between"),
        ("api_base", "ftp://x", "https://"),
        ("tg_api_base", "http://", "no host"),
        ("tz", "+25:00", "between"),
        ("tz", "Berlin", "+08:00"),
        ("tg_allow", "12,abc", "numbers"),
        ("tg_token", "nonsense", "BotFather"),
        ("wifi_pass", "short", "8 to 63"),
        ("proxy_type", "socks4", "http, socks5"),
        ("model", "x" * 101, "at most"),
        ("wifi_ssid", "a\nb", "control"),
        ("stream", "maybe", "on or off"),
    ]
    for key, value, words in cases:
        e = raises(ValueError, c.set, key, value)
        assert key in str(e) and words in str(e), (key, str(e))
    assert not fs.exists("/config.json")


def test_update_is_all_or_nothing():
    c = fresh()
    c.set("model", "claude-x")
    raises(ValueError, c.update, {"model": "other", "provider": "nope"})
    assert c.get("model") == "claude-x"
    assert fresh().get("model") == "claude-x"


def test_normalisation():
    c = fresh()
    c.set("tz", "+8")
    assert c.get("tz") == "+08:00"
    c.set("tz", "-0530")
    assert c.get("tz") == "-05:30"
    c.set("tg_allow", " 12, -100200 ,12,")
    assert c.get("tg_allow") == "12,-100200"
    c.set("api_base", "http://192.168.1.5:11434/")
    assert c.get("api_base") == "http://192.168.1.5:11434"
    c.set("provider", "OpenAI")
    assert c.get("provider") == "openai"
    assert c.get("stream") is True
    c.set("stream", "off")
    assert c.get("stream") is False and fresh().get("stream") is False
    c.set("stream", 1)
    assert c.get("stream") is True


def test_secrets_masked():
    c = fresh()
    c.set("api_key", "sk-ant-api03-secretsecret")
    c.set("tg_token", "123456:ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    rows = {k: v for k, v, src in c.rows()}
    assert rows["api_key"] == "sk-a****"
    assert "secret" not in rows["api_key"]
    assert rows["tg_token"] == "1234****"
    assert rows["tavily_key"] == "(not set)"
    assert rows["model"] == "(not set)"


def test_atomic_save_leaves_no_temp_and_survives_torn_temp():
    c = fresh()
    c.set("model", "m1")
    assert not fs.exists("/config.json.tmp")
    # A power cut during a save leaves a torn temp file: the real file is intact.
    with open("/config.json.tmp", "w") as f:
        f.write('{"model": "m2", "api_')
    assert fresh().get("model") == "m1"
    c.set("model", "m3")
    assert fresh().get("model") == "m3"
    assert not fs.exists("/config.json.tmp")


def test_corrupt_file_reported_not_fatal():
    with open("/config.json", "w") as f:
        f.write("{not json")
    c = fresh()
    assert c.get("provider") == "anthropic"
    assert any("not valid JSON" in p for p in c.problems)


def test_bad_entries_in_file_dropped_and_reported():
    with open("/config.json", "w") as f:
        f.write(json.dumps({"provider": "bogus", "colour": "red", "model": "ok-model"}))
    c = fresh()
    assert c.get("provider") == "anthropic" and c.get("model") == "ok-model"
    assert len(c.problems) == 2


def test_watchers_told_of_changes():
    c = fresh()
    seen = []
    c.watch(lambda keys: seen.append(keys))
    c.set("tg_token", "123456:ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    assert seen == [["tg_token"]]


def test_ws_token_empty_string_is_kept():
    c = fresh()
    c.set("ws_token", "")
    assert fresh().get("ws_token") == ""
    assert any("OFF" in m for m in fresh().missing())


def test_repl_functions():
    from mimi import repl

    config.cfg = fresh()
    with Capture() as out:
        repl.set_api_key("sk-1234567890abcdef")
        repl.set_model_provider("openai")
        repl.set_proxy("10.0.0.2", "3128", "http", "ann", "proxy-secret")
        repl.allow_chat(12345)
        repl.allow_chat("12345")
        repl.allow_chat(-1001)
        repl.config_set("colour", "red")
        repl.set_model_provider("bard")
        repl.config_show()
    t = out.text
    assert "OK: api_key = sk-1****" in t
    assert "sk-1234567890abcdef" not in t
    assert "already allowed" in t
    assert "Error: unknown setting 'colour'" in t
    assert "Error: provider: must be one of" in t
    c = fresh()
    assert c.get("provider") == "openai" and c.get("proxy_port") == 3128
    assert (c.get("proxy_user"), c.get("proxy_pass")) == ("ann", "proxy-secret")
    assert "proxy-secret" not in t
    assert c.get("tg_allow") == "12345,-1001"
    with Capture() as out:
        repl.clear_proxy()
        repl.config_reset()
        repl.help()
    assert fresh().get("proxy_host") == "" and fresh().get("provider") == "anthropic"
    assert fresh().get("proxy_pass") == ""
    assert "set_wifi(ssid, password)" in out.text


def test_wifi_scan_survives_a_non_utf8_ssid():
    # MicroPython's bytes.decode() raises on invalid UTF-8 whatever `errors` says.
    from mimi import repl, board

    w = board.wlan()
    w.scan = lambda: [(b"caf\xe9-net", b"\x02\x00\x00\x00\x00\x02", 6, -50, 3, False),
                      (b"", b"\x02\x00\x00\x00\x00\x03", 1, -70, 0, True)]
    try:
        with Capture() as out:
            repl.wifi_scan()
    finally:
        del w.scan
    assert "caf\ufffd-net" in out.text and "(hidden)" in out.text, out.text


def test_every_settings_command_of_spec_6():
    from mimi import repl

    config.cfg = fresh()
    for name in ("help", "config_show", "config_set", "config_reset", "set_wifi",
                 "set_tg_token", "set_api_key", "set_model", "set_model_provider",
                 "set_api_base", "set_search_key", "set_tavily_key", "set_proxy",
                 "clear_proxy", "allow_chat", "heap_info", "restart"):
        assert name in repl.__all__ and callable(getattr(repl, name)), name
    with Capture() as out:
        repl.set_wifi("home", "password1")
        repl.set_wifi("x", "short")  # refused: nothing written
        repl.set_tg_token("123456:ABCDEFGHIJKLMNOPQRSTUVWXYZ")
        repl.set_model("llama3")
        repl.set_api_base("http://192.168.1.5:11434/v1/")
        repl.set_search_key("brave-key-123")
        repl.set_tavily_key("tvly-key-123")
        repl.heap_info()
    c = fresh()
    assert (c.get("wifi_ssid"), c.get("wifi_pass")) == ("home", "password1")
    assert c.get("model") == "llama3" and c.get("api_base") == "http://192.168.1.5:11434/v1"
    assert c.get("search_key") == "brave-key-123" and c.get("tavily_key") == "tvly-key-123"
    assert "Error: wifi_pass" in out.text and "password1" not in out.text
    assert "free" in out.text and "flash" in out.text
    raises(SystemExit, repl.restart)  # the host's reset: tools/sim boots again


def test_repl_commands_load_their_bodies_for_the_call_only():
    import sys
    import mimi
    from mimi import repl

    loaded = lambda: [m for m in ("console.commands", "update.ota", "update.boot") if "mimi." + m in sys.modules or hasattr(mimi, m)]  # noqa: E731
    assert loaded() == [] and callable(repl.config_show) and callable(repl.ota_status)
    with Capture() as out:
        repl.config_show()
        repl.ota_status()
        repl.help()
    assert "provider" in out.text and "update state" in out.text and "ota_update(url)" in out.text
    assert loaded() == []
    raises(TypeError, repl.config_set, "model")  # a wrong call fails as the body does ...
    assert loaded() == []  # ... and still leaves nothing behind


def test_gpio_default_is_the_pin_policys():
    from mimi.devices import pins as gpio_policy
    from mimi.config import rules as configrules

    assert config.SCHEMA["gpio_allow"][0] == gpio_policy.DEFAULT
    assert gpio_policy.parse(gpio_policy.DEFAULT) == gpio_policy.parse(configrules.value("gpio_allow", gpio_policy.DEFAULT))


def test_rules_loaded_for_a_check_only():
    import sys

    c = fresh()
    c.update({"model": "m", "gpio_allow": "4-6"})
    assert c.rows() and c.missing() is not None
    assert "mimi.config.rules" not in sys.modules and "mimi.devices.pins" not in sys.modules
