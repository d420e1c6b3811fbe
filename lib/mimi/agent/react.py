# The ReAct loop of one turn: ask the LLM, run the tools it calls, feed the results
# back, until it answers in plain text. Tool calls and results live only inside the
# turn; the caller saves just the user text and the final answer.
import gc
from mimi import limits, log, short
from mimi.llm.provider import LLMError, stripped
from mimi.tools.registry import cap, text_bytes
from micropython import const

_TOO_MANY_CALLS = const(("Error: too many tool calls in one response (at most %d); "
                         "call this tool again in your next response"))
_OUT_OF_STEPS = const(("Sorry, I ran out of steps (%d model calls) before finishing this. "
                       "Ask me to continue, or try a simpler request."))
_TOO_BIG_ARGS = const(("Error: the arguments of this call were %d bytes, over the %d allowed, so it "
                       "was not run. Send big content in parts (write_file a first part, then "
                       "edit_file to add to it)."))
_NO_BUDGET = const(("Error: this turn's tool output is used up (%d bytes): answer with what you "
                    "have, or ask the user to continue in a new message."))
_REFUSED = const("Sorry, %s.")
_STOPPED = const("Stopped before finishing this: %s.")
_EMPTY = const("Sorry, the AI model returned an empty answer.")
_FAILED = const("Sorry, I couldn't reach the AI model: %s")


class Turn:
    """text: what to send the user (also on failure); error: None when the turn
    succeeded and its text may be saved to the session."""

    def __init__(self, text, usage, tool_calls, llm_calls, error=None):
        self.text = text
        self.usage = usage
        self.tool_calls = tool_calls
        self.llm_calls = llm_calls
        self.error = error

    def __repr__(self):
        return "Turn(%r, %r, tools=%d, llm=%d, error=%r)" % (
            self.text[:40], self.usage, self.tool_calls, self.llm_calls, self.error)


def run_turn(provider, system, history, user_text, registry, ctx=None, progress=None):
    """history: dicts, or (from sessions.load(key, provider.message)) messages already
    encoded, which are sent as they are. Every message is encoded once, when it enters
    the turn (a provider without message() gets the dicts). Each LLM call is counted in
    the usage ledger and asked for first (a spend cap stops the turn with a message);
    progress(tool name, what it works on) is called before each tool runs."""
    from mimi.usage import ledger

    who = (ctx.channel, ctx.chat_id) if ctx else None
    enc = getattr(provider, "message", None)
    if history and not isinstance(history[0], dict):
        messages = list(history)
        messages.append({"role": "user", "content": user_text or "(empty message)"})
    else:
        messages = _history(history, user_text)
    if enc:
        messages = [enc(m) if isinstance(m, dict) else m for m in messages]
    usage = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
    # tool calls run, output budget left, ids seen (hashes), tool messages spilled (_spill)
    st = [0, limits.TURN_TOOL_BYTES, set(), 0]
    turn = None
    try:
        for step in range(limits.MAX_TOOL_ITER):
            if short():  # the last step's garbage out first: the call's buffers and
                gc.collect()  # the reply fill its holes instead of breaking up free room
            why = ledger.check(who)
            if why:
                turn = Turn((_STOPPED if step else _REFUSED) % why, usage, st[0], step, "usage cap")
                break
            try:
                reply = provider.chat(system, messages, registry)
            except LLMError as e:
                turn = Turn(_FAILED % e, usage, st[0], step + 1, str(e))
                break
            ledger.add(provider, reply.usage)
            for k in usage:
                usage[k] += reply.usage.get(k, 0) or 0
            if not reply.tool_calls:
                text = stripped(reply.text)  # (a long answer stays in pieces: bus.pieces())
                turn = Turn(text or _EMPTY, usage, st[0], step + 1, None if text else "empty reply")
                break
            messages.extend(_act(reply, step, st, registry, ctx, enc, progress))
            reply = None
    finally:
        if hasattr(provider, "forget"):
            provider.forget()  # its encoded prompt and tools stay with this turn
    if turn is None:
        turn = Turn(_OUT_OF_STEPS % limits.MAX_TOOL_ITER, usage, st[0], limits.MAX_TOOL_ITER,
                    "iteration limit")
    log.info("agent", "turn: %d LLM calls, %d tool calls, tokens in %d (cache read %d, write %d) "
             "out %d%s", turn.llm_calls, turn.tool_calls, usage["input"], usage["cache_read"],
             usage["cache_write"], usage["output"], "" if turn.error is None else ", error: " + turn.error)
    return turn


def _act(reply, step, st, registry, ctx, enc, progress):
    """Run the tool calls of one reply -> the assistant message that made them and the
    user message with their results (encoded). A function of its own: the tools' raw
    output goes with its frame, and only the encoded messages stay."""
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
            out = registry.call(c.name, c.args, ctx, True) if registry else \
                "Error: unknown tool '%s'" % c.name
            out = cap(out or "(empty)", min(limits.TOOL_OUTPUT_MAX, st[1]))
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
    import mimi

    try:  # (the loop's requests load httpbody too: net/http.py _mod())
        m = mimi.load("mimi.net.httpbody").spill((m,), limits.TURN_SPILL, st[3])
    except OSError as e:
        log.warning("agent", "tool results kept in RAM: %s", e)
        return m
    st[3] += 1
    return m


def _history(history, user_text):
    """History + the new user text with roles alternating and a user message first,
    whatever the stored session looks like (both APIs refuse anything else)."""
    out = []
    for m in list(history) + [{"role": "user", "content": user_text}]:
        role, content = m.get("role"), m.get("content")
        if role not in ("user", "assistant") or not content or (not out and role != "user"):
            continue
        if out and out[-1]["role"] == role:
            if isinstance(content, str) and isinstance(out[-1]["content"], str):
                out[-1] = {"role": role, "content": out[-1]["content"] + "\n\n" + content}
            else:
                out[-1] = {"role": role, "content": content}
            continue
        out.append({"role": role, "content": content})
    if not out or out[-1]["role"] != "user":  # user_text was empty
        out.append({"role": "user", "content": user_text or "(empty message)"})
    return out


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
