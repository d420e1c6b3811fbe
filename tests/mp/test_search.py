# web_search against fake Tavily and Brave servers (tests/fakes/search.py), fallback
# both ways, a 200 KB answer, and the JSON scanner that keeps memory small.
import json
from support import fixture
from mimi.config.settings import cfg
from mimi.tools import search, searchstate
from mimi.tools.registry import registry

FIXTURES = ("fake_search",)
HEAPSIZE = "1m"
HEAP = {"test_200kb_responses": "576k"}  # the client holds the body once (twice before: 672k+)
TIMEOUT = 60


def setup():
    cfg.load()
    searchstate.prefer = None


def servers():
    f = fixture("fake_search")
    searchstate.TAVILY_BASE = f["tavily"]
    searchstate.BRAVE_BASE = f["brave"]
    return f


def entries(out):
    return [block.split("\n") for block in out.split("\n\n")]


def test_scanner_walks_to_the_results():
    doc = {"a": 'quote " brace { bracket [ back \\', "n": [1, 2.5, -3e2, True, False, None],
           "news": {"results": [{"title": "decoy"}]},
           "web": {"type": "search", "results": [{"title": "t%d" % i, "url": "u"} for i in range(9)]}}
    body = json.dumps(doc).encode()
    got = search.items(body, (b"web", b"results"), 5)
    assert [g["title"] for g in got] == ["t0", "t1", "t2", "t3", "t4"]
    assert search.items(body, (b"missing", b"results"), 5) == []
    assert search.items(b' { "results" : [ ] } ', (b"results",), 5) == []
    for bad in (b"<html>", b'{"results": [{"title": "x"', b'{"results": 5}', b""):
        try:
            search.items(bad, (b"results",), 5)
        except ValueError:
            continue
        raise AssertionError(bad)


def test_scanner_on_200kb_keeps_memory_small():
    import gc

    filler = 'x"y}z]{\\"' * 40
    decoys = [{"title": "decoy %d %s" % (i, filler), "results": [{"title": "no"}]} for i in range(400)]
    body = json.dumps({"news": {"results": decoys}, "web": {"results": [{"title": "real"}]}}).encode()
    decoys = None
    assert len(body) > 150 * 1024
    gc.collect()
    before = gc.mem_alloc()
    got = search.items(body, (b"web", b"results"), 5)
    assert got == [{"title": "real"}]
    assert gc.mem_alloc() - before < 16 * 1024  # only the one result was decoded


def test_format_and_quote():
    out = search.format_results([("A <b>title</b>", "https://a", "x &amp; y\n  z"), ("B", "https://b", "")])
    assert out == "1. A title\n   https://a\n   x & y z\n\n2. B\n   https://b\n   "
    assert search.format_results([]) == "No results found."
    assert search.quote("a b&c=d/é") == "a%20b%26c%3Dd%2F%C3%A9"
    q = search.quote("é" * 200)
    assert len(q) <= 255 and len(q) % 6 == 0  # never cuts a character's escapes
    assert len(search.quote("a" * 1000)) == 255


def test_no_key_is_a_clear_error():
    out = registry.call("web_search", {"query": "x"})
    assert out.startswith("Error: No search API key configured")
    assert "set_tavily_key" in out and "set_search_key" in out
    assert registry.schema("web_search") == {
        "type": "object", "properties": {"query": {"type": "string", "description": "The search query"}},
        "required": ["query"]}


def test_tavily():
    servers()
    cfg.set("tavily_key", "tvly-good")
    out = registry.call("web_search", {"query": "esp32 news"})
    e = entries(out)
    assert len(e) == 5
    assert e[0] == ["1. Tavily result 1 for esp32 news", "   https://example.com/tavily/1",
                    '   Snippet 1 about esp32 news & "more"']
    assert e[4][0] == "5. Tavily result 5 for esp32 news"


def test_brave():
    servers()
    cfg.set("search_key", "brave-good")
    out = registry.call("web_search", {"query": "café & crème"})
    e = entries(out)
    assert len(e) == 5
    assert e[0] == ["1. Brave result 1 for café & crème", "   https://example.com/brave/1",
                    '   Snippet 1 about café & crème & "more"']


def test_brave_long_query_is_capped():
    servers()
    cfg.set("search_key", "brave-good")
    out = registry.call("web_search", {"query": "ü" * 300})
    assert out.startswith("1. Brave result 1 for üüü"), out  # the fake refuses > 255 bytes


def test_both_keys_tavily_first():
    servers()
    cfg.update({"tavily_key": "tvly-good", "search_key": "brave-good"})
    assert registry.call("web_search", {"query": "q"}).startswith("1. Tavily result 1 for q")
    assert searchstate.prefer == "tavily"


def test_tavily_fails_brave_answers_then_is_preferred():
    servers()
    cfg.update({"tavily_key": "tvly-500", "search_key": "brave-good"})
    out = registry.call("web_search", {"query": "q1"})
    assert out.startswith("1. Brave result 1 for q1")
    assert searchstate.prefer == "brave"
    # Brave fails next: back to Tavily (which works again)
    cfg.update({"tavily_key": "tvly-good", "search_key": "brave-500"})
    out = registry.call("web_search", {"query": "q2"})
    assert out.startswith("1. Tavily result 1 for q2")
    assert searchstate.prefer == "tavily"


def test_short_heap_drops_the_module_and_keeps_the_preference():
    import sys
    import mimi

    servers()
    cfg.update({"tavily_key": "tvly-500", "search_key": "brave-good"})
    mimi.unload("mimi.tools.search")  # (this file's import: loaded before, it would stay)
    mimi._short = True
    try:
        assert registry.call("web_search", {"query": "q1"}).startswith("1. Brave result 1 for q1")
        assert "mimi.tools.search" not in sys.modules  # its 4 KB of code went after the call
        assert "mimi.jsonscan" not in sys.modules  # and its scanner's 0.8 KB (stateless)
        assert searchstate.prefer == "brave"
        cfg.update({"tavily_key": "tvly-good", "search_key": "brave-500"})
        assert registry.call("web_search", {"query": "q2"}).startswith("1. Tavily result 1 for q2")
        assert searchstate.prefer == "tavily" and "mimi.tools.search" not in sys.modules
    finally:
        mimi._short = False


def test_brave_garbage_falls_back_to_tavily():
    servers()
    searchstate.prefer = "brave"
    cfg.update({"tavily_key": "tvly-good", "search_key": "brave-garbage"})
    assert registry.call("web_search", {"query": "q"}).startswith("1. Tavily result 1 for q")


def test_both_fail():
    servers()
    cfg.update({"tavily_key": "tvly-wrong", "search_key": "brave-500"})
    out = registry.call("web_search", {"query": "q"})
    assert out.startswith("Error: web search failed (")
    assert "tavily: HTTP 401 (check the key)" in out and "brave: HTTP 500" in out


def test_200kb_responses():
    servers()
    cfg.set("tavily_key", "tvly-big")
    e = entries(registry.call("web_search", {"query": "big"}))
    assert len(e) == 5 and e[0][0] == "1. Tavily result 1 for big"
    cfg.update({"tavily_key": "", "search_key": "brave-big"})
    e = entries(registry.call("web_search", {"query": "big"}))
    assert len(e) == 5 and e[0][0] == "1. Brave result 1 for big"


def test_no_results():
    servers()
    cfg.set("search_key", "brave-empty")
    assert registry.call("web_search", {"query": "nothing"}) == "No results found."


def test_repl_web_search_prints():
    from support import Capture
    from mimi import repl

    with Capture() as c:
        assert repl.web_search("anything") is None
    assert "No search API key configured" in c.text
    servers()
    cfg.set("search_key", "brave-good")
    with Capture() as c:
        repl.web_search("esp32")
    assert "1. Brave result 1 for esp32" in c.text
