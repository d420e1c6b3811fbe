# Tool registry: names, JSON schemas and handlers, and one `call` that always answers
# with a string ("Error: ..." on any problem), so a tool can never crash the agent loop.
# The global `registry` holds the tool table of mimi/tools/__init__.py (schemas as JSON
# text, a tool's module imported when it is first called); add() registers more
# (tests, extensions) with a dict schema and a handler.
import sys
from mimi import limits, log, fs, jsonutil, short, load, unload
from micropython import const

_TRUNC_NOTE = const("\n[output truncated at %d bytes]")
_TYPES = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list, tuple),
}
_TYPE_WORDS = {"string": "a string", "integer": "an integer", "number": "a number",
               "boolean": "true or false", "object": "an object", "array": "an array"}


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

    def call(self, name, args=None, ctx=None, pieces=False):
        """Run tool `name` with args (dict or JSON text); the result string, never raises.
        pieces: a long result may come as a tuple of str (bus.pieces(): a file read in
        1 KB pieces, never one block its size), as the agent sends it; else joined."""
        tool = self._find(name)
        if tool is None:
            return "Error: unknown tool '%s'" % name
        args, err = check_args(self.schema(name), args)
        if err:
            return "Error: " + err
        mod = None
        try:
            handler = tool[0]
            tool = None
            if isinstance(handler, str):  # the module loads when its tool is called (under the
                mod = "mimi.tools." + handler  # flash's lock: the console may load it too)
                if mod in sys.modules:
                    mod = None  # loaded before: it stays
                handler = getattr(load("mimi.tools." + handler), name)
            self.release()  # (after the tool's module: its package is the table's)
            if short():  # a tool may want one big block (a file read): garbage out first
                import gc

                gc.collect()
            out = handler(args, ctx)
        except Exception as e:  # a tool's bug becomes a message to the model
            log.exception("tools", "%s failed" % name, e)
            return "Error: %s failed: %s" % (name, _exc_text(e))
        finally:
            handler = None
            if mod and short():  # the next LLM call of the turn needs the room
                unload(mod)
                unload("mimi.jsonscan")  # (web_search's scanner, stateless: 0.8 KB)
            self.release()
        if out is None:
            out = ""
        elif isinstance(out, tuple):
            if not pieces:
                out = "".join(out)
        elif not isinstance(out, str):
            out = str(out)
        return cap(out)


def check_args(schema, args):
    """-> (args dict, None) or (None, problem) per the schema's required and types."""
    if args is None or args == "":
        args = {}
    elif isinstance(args, (str, bytes)):
        try:
            args = jsonutil.loads(args)
        except ValueError:
            return None, "arguments are not valid JSON"
    if not isinstance(args, dict):
        return None, "arguments must be a JSON object"
    props = schema.get("properties") or {}
    for key in schema.get("required") or ():
        if args.get(key) is None:
            want = props.get(key, {}).get("type")
            return None, "'%s' required%s" % (key, " (%s)" % want if want else "")
    for key, spec in props.items():
        if key not in args or args[key] is None:
            continue
        want = spec.get("type")
        types = _TYPES.get(want)
        if not types:
            continue
        v = args[key]
        if want == "integer" and isinstance(v, float) and abs(v) < 1e15 and v == int(v):
            args[key] = v = int(v)
        if not isinstance(v, types) or (isinstance(v, bool) and want != "boolean"):
            return None, "'%s' must be %s" % (key, _TYPE_WORDS[want])
        if "enum" in spec and v not in spec["enum"]:
            return None, "'%s' must be one of: %s" % (key, ", ".join(str(x) for x in spec["enum"]))
    return args, None


def text_bytes(text):
    """UTF-8 bytes of a str or of a text in pieces (a tuple of str)."""
    if isinstance(text, tuple):
        return sum(len(memoryview(t)) for t in text)
    return len(memoryview(text))


def cap(text, limit=limits.TOOL_OUTPUT_MAX):
    """At most `limit` UTF-8 bytes, cut on a character boundary, with a note when cut.
    A text in pieces stays so when it fits (joined only to be cut)."""
    if isinstance(text, tuple):
        if text_bytes(text) <= limit:
            return text
        text = "".join(text)
    if len(text) * 4 <= limit:  # fast path: can't be over even if all 4-byte chars
        return text
    data = text.encode()
    if len(data) <= limit:
        return text
    note = _TRUNC_NOTE % limit
    return fs.utf8_cut(data, limit - len(note)).decode() + note


def _exc_text(e):
    return str(e) or type(e).__name__


registry = Registry(None)
