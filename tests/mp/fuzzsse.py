# Server-sent event streams of both providers' streamed answers (llm/stream.py), for
# the fuzz tests: sound ones to mutate, and their bytes.
import fuzz


def anthropic_events(r, text="Hello", calls=True):
    ev = [{"type": "message_start", "message": {"usage": {"input_tokens": 10, "output_tokens": 1}}},
          {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}]
    for piece in (text[:2], text[2:]):
        ev.append({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}})
    for i in range(r.below(3) if calls else 0):
        ev.append({"type": "content_block_start", "index": i + 1,
                   "content_block": {"type": "tool_use", "id": "toolu_%d" % i, "name": "echo", "input": {}}})
        for part in ('{"text":', '"a"}'):
            ev.append({"type": "content_block_delta", "index": i + 1,
                       "delta": {"type": "input_json_delta", "partial_json": part}})
    ev += [{"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}},
           {"type": "message_stop"}]
    return ev


def openai_events(r, text="Hello", calls=True):
    ev = [{"choices": [{"index": 0, "delta": {"content": piece}}]} for piece in (text[:2], text[2:])]
    for i in range(r.below(3) if calls else 0):
        for k, part in enumerate(('{"te', 'xt":"a"}')):
            f = {"arguments": part}
            tc = {"index": i, "function": f}
            if not k:
                tc["id"], f["name"] = "call_%d" % i, "echo"
            ev.append({"choices": [{"index": 0, "delta": {"tool_calls": [tc]}}]})
    ev.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
    return ev + ["[DONE]"]


EVENTS = {"anthropic": anthropic_events, "openai": openai_events}
SSE = {"content-type": "text/event-stream"}


def sse(events, r=None):
    """The event stream's bytes: event: lines (Anthropic names them) and data: lines."""
    nl = b"\r\n" if r and r.chance(30) else b"\n"
    out = []
    for e in events:
        if isinstance(e, dict) and "type" in e and isinstance(e["type"], str):
            out.append(b"event: " + e["type"].encode() + nl)
        out.append(b"data: " + (e.encode() if isinstance(e, str) else fuzz.dumps(e)) + nl + nl)
    return b"".join(out)
