# What the agent sees of an LLM: Provider.chat(system, messages, tools) -> Reply.
# Messages are Anthropic-style (role user/assistant, content str or list of blocks);
# each provider module turns them into its wire format. This module holds the
# parts both share: the reply shape, provider selection and retries.
import time
from mimi import limits, log, jsonutil, fs
from mimi.config import PROVIDERS, DEFAULT_BASE, DEFAULT_MODEL
from mimi.net import split_url


class LLMError(Exception):
    """A request that failed for good; str(e) is fit to show the user."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


class Call:
    def __init__(self, id, name, args):
        self.id = id
        self.name = name
        self.args = args  # dict, or the raw text when the model sent invalid JSON

    def __repr__(self):
        return "Call(%r, %r, %r)" % (self.id, self.name, self.args)


class Reply:
    def __init__(self, text="", tool_calls=None, usage=None, stop=None):
        self.text = text
        self.tool_calls = tool_calls or []
        # input counts every prompt token (cached ones included); cache_read is the part
        # served from the provider's prompt cache.
        self.usage = usage or {"input": 0, "output": 0, "cache_read": 0}
        self.stop = stop


def strip_think(text):
    """Drop reasoning models' <think>...</think> blocks, including an unterminated
    leading one and a bare closing tag whose opening the server swallowed."""
    if not text:
        return ""
    while True:
        a = text.find("<think>")
        if a < 0:
            break
        b = text.find("</think>", a)
        if b < 0:
            text = text[:a]
            break
        text = text[:a] + text[b + 8:]
    b = text.find("</think>")
    if b >= 0:
        text = text[b + 8:]
    return text.strip()


def split_base(url):
    """A base URL as the user pasted it -> (origin, path prefix, query): a base with a path
    is used as given ('https://openrouter.ai/api/v1' -> '/api/v1'), a bare host gets '/v1';
    the endpoint ('/messages', '/chat/completions') goes between prefix and query."""
    url, q, query = url.partition("?")
    url = url.rstrip("/")
    path = split_url(url)[3]
    return url[:len(url) - len(path)], path or "/v1", q + query


def _retry_after(headers):
    """Seconds the server asks us to wait, clamped to [0, LLM_BACKOFF_MAX_S] (a negative
    value made time.sleep fail the turn); None when absent or unreadable (an HTTP date, NaN)."""
    for key, scale in (("retry-after-ms", 1000), ("retry-after", 1)):
        v = headers.get(key)
        if v:
            try:
                w = float(v) / scale
            except ValueError:  # an HTTP date: fall back to our own backoff
                continue
            if w == w:  # not NaN
                return min(max(w, 0), limits.LLM_BACKOFF_MAX_S)
    return None


def error_text(resp):
    """The API's own error message from an error response (both APIs' shapes, and the
    looser ones of other OpenAI-compatible servers), else the start of the body."""
    try:
        data = resp.json()
    except Exception:  # any parse failure: quote the body instead
        data = None
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        for v in (err, data.get("message"), data.get("detail")):
            if isinstance(v, str) and v:
                return v
    text = fs.decode(fs.utf8_cut(resp.body or b"", limits.LLM_ERROR_BODY_MAX))
    return text.strip() or "(empty response)"


class Provider:
    name = ""
    path = ""
    _body = None  # JsonBuf, made at the first request

    def __init__(self, api_key, model=None, api_base=None, max_tokens=None, client=None,
                 ca=None, proxy=None, timeout_s=limits.LLM_TIMEOUT_S, sleep=None):
        self.api_key = api_key or ""
        self.model = model or DEFAULT_MODEL[self.name]
        self.api_base = (api_base or DEFAULT_BASE[self.name]).rstrip("/")
        self.max_tokens = max_tokens or limits.MAX_TOKENS_DEFAULT
        origin, self.prefix, self.query = split_base(self.api_base)
        if client is None:
            from mimi.net import http

            if not origin.startswith("https://"):
                ca = None
            client = http.Client(origin, ca=ca, proxy=proxy, timeout_s=timeout_s)
        self.client = client
        self.sleep = sleep or time.sleep

    def chat(self, system, messages, tools=None):
        data = self.post(self.prefix + self.path + self.query, self.headers(),
                         self.encode(system, messages, tools or []))
        try:
            return self.decode(data)
        except (KeyError, IndexError, TypeError, AttributeError, ValueError) as e:
            raise LLMError("LLM reply has an unexpected shape (%s: %s)"
                           % (type(e).__name__, e))

    def close(self):
        close = getattr(self.client, "close", None)
        if close:
            close()

    def post(self, path, headers, body):
        """POST JSON with retries on 429, 5xx and transport failures; the decoded reply."""
        if self._body is None:
            from mimi.llm.jsonbuf import JsonBuf

            self._body = JsonBuf()
        payload = self._body.encode(body)
        body = None
        from mimi.net.http import HTTPError
        from mimi.services import watchdog
        for attempt in range(limits.LLM_RETRIES + 1):
            wait = None
            try:
                # A declared blocking call: the watchdog waits for its deadline, not less.
                with watchdog.blocking(limits.LLM_TIMEOUT_S):
                    resp = self.client.request("POST", path, headers, payload)
            except (HTTPError, OSError) as e:
                err = LLMError("LLM request failed: %s" % (str(e) or type(e).__name__))
                if not _retryable_transport(e):
                    raise err
            else:
                if resp.status == 200:
                    return self._parse(resp)
                err = LLMError("LLM error %d: %s" % (resp.status, error_text(resp)), resp.status)
                if resp.status != 429 and resp.status < 500:
                    log.error("llm", "%s", err)
                    raise err
                wait = _retry_after(resp.headers)
            if attempt == limits.LLM_RETRIES:
                break
            backoff = limits.LLM_BACKOFF_BASE_S * (1 << attempt)
            wait = min(limits.LLM_BACKOFF_MAX_S, backoff if wait is None else wait)
            log.warning("llm", "%s; retry %d/%d in %ss", err, attempt + 1, limits.LLM_RETRIES, wait)
            self.sleep(wait)
        log.error("llm", "%s (gave up after %d retries)", err, limits.LLM_RETRIES)
        raise err

    def _parse(self, resp):
        try:
            data = jsonutil.loads(resp.body)
        except (ValueError, TypeError, UnicodeError):
            preview = error_text(resp)[:80]
            raise LLMError("LLM sent a malformed reply (not JSON): %s" % preview)
        if not isinstance(data, dict):
            raise LLMError("LLM sent a malformed reply (not a JSON object)")
        return data


def _retryable_transport(e):
    # A bad certificate or an oversized reply will not get better by asking again.
    from mimi.net import http

    return not isinstance(e, (http.TLSFailure, http.TooLarge))


def from_config(cfg, client=None, sleep=None):
    """The provider the settings name; ValueError when they make no sense."""
    global _cached
    name = cfg.get("provider")
    if name not in PROVIDERS:
        raise ValueError("unknown provider %r: use 'anthropic' or 'openai'" % (name,))
    key = cfg.get("api_key")
    base = cfg.get("api_base") or DEFAULT_BASE[name]
    # Only a LAN server (Ollama, LM Studio...) at its own api_base may go without a key.
    if not key and (name == "anthropic" or base.rstrip("/") == DEFAULT_BASE[name]):
        raise ValueError("no API key: set one with set_api_key('...')")
    model = cfg.get("model") or DEFAULT_MODEL[name]
    proxy = None
    if client is None:
        from mimi.net import http

        proxy = http.proxy_from_config(cfg)
        # Same settings as last turn: keep the provider and its open TLS connection.
        sig = (name, key, model, base, cfg.get("max_tokens"), repr(proxy))
        if _cached and _cached[0] == sig:
            return _cached[1]
        if _cached:
            _cached[1].close()
            _cached = None
    if name == "anthropic":
        from mimi.llm.anthropic import Anthropic as cls
    else:
        from mimi.llm.openai import OpenAI as cls
    p = cls(key, model, base, cfg.get("max_tokens"), client=client, ca=None,
            proxy=proxy, sleep=sleep)
    if client is None:
        _cached = (sig, p)
    return p


_cached = None
