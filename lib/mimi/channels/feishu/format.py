# Replies on Feishu: the agent's markdown split into messages under Feishu's size
# limits, each wrapped the way it reads best. Feishu renders markdown itself, so no
# parser is needed here: plain `text` when there is no markdown, a `post` (rich
# text) whose one `md` element shows bold, italics, links, lists, quotes and code
# blocks, or an interactive card (JSON 2.0, one markdown element) for headings and
# tables, which a post cannot show. A part that cuts a code block closes it, and
# the next part opens it again.
import json

TEXT = "text"
POST = "post"
CARD = "interactive"
_INLINE = ("**", "__", "~~", "`", "](http")


def kind(md):
    """The message type that shows `md` best."""
    rich = False
    rule = False
    for line in md.split("\n"):
        t = line.strip()
        if not t:
            continue
        if t[0] == "#" and t.lstrip("#")[:1] == " ":
            return CARD
        if t[0] == "|" and t[-1] == "|" and len(t) > 2:
            if not t.replace("|", "").replace("-", "").replace(":", "").strip():
                rule = True  # |---|---| under a header row: a table
            rich = True
        elif t[:2] in ("- ", "* ", "+ ", "> ") or t[:3] in ("```", "~~~") or _numbered(t):
            rich = True
        if rule:
            return CARD
        if not rich:
            for m in _INLINE:
                if m in t:
                    rich = True
                    break
    return POST if rich else TEXT


def _numbered(t):
    i = 0
    while i < len(t) and i < 4 and t[i].isdigit():
        i += 1
    return 0 < i and t[i:i + 2] in (". ", ") ")


def content(md, how):
    """The `content` field (a JSON string) of a message of type `how` showing `md`."""
    if how == POST:
        return json.dumps({"zh_cn": {"title": "", "content": [[{"tag": "md", "text": md}]]}})
    if how == CARD:
        return json.dumps({"schema": "2.0", "body": {"elements": [{"tag": "markdown", "content": md}]}})
    return json.dumps({"text": md})


def _fit(text, start, room):
    """Largest end such that text[start:end] has at most `room` UTF-8 bytes."""
    end = min(len(text), start + room)
    over = len(text[start:end].encode()) - room
    while over > 0:
        end -= max(1, over // 4)  # a character takes at most 4 bytes
        over = len(text[start:end].encode()) - room
    return end


def _cut(text, start, end):
    """(part end, next start): the last paragraph, line, then word break in the
    second half of text[start:end]; the limit itself when there is none."""
    for lo in (start + (end - start) // 2, start):
        for sep in ("\n\n", "\n", " "):
            p = text.rfind(sep, lo, end)
            if p > start:
                return p, p + len(sep)
    return end, end


def _fence_after(fence, part):
    """The fence line (```lang) of a code block still open at the end of `part`,
    which began inside the block opened by `fence` ("" when outside any)."""
    for line in part.split("\n"):
        t = line.strip()
        if t[:3] in ("```", "~~~"):
            if not fence:
                fence = t[:24]
            elif t[:3] == fence[:3] and not t[3:].strip():
                fence = ""
    return fence


def split(md, limit):
    """Markdown -> parts of at most `limit` UTF-8 bytes, in order, cut at paragraph,
    line, then word boundaries (never inside a character)."""
    md = md.strip()
    parts = []
    start = 0
    fence = ""
    while start < len(md):
        head = fence + "\n" if fence else ""
        room = limit - len(head.encode()) - 4  # the reopened fence; "\n```" if it stays open
        if len(md[start:].encode()) <= room:
            cut = nxt = len(md)
        else:
            cut, nxt = _cut(md, start, _fit(md, start, max(16, room)))
        part = md[start:cut].rstrip()
        after = _fence_after(fence, part)
        if part.strip():
            parts.append(head + part + ("\n" + after[:3] if after else ""))
        fence = after
        start = nxt
        while start < len(md) and md[start] == "\n":
            start += 1
    return parts
