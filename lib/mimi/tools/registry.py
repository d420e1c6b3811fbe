# Tool registry: names, JSON schemas and handlers, both providers' tool formats,
# and one `call` that always answers with a string ("Error: ..." on any problem),
# so a tool can never crash the agent loop.
from mimi import limits, log, fs, jsonutil

TRUNC_NOTE = "\n[output truncated at %d bytes]"
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
    def __init__(self):
        self._tools = {}  # name -> (description, schema, handler)
        self._order = []
        self._anthropic = None
        self._openai = None

    def add(self, name, description, schema, handler):
        # both APIs refuse the whole request over one bad tool name
        if not name or len(name) > 64 or any(not (c.isalpha() or c.isdigit() or c in "_-")
                                             for c in name):
            raise ValueError("tool name %r: use 1-64 letters, digits, _ or -" % name)
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise ValueError("tool %s: the input schema must be a JSON object schema" % name)
        if name not in self._tools:
            self._order.append(name)
        self._tools[name] = (description, schema, handler)
        self._anthropic = self._openai = None

    def names(self):
        return list(self._order)

    def schema(self, name):
        return self._tools[name][1]

    def anthropic_tools(self):
        if self._anthropic is None:
            self._anthropic = [{"name": n, "description": self._tools[n][0],
                                "input_schema": self._tools[n][1]} for n in self._order]
        return self._anthropic

    def openai_tools(self):
        if self._openai is None:
            from mimi.llm.openai import to_tools  # the one place that knows OpenAI's shape

            self._openai = to_tools(self.anthropic_tools())
        return self._openai

    def call(self, name, args=None, ctx=None):
        """Run tool `name` with args (dict or JSON text); the result string, never raises."""
        tool = self._tools.get(name)
        if tool is None:
            return "Error: unknown tool '%s'" % name
        args, err = check_args(tool[1], args)
        if err:
            return "Error: " + err
        try:
            out = tool[2](args, ctx)
        except Exception as e:  # a tool's bug becomes a message to the model
            log.exception("tools", "%s failed" % name, e)
            return "Error: %s failed: %s" % (name, _exc_text(e))
        if out is None:
            out = ""
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


def cap(text, limit=limits.TOOL_OUTPUT_MAX):
    """At most `limit` UTF-8 bytes, cut on a character boundary, with a note when cut."""
    if len(text) * 4 <= limit:  # fast path: can't be over even if all 4-byte chars
        return text
    data = text.encode()
    if len(data) <= limit:
        return text
    note = TRUNC_NOTE % limit
    return fs.utf8_cut(data, limit - len(note)).decode() + note


def _exc_text(e):
    return str(e) or type(e).__name__


registry = Registry()
