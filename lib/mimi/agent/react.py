# The ReAct loop of one turn: ask the LLM, run the tools it calls, feed the results
# back, until it answers in plain text. Tool calls and results live only inside the
# turn; the caller saves just the user text and the final answer.
import gc
from mimi import limits, log, short, load, unload
from mimi.llm.provider import LLMError, stripped
from micropython import const

_OUT_OF_STEPS = const(("Sorry, I ran out of steps (%d model calls) before finishing this. "
                       "Ask me to continue, or try a simpler request."))
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
            messages.extend(_step(reply, step, st, registry, ctx, enc, progress))
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


def _step(reply, step, st, registry, ctx, enc, progress):
    """The tool calls of one reply run (agent/act.py act()) -> the two messages that tell
    the model. Its code is loaded for the step and, on a short heap, let go after it:
    the next LLM call, where the turn's peak is, runs without it."""
    try:
        return load("mimi.agent.act").act(reply, step, st, registry, ctx, enc, progress)
    finally:
        if short():
            unload("mimi.agent.act")


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
