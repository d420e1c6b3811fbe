# web_search{query}: Tavily (tavily_key) and Brave (search_key), each the other's
# fallback: the provider that last answered is tried first, so a failing one is
# skipped until the other fails too. At most 5 results, MimiClaw's format:
#   1. Title
#      https://url
#      snippet
# The response is held whole (up to limits.HTTP_RESPONSE_MAX; once: the client's
# body bytearray is not copied) but never parsed whole: a scanner walks the JSON
# bytes to the results array and decodes one result at a time, so a 200 KB Brave
# answer costs the body plus one small object.
import json
from mimi import limits, log, jsonutil
from mimi.config.settings import cfg
from mimi.jsonscan import ws, member, skip_value
from mimi.tools import searchstate as state  # the bases and the provider preferred
from micropython import const

NO_KEY = ("Error: No search API key configured. Set a Tavily key with set_tavily_key('...') "
          "or a Brave Search key with set_search_key('...') on the REPL.")


class SearchError(Exception):
    pass


def items(body, path, limit):
    """The first `limit` elements of the array at `path` (keys, bytes) in JSON `body`,
    each decoded alone. ValueError when the body is not such JSON."""
    out = []
    try:
        i = ws(body, 0)
        for key in path:
            if body[i] != 123:
                raise ValueError("expected an object")
            i = member(body, i, key)
            if i < 0:
                return out  # no results array: no results
        if body[i] != 91:
            raise ValueError("results is not an array")
        i = ws(body, i + 1)
        while body[i] != 93 and len(out) < limit:
            j = skip_value(body, i)
            out.append(jsonutil.loads(body[i:j]))
            i = ws(body, j)
            if body[i] == 44:
                i = ws(body, i + 1)
    except IndexError:
        raise ValueError("JSON ends early")
    return out


# --- formatting -----------------------------------------------------------------
_ENT = const((("&amp;", "&"), ("&quot;", '"'), ("&#39;", "'"), ("&#x27;", "'"), ("&lt;", "<"),
              ("&gt;", ">"), ("&nbsp;", " ")))


def _clean(text, cap):
    """Plain one-line text: tags dropped, common entities decoded, whitespace folded."""
    s = str(text or "")
    out = []
    while True:
        a = s.find("<")
        if a < 0:
            out.append(s)
            break
        b = s.find(">", a)
        if b < 0:
            out.append(s)
            break
        out.append(s[:a])
        s = s[b + 1:]
    s = "".join(out)
    for e, c in _ENT:
        if e in s:
            s = s.replace(e, c)
    s = " ".join(s.split())
    if len(s) > cap:
        s = s[:cap - 3].rstrip() + "..."
    return s


def format_results(results):
    """[(title, url, snippet)] -> MimiClaw's numbered text."""
    if not results:
        return "No results found."
    parts = []
    for n, (title, url, snippet) in enumerate(results, 1):
        parts.append("%d. %s\n   %s\n   %s" % (n, _clean(title, limits.SEARCH_TITLE_MAX) or "(no title)",
                                              _clean(url, 300), _clean(snippet, limits.SEARCH_SNIPPET_MAX)))
    return "\n\n".join(parts)


# --- HTTP ---------------------------------------------------------------------
_SAFE = const("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~")


def quote(text, cap=limits.SEARCH_QUERY_MAX):
    """URL-encode, at most `cap` bytes, never cutting a character or an escape."""
    out = []
    used = 0
    for ch in text:
        piece = ch if ch in _SAFE else "".join("%%%02X" % x for x in ch.encode())
        if used + len(piece) > cap:
            break
        out.append(piece)
        used += len(piece)
    return "".join(out)


def _client(base):
    from mimi.net import http

    # ca=None: the root bundle on the flash (limits.CA_BUNDLE); TLS is always verified
    return http.Client(base, proxy=http.proxy_from_config(cfg), timeout_s=limits.SEARCH_TIMEOUT_S)


def _fetch(base, method, path, headers, body=None):
    import gc

    gc.collect()  # the body needs one large block
    c = _client(base)
    try:  # the client holds at most limits.HTTP_RESPONSE_MAX (256 KB) of body
        r = c.request(method, path, headers=headers, body=body)
    finally:
        c.close()
    if r.status != 200:
        hint = " (check the key)" if r.status in (401, 403) else ""
        raise SearchError("HTTP %d%s" % (r.status, hint))
    return r.body


def tavily(query, key):
    body = json.dumps({"query": query, "max_results": limits.SEARCH_RESULTS,
                       "include_answer": False, "search_depth": "basic"})
    data = _fetch(state.TAVILY_BASE, "POST", "/search",
                  {"Authorization": "Bearer " + key, "Content-Type": "application/json"}, body)
    found = items(data, (b"results",), limits.SEARCH_RESULTS)
    return [(r.get("title"), r.get("url"), r.get("content")) for r in found if isinstance(r, dict)]


def brave(query, key):
    path = "/res/v1/web/search?q=%s&count=%d" % (quote(query), limits.SEARCH_RESULTS)
    data = _fetch(state.BRAVE_BASE, "GET", path, {"X-Subscription-Token": key, "Accept": "application/json"})
    found = items(data, (b"web", b"results"), limits.SEARCH_RESULTS)
    return [(r.get("title"), r.get("url"), r.get("description")) for r in found if isinstance(r, dict)]


PROVIDERS = (("tavily", "tavily_key", tavily), ("brave", "search_key", brave))


def search(query):
    """The tool's answer for `query` (a string, never raises)."""
    query = " ".join(str(query or "").split())
    if not query:
        return "Error: 'query' must not be empty"
    order = [(n, cfg.get(k), fn) for n, k, fn in PROVIDERS if cfg.get(k)]
    if not order:
        return NO_KEY
    # Tavily first unless Brave answered last (no sort(): MicroPython's is not stable)
    first = state.prefer
    order = [p for p in order if p[0] == first] + [p for p in order if p[0] != first]
    errors = []
    for name, key, fn in order:
        try:
            results = fn(query, key)
        except Exception as e:  # network, HTTP, JSON: try the other provider
            msg = str(e) or type(e).__name__
            errors.append("%s: %s" % (name, msg))
            log.warning("search", "%s failed: %s", name, msg)
            continue
        state.prefer = name
        return format_results(results)
    return "Error: web search failed (%s)" % "; ".join(errors)


def web_search(args, ctx):
    return search(args.get("query"))

