# The ReAct loop of one turn: ask the LLM, run the tools it calls, feed the results
# back, until it answers in plain text. Tool calls and results live only inside the
# turn; the caller saves just the user text and the final answer.
from mimi import limits, log
from mimi.llm.provider import LLMError

TOO_MANY_CALLS = ("Error: too many tool calls in one response (at most %d); "
                  "call this tool again in your next response")
OUT_OF_STEPS = ("Sorry, I ran out of steps (%d model calls) before finishing this. "
                "Ask me to continue, or try a simpler request.")
EMPTY = "Sorry, the AI model returned an empty answer."
FAILED = "Sorry, I couldn't reach the AI model: %s"


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


def run_turn(provider, system, history, user_text, registry, ctx=None):
    messages = _history(history, user_text)
    tools = registry.anthropic_tools() if registry else []
    usage = {"input": 0, "output": 0, "cache_read": 0}
    n_tools = 0
    seen = set()
    turn = None
    for step in range(limits.MAX_TOOL_ITER):
        try:
            reply = provider.chat(system, messages, tools)
        except LLMError as e:
            turn = Turn(FAILED % e, usage, n_tools, step + 1, str(e))
            break
        for k in usage:
            usage[k] += reply.usage.get(k, 0) or 0
        if not reply.tool_calls:
            text = reply.text.strip()
            turn = Turn(text or EMPTY, usage, n_tools, step + 1, None if text else "empty reply")
            break
        calls = reply.tool_calls
        for k, c in enumerate(calls):
            # tool_result ids must match tool_use ids one to one within the turn
            if not c.id or c.id in seen:
                c.id = "call_%d_%d" % (step, k)
            seen.add(c.id)
            c.name = c.name or "unnamed"  # an empty name in history breaks the next request
        content = []
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        for c in calls:
            content.append({"type": "tool_use", "id": c.id, "name": c.name,
                            "input": c.args if isinstance(c.args, dict) else {}})
        results = []
        for k, c in enumerate(calls):
            if k >= limits.MAX_TOOL_CALLS:
                out = TOO_MANY_CALLS % limits.MAX_TOOL_CALLS
            else:
                n_tools += 1
                log.info("agent", "tool %s (%d bytes of args)", c.name, _size(c.args))
                out = registry.call(c.name, c.args, ctx) if registry else \
                    "Error: unknown tool '%s'" % c.name
            results.append({"type": "tool_result", "tool_use_id": c.id, "content": out or "(empty)"})
        messages.append({"role": "assistant", "content": content})
        messages.append({"role": "user", "content": results})
        content = results = reply = None
    if turn is None:
        turn = Turn(OUT_OF_STEPS % limits.MAX_TOOL_ITER, usage, n_tools, limits.MAX_TOOL_ITER,
                    "iteration limit")
    log.info("agent", "turn: %d LLM calls, %d tool calls, tokens in %d (cache read %d) out %d%s",
             turn.llm_calls, turn.tool_calls, usage["input"], usage["cache_read"],
             usage["output"], "" if turn.error is None else ", error: " + turn.error)
    return turn


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


def _size(args):
    if isinstance(args, dict):
        return sum(len(str(k)) + len(str(v)) for k, v in args.items())
    return len(args or "")
