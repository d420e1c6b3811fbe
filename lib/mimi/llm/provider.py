# What the agent sees of an LLM: Provider.chat(system, messages, tools) -> Reply.
# Messages are Anthropic-style (role user/assistant, content str or list of blocks);
# each provider module turns them into its wire format. This module holds the
# parts both share: the reply shape, provider selection and retries.
#
# The request is never built as one string: it is a tuple of parts (net/http.py
# writes them one after the other). What a turn sends again on every call is
# encoded once: the system prompt arrives as a tuple (fixed, sections, turn) of lists
# of JSON string literals (context.encoded()), each message is encoded once by
# message() when it enters the turn, and the tool table is written from its JSON text.
import json
import sys
import time
from mimi import limits, log, jsonutil, short
from mimi.config.settings import PROVIDERS, DEFAULT_BASE, DEFAULT_MODEL
from mimi.net import split_url
from mimi.utf8 import valid
from micropython import const


class LLMError(Exception):
    """A request that failed for good; str(e) is fit to show the user."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


class Call:
    def __init__(self, id, name, args):
        self.id = id if isinstance(id, str) else ""  # a server may send any JSON value
        self.name = name if isinstance(name, str) else ""
        self.args = args  # dict, or the raw text when the model sent invalid JSON


def tokens(v):
    """A token count from a reply's usage: anything but a count (a string, a list, a
    negative or a fraction, as a broken server may send) counts 0."""
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0


class Reply:
    def __init__(self, text="", tool_calls=None, usage=None, stop=None):
        self.text = text
        self.tool_calls = tool_calls or []
        # input counts every prompt token (cached ones included); cache_read is the part
        # served from the provider's prompt cache, cache_write the part written to it.
        self.usage = usage or {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
        self.stop = stop


_TURN_MARK = const("\n## Current Turn Context")  # where a plain-text prompt's per-turn tail starts


def prompt(system):
    """A system prompt ready for a request: (fixed, sections, turn), each a list of JSON
    string literals (quotes included) whose contents make that block's text; from a
    plain str or [fixed, rest] (the per-turn tail split off at _TURN_MARK), or system
    itself when it is such a tuple already. Fixed and sections are cache-marked."""
    if isinstance(system, tuple):
        return system
    parts = [system] if isinstance(system, str) else list(system or ())
    turn = ""
    if parts:
        cut = parts[-1].find(_TURN_MARK)
        if cut >= 0:
            parts[-1], turn = parts[-1][:cut], parts[-1][cut:]
    rest = parts.pop() if len(parts) > 1 else ""
    return ([x for p in parts for x in _literals(p)], _literals(rest), _literals(turn))


def _literals(text):
    """text as JSON string literals of PROMPT_CHUNK characters each: a 16 KB prompt
    given as one str never needs one block its escaped size (a short heap has none)."""
    step = limits.PROMPT_CHUNK
    return [dumps(text[i:i + step]) for i in range(0, len(text), step)]


def inner(lits):
    """The contents of JSON string literals as views (no copies), and Regions of a file
    holding such contents (context.encoded(spill=...)): joined, one string."""
    return tuple(memoryview(x)[1:-1] if isinstance(x, str) else x for x in lits)


try:
    json.dumps(0, separators=(",", ":"))
    _COMPACT = (",", ":")
except TypeError:  # a port built without it: the default ", " and ": "
    _COMPACT = None


def dumps(obj):
    """Compact JSON for a request, valid UTF-8 whatever the strings held (text stored
    before it was checked would make the server refuse every request carrying it)."""
    s = json.dumps(obj, separators=_COMPACT) if _COMPACT else json.dumps(obj)
    if len(memoryview(s)) != len(s) and not valid(s):  # ASCII needs no check
        s = json.dumps(jsonutil.clean([obj]))[1:-1]
    return s


def parts(obj):
    """dumps(obj) as request parts (net/httpbody.py): the same JSON, but a string longer
    than PROMPT_CHUNK, or a text in pieces (a tuple of str, bus.pieces()), is one JSON
    string escaped ESCAPE_STEP characters at a time each time it is counted or sent
    (httpbody.escaped()): a big tool output is never held escaped beside itself
    (a 5 KB file read was, where the short heap's tool call failed)."""
    if isinstance(obj, tuple) or isinstance(obj, str) and len(obj) > limits.PROMPT_CHUNK:
        return (b'"', _hb().escaped(obj, dumps), b'"')
    if isinstance(obj, dict) and _long(obj):
        return (b"{", [(dumps(k), b":", parts(v)) for k, v in obj.items()], b"}")
    if isinstance(obj, list) and _long(obj):
        return (b"[", [parts(v) for v in obj], b"]")
    return memoryview(dumps(obj))  # a view: its byte length is free on every call


def text_of(obj):
    """dumps(obj), to be sent as a JSON string's content (OpenAI's tool call arguments are
    JSON in a string); where obj holds a string longer than PROMPT_CHUNK, the same text as
    a tuple of str pieces (bus.pieces()' shape, which parts() escapes a piece at a time),
    never one block its size: a 12 KB write_file's content was one, made at the tool step."""
    if not _long(obj):
        return dumps(obj)
    out = []
    _pieces(obj, out)
    return tuple(out)


def _pieces(obj, out):
    if not _long(obj):
        out.append(dumps(obj))
    elif isinstance(obj, str):  # ESCAPE_STEP characters a piece, as escapes() takes them
        step = limits.ESCAPE_STEP
        out.append('"')
        for i in range(0, len(obj), step):
            out.append(dumps(obj[i:i + step])[1:-1])
        out.append('"')
    else:  # a dict or a list (JSON has no tuple) holding such a string
        d = isinstance(obj, dict)
        out.append("{" if d else "[")
        for n, v in enumerate(obj.items() if d else obj):
            if n:
                out.append(",")
            if d:
                out.append(dumps(v[0]) + ":")
                v = v[1]
            _pieces(v, out)
        out.append("}" if d else "]")


def _hb():
    """net/httpbody.py (the loop loads it too: mimi.load(), under the flash's lock)."""
    import mimi

    return mimi.load("mimi.net.httpbody")


def _long(obj):
    """obj holds a string longer than PROMPT_CHUNK (or a text in pieces), at any depth."""
    if isinstance(obj, tuple):
        return True
    if isinstance(obj, str):
        return len(obj) > limits.PROMPT_CHUNK
    if isinstance(obj, dict):
        obj = obj.values()
    elif not isinstance(obj, list):
        return False
    for v in obj:
        if _long(v):
            return True
    return False


def joined(texts):
    """Texts (str, or tuples of pieces: bus.pieces()) as one text: a str, or a tuple of
    their pieces when any was in pieces."""
    if not any(isinstance(t, tuple) for t in texts):
        return "".join(texts)
    return tuple(p for t in texts for p in (t if isinstance(t, tuple) else (t,)) if p)


def stripped(text):
    """text.strip() of a str or a text in pieces (the ends trimmed, nothing joined; one
    piece left: that str)."""
    if not isinstance(text, tuple):
        return text.strip()
    t = [p for p in text if p]
    while t and t[0].isspace():  # (not strip(): a copy of a 1 KB piece to look at it)
        t.pop(0)
    while t and t[-1].isspace():
        t.pop()
    if not t:
        return ""
    t[0] = t[0].lstrip()
    t[-1] = t[-1].rstrip()
    return t[0] if len(t) == 1 else tuple(t)


def strip_think(text):
    """Drop reasoning models' <think>...</think> blocks, including an unterminated
    leading one and a bare closing tag whose opening the server swallowed."""
    if not text:
        return ""
    if isinstance(text, tuple):  # a long answer in pieces: joined only when it has a tag
        if not any("think>" in p for p in text) and \
                not any("think>" in text[k][-7:] + text[k + 1][:7] for k in range(len(text) - 1)):
            return stripped(text)
        text = "".join(text)
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


class Provider:
    name = ""
    path = ""
    _sys = _sys_parts = _tools = _tools_parts = _tools_key = None  # this turn's encoded parts
    # A function given the answer's text so far while it streams (llm/stream.py), set
    # for a turn someone watches; None: answers come whole.
    stream = None

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
        """system: str, [fixed, rest] or prompt()'s tuple; messages: dicts or message() strings;
        tools: a Registry (its table), a list of tool dicts, or None."""
        if system is not self._sys:  # the same prompt up to 10 times a turn: parts once
            self._sys, self._sys_parts = system, self.system_parts(prompt(system))
        key = tools.key() if hasattr(tools, "key") else None  # the tools offered changed
        if tools is not self._tools or key != self._tools_key:
            self._tools, self._tools_key = tools, key
            self._tools_parts = self._tool_parts(tools) if tools else None
            if hasattr(self._tools_parts, "path"):  # (a Region)
                tools.release()  # (after _tool_parts() returned: its frame held the views)
        msgs = [self.message(m) if isinstance(m, dict) else m for m in messages]
        data = self.post(self.prefix + self.path + self.query, self.headers(),
                         self.body(self._sys_parts, msgs, self._tools_parts, self.stream is not None),
                         self.stream)
        msgs = None
        try:
            return self.decode(data)
        except (KeyError, IndexError, TypeError, AttributeError, ValueError) as e:
            raise LLMError("LLM reply has an unexpected shape (%s: %s)"
                           % (type(e).__name__, e))

    def _tool_parts(self, tools):
        """The request's tool parts for the turn; on a short heap a Region of
        limits.TOOLS_SPILL (written once a turn), read from the flash by each call, as
        the prompt is: a Registry's (Registry.release()) then lets its table go."""
        parts = self.tool_parts(_specs(tools))
        if short() and hasattr(tools, "release"):
            try:
                return _hb().spill(parts, limits.TOOLS_SPILL)
            except OSError as e:
                log.warning("llm", "tool table kept in RAM: %s", e)
        return parts

    def forget(self):
        """End of a turn: drop its encoded prompt and tool parts (kept only within it)."""
        self._sys = self._sys_parts = self._tools = self._tools_parts = None

    def close(self):
        close = getattr(self.client, "close", None)
        if close:
            close()

    def post(self, path, headers, body, on_text=None):
        """POST a JSON body (a tuple of parts) with retries on 429, 5xx and transport
        failures; the decoded reply. on_text: the answer is streamed (llm/stream.py)."""
        for attempt in range(limits.LLM_RETRIES + 1):
            wait = sink = None
            if on_text:
                from mimi.llm.stream import Stream

                sink = Stream(self.name, on_text)
            try:
                resp = self._request(path, headers, body, sink)
                if sink:
                    if sink.sse:
                        return sink.result()
                    resp.body = b"".join(sink.pieces)  # plain JSON, or an error
            except Exception as e:  # HTTPError or OSError (the former's module, net/httperr.py,
                if not isinstance(e, OSError):  # loads with the first: not named before)
                    from mimi.net import http

                    if isinstance(e, MemoryError) or not isinstance(e, http.HTTPError):
                        raise
                from mimi.llm import failure

                err = LLMError("LLM request failed: %s" % (str(e) or type(e).__name__))
                if not failure.retryable(e):
                    raise err
            else:
                if resp.status == 200:
                    return self._parse(resp)
                from mimi.llm import failure

                err = LLMError("LLM error %d: %s" % (resp.status, failure.error_text(resp)),
                               resp.status)
                if resp.status != 429 and resp.status < 500:
                    log.error("llm", "%s", err)
                    raise err
                wait = failure.retry_after(resp.headers)
            if attempt == limits.LLM_RETRIES:
                break
            backoff = limits.LLM_BACKOFF_BASE_S * (1 << attempt)
            wait = min(limits.LLM_BACKOFF_MAX_S, backoff if wait is None else wait)
            log.warning("llm", "%s; retry %d/%d in %ss", err, attempt + 1, limits.LLM_RETRIES, wait)
            self.sleep(wait)
        log.error("llm", "%s (gave up after %d retries)", err, limits.LLM_RETRIES)
        raise err

    def _request(self, path, headers, body, sink):
        # A declared blocking call: a running watchdog (loaded: it is one of the loop's
        # tasks) waits for its deadline, not less.
        wd = sys.modules.get("mimi.services.watchdog")
        tls = None
        if getattr(self.client, "tls", False):  # loop clients yield their TLS connection
            from mimi.net import tls  # where memory is tight
        if wd:
            wd.declare(limits.LLM_TIMEOUT_S)
        kw = {"sink": sink} if sink else {}
        if tls:
            tls.claim(self.client)
        try:
            return self.client.request("POST", path, headers, body, **kw)
        finally:
            if tls:
                tls.release()
            if wd:
                wd.done()

    def _parse(self, resp):
        try:
            data = jsonutil.loads(resp.body)
        except (ValueError, TypeError, UnicodeError):
            from mimi.llm import failure

            preview = failure.error_text(resp)[:80]
            raise LLMError("LLM sent a malformed reply (not JSON): %s" % preview)
        if not isinstance(data, dict):
            raise LLMError("LLM sent a malformed reply (not a JSON object)")
        return data


def _specs(tools):
    """[(name, description as JSON string content, schema JSON)] of a Registry (views of
    its table) or of a list of tool dicts (Anthropic's shape, as str): the request's
    parts for the whole turn."""
    if hasattr(tools, "specs"):
        return tools.specs()
    return [(t["name"], dumps(t.get("description") or "")[1:-1], dumps(t["input_schema"]))
            for t in tools]


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
    kept = client is None
    if kept:
        from mimi.net import http

        proxy = http.proxy_from_config(cfg)
        # Same settings as last turn: keep the provider and its open TLS connection
        # (or, after drop(True), the connection alone).
        sig = (name, key, model, base, cfg.get("max_tokens"), repr(proxy))
        if _cached and _cached[0] == sig:
            if isinstance(_cached[1], Provider):
                return _cached[1]
            client = _cached[1]  # (kept until its provider is made: a failure keeps it)
        elif _cached:
            _cached[1].close()
            _cached = None
    if name == "anthropic":
        from mimi.llm.anthropic import Anthropic as cls
    else:
        from mimi.llm.openai import OpenAI as cls
    p = cls(key, model, base, cfg.get("max_tokens"), client=client, ca=None,
            proxy=proxy, sleep=sleep)
    if kept:
        _cached = (sig, p)
    return p


_cached = None


def drop(keep=False):
    """Forget the provider kept for the next turn, closing its connection. keep (the end
    of a turn on a short heap): the provider goes (its code, buffer and encoded parts)
    but its idle connection stays for the next turn's provider: it holds only its client
    and socket objects in this heap (~0.6 KB on 32-bit; mbedTLS's buffers are in the C
    heap, and worker._release() closes it when that is tight), and a handshake made
    again costs the board its time and the C heap's churn every turn. -> (settings'
    signature, client) kept, for keep() after this module is loaded again, or None."""
    global _cached
    if _cached:
        c = _cached[1]
        if isinstance(c, Provider):
            c = c.client
        if keep and getattr(c, "_sock", None) is not None:
            c._buf = None  # (made again by the next request)
            _cached = (_cached[0], c)
            return _cached
        c.close()
        _cached = None


def keep(kept):
    """The connection drop(True) returned, for the next from_config() of this module
    (loaded again since: agent/worker.py unloads it on a short heap)."""
    global _cached
    if _cached and _cached[1] is not kept[1]:
        _cached[1].close()
    _cached = kept
