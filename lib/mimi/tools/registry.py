# Tool registry: names, JSON schemas and handlers, and one `call` that always answers
# with a string ("Error: ..." on any problem), so a tool can never crash the agent loop
# (its code, with the arguments' check and the output's cap, is agent/act.py's: loaded
# for a tool step, not held while the turn's LLM calls run).
# The global `registry` holds the tool table of mimi/tools/__init__.py (schemas as JSON
# text, a tool's module imported when it is first called); add() registers more
# (tests, extensions) with a dict schema and a handler.
from mimi import jsonutil, short, load, unload, run


class Ctx:
    """Where the current turn came from; tools such as cron_add read it."""

    def __init__(self, channel=None, chat_id=None, **extra):
        self.channel = channel
        self.chat_id = chat_id
        for k, v in extra.items():
            setattr(self, k, v)


class Registry:
    def __init__(self, table=b""):
        # the built-in tools: the rows of bytes constants (a tuple of them: mimi/tools
        # TABLE; None: that one, loaded when needed), read as views (nothing copied to RAM);
        # add()ed ones: name -> (name, handler, description, schema dict), listed after
        self._table = table
        self._tools = {}
        self._order = []

    def rows(self):
        """(name, module, description, schema JSON) of each row of the table, as
        memoryviews of it."""
        t = self._table
        if t is None:
            t = load("mimi.tools").TABLE
        for t in (t,) if isinstance(t, bytes) else t:
            m = memoryview(t)
            i = 1
            while i < len(t):
                a = t.find(b"\t", i)
                b = t.find(b"\t", a + 1)
                c = t.find(b"\t", b + 1)
                e = t.find(b"\n", c + 1)
                if e < 0:
                    e = len(t)
                yield m[i:a], m[a + 1:b], m[b + 1:c], m[c + 1:e]
                i = e + 1

    def _find(self, name):
        """name -> (handler or module name, schema: JSON text or dict), or None."""
        t = self._tools.get(name)
        if t:
            return t[1], t[3]
        for r in self.rows():
            if r[0] == name:
                return str(r[1], "utf-8"), r[3]

    def add(self, name, description, schema, handler):
        # both APIs refuse the whole request over one bad tool name
        if not name or len(name) > 64 or any(not (c.isalpha() or c.isdigit() or c in "_-")
                                             for c in name):
            raise ValueError("tool name %r: use 1-64 letters, digits, _ or -" % name)
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise ValueError("tool %s: the input schema must be a JSON object schema" % name)
        if name not in self._tools:
            self._order.append(name)
        self._tools[name] = (name, handler, description, schema)

    def names(self):
        out = [str(r[0], "utf-8") for r in self.rows()]
        return out + [n for n in self._order if n not in out]

    def schema(self, name):
        t = self._find(name)
        if t is None:
            raise KeyError(name)
        return t[1] if isinstance(t[1], dict) else jsonutil.loads(t[1])

    def key(self):
        """Changes when the tools offered change (devices attached, an I2C scan): a
        provider that encoded them for this turn encodes them again."""
        from mimi import devices

        return devices.offer()

    def call(self, name, args=None, ctx=None, pieces=False):
        """Run tool `name` with args (dict or JSON text); the result string, never raises.
        pieces: a long result may come as a tuple of str (bus.pieces(): a file read in
        1 KB pieces, never one block its size), as the agent sends it; else joined.
        (agent/act.py's call(): its code loaded for the call, or kept by a turn's step.)"""
        return run("agent.act", "call", self, name, args, ctx, pieces)

    def release(self):
        """The table's module goes on a short heap (a .mpy's 4.9 KB: its bytes constant
        in RAM) until a tool's call or the next turn loads it again: the provider has
        written the request's tool parts to the flash (llm/provider.py), and the turn's
        LLM calls read them from there. Only a table not given at init."""
        if self._table is None and short():
            unload("mimi.tools")

    def specs(self):
        """(name, description as JSON string content, schema as JSON text) of every
        tool offered now (mimi/tools NEEDS), for a provider to write into its request
        as they are: the table's as memoryviews of it, an add()ed one's as str."""
        from mimi.tools import NEEDS

        have = self.key()
        skip = [n for n, need in NEEDS.items() if not need & have]
        out = []
        for n, _, d, s in self.rows():
            if n in skip:
                continue
            if self._tools and str(n, "utf-8") in self._tools:
                continue  # add()ed again: that one's, below
            out.append((n, d, s))
        if self._order:
            import json  # (only here: each import of json looks for a json.py first)

            for n in self._order:
                if n not in skip:
                    t = self._tools[n]
                    out.append((n, json.dumps(t[2])[1:-1], json.dumps(t[3])))
        return out

registry = Registry(None)
