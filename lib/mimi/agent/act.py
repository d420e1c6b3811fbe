# A tool step of the agent's turn (agent/react.py): the tool calls of one reply run
# (call() here; tools/registry.py's Registry.call() is the same for other callers), their arguments checked and outputs capped, and the two
# messages that tell the model made. Loaded for a step, and on a short heap let go
# after it: the turn's LLM calls, where its peak is, run without this code (~4 KB of a
# .mpy's heap with the registry's part).
import sys
from mimi import limits, log, fs, jsonutil, short, load, unload
from micropython import const

_TRUNC_NOTE = const("\n[output truncated at %d bytes]")
_TOO_MANY_CALLS = const(("Error: too many tool calls in one response (at most %d); "
                         "call this tool again in your next response"))
_TOO_BIG_ARGS = const(("Error: the arguments of this call were %d bytes, over the %d allowed, so it "
                       "was not run. Send big content in parts (write_file a first part, then "
                       "edit_file to add to it)."))
_NO_BUDGET = const(("Error: this turn's tool output is used up (%d bytes): answer with what you "
                    "have, or ask the user to continue in a new message."))
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


def act(reply, step, st, registry, ctx, enc, progress):
    """Run the tool calls of one reply -> the assistant message that made them and the
    user message with their results (encoded). A function of its own: the tools' raw
    output goes with its frame, and only the encoded messages stay. (react.py's step.)"""
    content = [{"type": "text", "text": reply.text}] if reply.text else []
    results = []
    for k, c in enumerate(reply.tool_calls):
        # tool_result ids must match tool_use ids one to one within the turn. Seen ids are
        # kept as hashes: the strings were made while the reply was parsed, high in the
        # heap, where kept for the turn they split the room a big tool output needs (a
        # hash seen twice only renames a call).
        if not c.id or hash(c.id) in st[2]:
            c.id = "call_%d_%d" % (step, k)
        st[2].add(hash(c.id))
        c.name = c.name or "unnamed"  # an empty name in history breaks the next request
        size = _size(c.args)
        args = c.args if isinstance(c.args, dict) else {}
        if k >= limits.MAX_TOOL_CALLS:
            out = _TOO_MANY_CALLS % limits.MAX_TOOL_CALLS
        elif size > limits.TOOL_ARGS_MAX:  # neither run nor kept: sent on every call
            out, args = _TOO_BIG_ARGS % (size, limits.TOOL_ARGS_MAX), {}
        elif st[1] < limits.TOOL_OUTPUT_MIN:
            out = _NO_BUDGET % limits.TURN_TOOL_BYTES
        else:
            st[0] += 1
            log.info("agent", "tool %s (%d bytes of args)", c.name, size)
            if progress:
                progress(c.name, _detail(args))
            out = call(registry, c.name, c.args, ctx, True, min(limits.TOOL_OUTPUT_MAX, st[1])) \
                if registry else "Error: unknown tool '%s'" % c.name
            out = out or "(empty)"
            st[1] -= text_bytes(out)
        content.append({"type": "tool_use", "id": c.id, "name": c.name, "input": args})
        results.append({"type": "tool_result", "tool_use_id": c.id, "content": out})
    msgs = [{"role": "assistant", "content": content}, {"role": "user", "content": results}]
    if not enc:
        return msgs
    content = results = out = None
    msgs = [enc(m) for m in msgs]
    return [_spill(m, st) for m in msgs] if short() else msgs


def _spill(m, st):
    """An encoded message as a Region of limits.TURN_SPILL (net/httpbody.py), written
    there once: on a short heap the turn's tool results (a 5 KB file read, the search
    answer) are read from the flash by each later call of the turn, as the prompt is
    (agent/context.py), instead of held escaped until the turn ends. Kept in RAM when
    the flash says no."""
    try:  # (the loop's requests load httpbody too: net/http.py _mod())
        m = load("mimi.net.httpbody").spill((m,), limits.TURN_SPILL, st[3])
    except OSError as e:
        log.warning("agent", "tool results kept in RAM: %s", e)
        return m
    st[3] += 1
    return m


def call(reg, name, args=None, ctx=None, pieces=False, limit=limits.TOOL_OUTPUT_MAX):
    """Registry reg's tool `name` run with args (dict or JSON text): the result string,
    at most `limit` UTF-8 bytes (cap()), never raises (Registry.call()).
    pieces: a long result may come as a tuple of str (bus.pieces(): a file read in
    pieces of READ_PIECE_SHORT or 1 KB, never one block its size), as the agent sends it; else joined."""
    tool = reg._find(name)
    if tool is None:
        return "Error: unknown tool '%s'" % name
    args, err = check_args(tool[1] if isinstance(tool[1], dict) else jsonutil.loads(tool[1]), args)  # (reg.schema())
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
        reg.release()  # (after the tool's module: its package is the table's)
        if short():  # a tool may want one big block (a file read): garbage out first
            import gc

            gc.collect()
        out = handler(args, ctx)
    except MemoryError as e:  # not a bug: the heap had no room for it just then
        log.warning("tools", "%s: no room in the heap (%s)", name, e)
        return "Error: %s found no room in the board's memory (%s); it may work later" % (name, e)
    except Exception as e:  # a tool's bug becomes a message to the model
        log.exception("tools", "%s failed" % name, e)
        return "Error: %s failed: %s" % (name, _exc_text(e))
    finally:
        handler = None
        if mod and short():  # the next LLM call of the turn needs the room
            unload(mod)
            unload("mimi.jsonscan")  # (web_search's scanner, stateless: 0.8 KB)
        reg.release()
    if out is None:
        out = ""
    elif isinstance(out, tuple):
        if not pieces:
            out = "".join(out)
    elif not isinstance(out, str):
        out = str(out)
    return cap(out, limit)


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


def _detail(args):
    """What a tool works on, for a progress status: its query, path, name..."""
    for k in ("query", "path", "prefix", "name", "job_id", "pin"):
        v = args.get(k)
        if v is not None and v != "":
            return str(v)[:limits.STATUS_DETAIL_MAX]
    return ""


def _size(args):
    """Bytes of the arguments, about (the JSON without its punctuation)."""
    if isinstance(args, dict):
        n = 0
        for k, v in args.items():
            n += len(k) + (len(memoryview(v)) if isinstance(v, str) else len(str(v)))
        return n
    return len(args) if isinstance(args, str) else 0  # other JSON: not run, not kept
