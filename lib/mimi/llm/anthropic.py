# Anthropic Messages API (POST {api_base}/v1/messages). The internal message format
# is already Anthropic's, so only the prompt-cache marks are added here.
from mimi.llm.provider import Provider, Reply, Call, strip_think

VERSION = "2023-06-01"
CACHE = {"type": "ephemeral"}
TURN_MARK = "\n## Current Turn Context"  # the per-turn tail of the system prompt


def system_blocks(system):
    """System prompt as text blocks with prompt-cache marks on every stable block.
    `system` is a string or a list of strings (the worker sends [fixed instructions,
    memory/notes/skills + turn context]); the per-turn context section, which changes
    every turn, is split off and left unmarked. Marks: at most 2 here + 1 on the tools,
    within Anthropic's limit of 4. A memory edit then still reads the tools and the
    fixed instructions from the cache."""
    parts = [system] if isinstance(system, str) else list(system)
    turn = ""
    if parts:
        cut = parts[-1].find(TURN_MARK)
        if cut >= 0:
            turn = parts[-1][cut:]
            parts[-1] = parts[-1][:cut]
    blocks = [{"type": "text", "text": p} for p in parts if p]
    for b in blocks[-2:] if len(blocks) > 2 else blocks:
        b["cache_control"] = CACHE
    if turn:
        blocks.append({"type": "text", "text": turn})
    return blocks


def tool_list(tools):
    """Tools with the last one marked, so the tool definitions are cached too."""
    if not tools:
        return []
    out = list(tools)
    last = dict(out[-1])
    last["cache_control"] = CACHE
    out[-1] = last
    return out


class Anthropic(Provider):
    name = "anthropic"
    path = "/messages"
    _sys_src = _sys_blocks = None

    def headers(self):
        return {"x-api-key": self.api_key, "anthropic-version": VERSION,
                "content-type": "application/json"}

    def encode(self, system, messages, tools):
        body = {"model": self.model, "max_tokens": self.max_tokens, "messages": messages}
        if system:
            # The ReAct loop sends the same prompt up to 10 times a turn: split (copy)
            # the 16 KB string once, not per call.
            if self._sys_src is not system:
                self._sys_src, self._sys_blocks = system, system_blocks(system)
            body["system"] = self._sys_blocks
        if tools:
            body["tools"] = tool_list(tools)
        return body

    def decode(self, data):
        texts = []
        calls = []
        for blk in data.get("content") or ():
            t = blk.get("type")
            if t == "text":
                texts.append(blk.get("text") or "")
            elif t == "tool_use":
                calls.append(Call(blk.get("id") or "", blk.get("name") or "",
                                  blk.get("input") if blk.get("input") is not None else {}))
        u = data.get("usage") or {}
        read = u.get("cache_read_input_tokens") or 0
        usage = {"input": (u.get("input_tokens") or 0) + read
                 + (u.get("cache_creation_input_tokens") or 0),
                 "output": u.get("output_tokens") or 0, "cache_read": read}
        return Reply(strip_think("".join(texts)), calls, usage, data.get("stop_reason"))
