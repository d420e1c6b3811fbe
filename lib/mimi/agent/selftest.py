# The agent's part of the check an update passes before it is confirmed
# (update/check.py asks, the agent thread runs it: worker.py): a turn's work up to the
# network, with an LLM client that sends nothing. The system prompt built as a turn
# builds it, a session read, the request encoded with the tool table, a canned answer
# decoded; the ReAct loop and every tool's module loaded. run() -> None, or why not
# (MemoryError when the heap had no room). What it loads is dropped again: a check on
# a settled heap leaves nothing behind.
import sys
from mimi import unload

CHAT = "selftest"
ANSWERS = {
    "anthropic": b'{"content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":1,"output_tokens":1}}',
    "openai": b'{"choices":[{"message":{"role":"assistant","content":"ok"}}],'
              b'"usage":{"prompt_tokens":1,"completion_tokens":1}}',
}
# what a turn and its tools load on this thread (never what the loop keeps): dropped
# after the check
MINE = ("mimi.agent.context", "mimi.agent.react", "mimi.agent.act", "mimi.llm", "mimi.memory", "mimi.tools",
        "mimi.devices", "mimi.net.http", "mimi.jsonscan")


class _Client:
    """Takes a request instead of sending it (its body is counted, piece by piece)."""

    name = None
    sent = 0

    def request(self, method, path, headers, body, **kw):
        import mimi

        httpbody = mimi.load("mimi.net.httpbody")  # (both threads load it)
        from mimi.net.http import Response

        pieces = httpbody.flat(body)
        self.sent = httpbody.length(body)
        if bytes(memoryview(pieces[0])[:1]) != b"{" or bytes(memoryview(pieces[-1])[-1:]) != b"}":
            raise ValueError("the request is not a JSON object")
        return Response(200, "OK", {}, ANSWERS[self.name])


class _Settings:
    """The settings as a provider reads them, with stand-ins for what is not set up
    yet: a board without an API key still builds its request."""

    def __init__(self, cfg):
        self.cfg = cfg

    def get(self, key):
        from mimi.config.settings import PROVIDERS

        v = self.cfg.get(key)
        if key == "provider" and v not in PROVIDERS:
            return PROVIDERS[0]
        if key == "api_key" and not v:
            return "not-set"
        return v


def run():
    before = set(sys.modules)
    try:
        return _turn()
    finally:
        for name in [m for m in sys.modules if m not in before and m.startswith(MINE)]:
            unload(name)
        import gc

        gc.collect()


def _turn():
    from mimi.config.settings import cfg
    from mimi.llm import provider
    from mimi.agent import worker, react  # noqa: F401 - the ReAct loop loads
    from mimi.memory import sessions
    from mimi.tools.registry import registry

    for mod in set(str(row[1], "utf-8") for row in registry.rows()):  # each tool's code, loaded when first called
        name = "mimi.tools." + mod
        if name not in sys.modules:
            __import__(name)
            unload(name)
    client = _Client()
    try:
        llm = provider.from_config(cfg, client=client)
    except ValueError:  # not set up yet (no API key): the request is built all the same
        llm = provider.from_config(_Settings(cfg), client=client)
    client.name = llm.name
    enc = getattr(llm, "message", None)
    from mimi import bus, channels

    chan = [r.name for r in channels.TABLE if r.label][-1]  # a chat a person writes in
    system = worker._system_prompt(chan, CHAT, enc is not None, False)
    history = sessions.load(bus.session_key(chan, CHAT), enc)
    history.append({"role": "user", "content": "Are you there?"})
    reply = llm.chat(system, history, registry)
    if hasattr(llm, "forget"):
        llm.forget()
    if not client.sent or reply.text != "ok":
        return "the LLM request or its answer came out wrong (%d bytes sent, answer %r)" % (
            client.sent, reply.text[:40])
    return None
