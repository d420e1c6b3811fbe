"""Fake Tavily and Brave search APIs (CPython, loopback HTTP, one server each).

Each checks the request the way the real API needs it and answers 400 (with the
problem in the body, also recorded in `violations`) when it is wrong:
  Tavily  POST /search, Authorization: Bearer <key>, JSON body exactly
          {query, max_results: 5, include_answer: false, search_depth: "basic"}
  Brave   GET /res/v1/web/search?q=<urlencoded, <= 255 bytes>&count=5,
          X-Subscription-Token: <key>
The key picks the behaviour:
  *-good     normal answer: 7 results titled "<Provider> result N for <query>"
  *-big      ~200 KB answer (other sections full of "results", escaped quotes and
             braces inside strings, before the real results)
  *-empty    no results
  *-500      HTTP 500          *-garbage  200 with a body that is not JSON
  anything else: 401
GET /_requests on either server -> {"requests": [...], "violations": [...]}.
"""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit, parse_qs

TAVILY_BODY_KEYS = {"query", "max_results", "include_answer", "search_depth"}
BIG = 200 * 1024


def _results(provider, query, n=7):
    out = []
    for i in range(1, n + 1):
        r = {"title": "%s result %d for %s" % (provider, i, query),
             "url": "https://example.com/%s/%d" % (provider.lower(), i)}
        text = 'Snippet %d about <strong>%s</strong> &amp; "more"' % (i, query)
        if provider == "Tavily":
            r.update(content=text.replace("<strong>", "").replace("</strong>", ""), score=0.9,
                     raw_content=None)
        else:
            r.update(description=text, age="1 day", profile={"name": "Example"})
        out.append(r)
    return out


def _padding(provider):
    """Sections that look like results but are not, until the JSON is ~200 KB."""
    filler = 'x"y}z]{\\"' * 40  # escaped quote, braces and brackets inside a string
    items = []
    size = 0
    i = 0
    while size < BIG:
        item = {"title": "decoy %d %s" % (i, filler), "url": "https://decoy/%d" % i,
                "results": [{"title": "nested decoy"}], "n": i, "ok": True, "none": None,
                "f": -1.5e3}
        size += len(json.dumps(item))
        items.append(item)
        i += 1
    return items


def body_for(provider, key, query):
    mode = key.split("-", 1)[1] if "-" in key else ""
    if mode in ("good", "big", "empty"):
        results = [] if mode == "empty" else _results(provider, query)
        if provider == "Tavily":
            doc = {"query": query, "follow_up_questions": None, "answer": None}
            if mode == "big":
                doc["images"] = _padding(provider)
            doc["results"] = results
            doc["response_time"] = 0.5
        else:
            doc = {"query": {"original": query}, "type": "search"}
            if mode == "big":
                doc["news"] = {"type": "news", "results": _padding(provider)}
                doc["mixed"] = {"main": [{"type": "web", "index": 0}]}
            doc["web"] = {"type": "search", "results": results, "family_friendly": True}
            if mode == "big":
                doc["videos"] = {"results": _padding(provider)[:10]}
        return 200, json.dumps(doc).encode()
    if mode == "500":
        return 500, b'{"error": "internal"}'
    if mode == "garbage":
        return 200, b"<html>surprise</html>"
    return 401, b'{"detail": {"error": "Unauthorized: missing or invalid API key."}}'


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _send(self, status, body, ctype="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _bad(self, problem):
        self.server.fake.violations.append(problem)
        self._send(400, json.dumps({"error": problem}).encode())

    def do_GET(self):
        fake = self.server.fake
        u = urlsplit(self.path)
        if u.path == "/_requests":
            return self._send(200, json.dumps({"requests": fake.requests,
                                               "violations": fake.violations}).encode())
        fake.requests.append({"method": "GET", "path": self.path, "headers": dict(self.headers)})
        if fake.provider != "Brave" or u.path != "/res/v1/web/search":
            return self._send(404, b'{"error": "not found"}')
        raw_q = u.query.split("&")
        qs = parse_qs(u.query, keep_blank_values=True)
        q = [p for p in raw_q if p.startswith("q=")]
        if not q or not qs.get("q"):
            return self._bad("q missing")
        if len(q[0]) - 2 > 255:
            return self._bad("q longer than 255 bytes encoded")
        if qs.get("count") != ["5"]:
            return self._bad("count must be 5")
        key = self.headers.get("X-Subscription-Token")
        if not key:
            return self._bad("X-Subscription-Token missing")
        status, body = body_for("Brave", key, qs["q"][0])
        self._send(status, body)

    def do_POST(self):
        fake = self.server.fake
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n)
        fake.requests.append({"method": "POST", "path": self.path, "headers": dict(self.headers),
                              "body": raw.decode(errors="replace")})
        if fake.provider != "Tavily" or self.path != "/search":
            return self._send(404, b'{"error": "not found"}')
        auth = self.headers.get("Authorization") or ""
        if not auth.startswith("Bearer "):
            return self._bad("Authorization: Bearer missing")
        try:
            body = json.loads(raw)
        except ValueError:
            return self._bad("body is not JSON")
        if not isinstance(body, dict) or set(body) != TAVILY_BODY_KEYS:
            return self._bad("body keys %s" % sorted(body) if isinstance(body, dict) else "body")
        if (body["max_results"] != 5 or body["include_answer"] is not False
                or body["search_depth"] != "basic" or not isinstance(body["query"], str)):
            return self._bad("body values %r" % body)
        status, out = body_for("Tavily", auth[7:], body["query"])
        self._send(status, out)


class Fake:
    def __init__(self, provider):
        self.provider = provider
        self.requests = []
        self.violations = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.fake = self
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def base(self):
        return "http://127.0.0.1:%d" % self.httpd.server_address[1]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class Pair(dict):
    def __init__(self):
        self.tavily = Fake("Tavily")
        self.brave = Fake("Brave")
        super().__init__(tavily=self.tavily.base, brave=self.brave.base)

    def close(self):
        self.tavily.close()
        self.brave.close()


def start():
    return Pair()
