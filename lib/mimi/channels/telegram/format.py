# Markdown (as LLMs write it) -> Telegram HTML, split into messages Telegram accepts.
#
# The markdown is parsed once into "runs": (visible_text, style) where style is a
# tuple of tags. Splitting works on the visible text, so lengths are counted the
# way Telegram counts them (UTF-16 units of the text after entity parsing), and
# every part is rendered on its own: tags are always balanced, a code block cut in
# two is closed and reopened, and an entity or tag can never be cut.
from mimi import limits
from mimi.net import html_escape
from mimi.utf8 import clean

# Style tags. "pre" and "a" carry a value: ("pre", lang) / ("a", href).
B = "b"
I = "i"  # noqa: E741 - the HTML tag name
S = "s"
CODE = "code"
QUOTE = "blockquote"
PRE = "pre"
A = "a"

BULLET = "\u2022 "
RULE = "\u2500" * 8


# ---------------------------------------------------------------- text helpers

def u16len(s):
    """Length in UTF-16 code units (characters outside the BMP count 2)."""
    n = len(s)
    for byte in s.encode():
        if byte >= 0xF0:
            n += 1
    return n


def _word(c):
    return c.isalpha() or c.isdigit() or ord(c) > 127


# ---------------------------------------------------------------- inline parser

LINK_SCHEMES = ("http://", "https://", "tg://", "mailto:")


class _Inline:
    """Inline markdown of one line -> runs. Markers without a partner stay literal."""

    def __init__(self, out):
        self.out = out  # list of [text, style]

    def emit(self, text, style):
        if not text:
            return
        o = self.out
        if o and o[-1][1] == style:
            o[-1][0].append(text)  # joined once at the end: no quadratic copying
        else:
            o.append([[text], style])

    def parse(self, s, style, links=True):
        # Closers that were searched for and not found from some position cannot be
        # found from a later one either: remember them, so a line full of stray
        # markers stays linear. Literal text is emitted as slices s[lit:i].
        missing = {}
        lit = 0
        i = 0
        n = len(s)
        while i < n:
            c = s[i]
            if c == "\\" and i + 1 < n and s[i + 1] in "\\`*_~[]()#>-.!|":
                self._lit(s, lit, i, style)
                self.emit(s[i + 1], style)
                i += 2
                lit = i
                continue
            if c == "`":
                j = i
                while j < n and s[j] == "`":
                    j += 1
                tick = s[i:j]
                k = -1 if missing.get(tick) else s.find(tick, j)
                while k >= 0 and k + len(tick) < n and s[k + len(tick)] == "`":
                    k = s.find(tick, k + len(tick) + 1)
                if k < 0:
                    missing[tick] = True
                    i = j
                    continue
                code = s[j:k]
                if len(code) > 2 and code[0] == " " and code[-1] == " ":
                    code = code[1:-1]
                self._lit(s, lit, i, style)
                self.emit(code, _code_style(style))
                i = lit = k + len(tick)
                continue
            if c in "*_~":
                m = self._emphasis(s, i, style, missing, links)
                if m:
                    self._lit(s, lit, i, style)
                    sub, inner, end = m
                    self.parse(sub, inner, links)
                    i = lit = end
                    continue
                # a run of the same marker is literal as a whole
                while i < n and s[i] == c:
                    i += 1
                continue
            if c == "[" and links and not missing.get("]("):
                m = self._link(s, i, missing)
                if m:
                    self._lit(s, lit, i, style)
                    label, href, end = m
                    self.parse(label, style + ((A, href),), False)
                    i = lit = end
                    continue
            i += 1
        self._lit(s, lit, n, style)

    def _lit(self, s, a, b, style):
        if b > a:
            self.emit(s[a:b], style)

    def _emphasis(self, s, i, style, missing, links):
        n = len(s)
        c = s[i]
        if c == "~":
            if s[i:i + 2] != "~~":
                return None
            mark, tag = "~~", S
        elif s[i:i + 3] == c * 3:
            mark, tag = c * 3, B
        elif s[i:i + 2] == c + c:
            mark, tag = c + c, B
        else:
            mark, tag = c, I
        w = len(mark)
        if i + w >= n or s[i + w].isspace() or s[i + w] == c:
            return None
        if w == 1 and i > 0 and _word(s[i - 1]):
            return None  # snake_case words, 2*3*4
        if missing.get(mark):
            return None
        k = i + w
        while True:
            k = s.find(mark, k)
            if k < 0:
                missing[mark] = True
                return None
            ok = not s[k - 1].isspace()
            if ok and (k + w < n and s[k + w] == c or s[k - 1] == c):
                ok = False  # part of a longer marker
            if ok and w == 1 and k + w < n and _word(s[k + w]):
                ok = False
            if ok and k > i + w:
                add = (B, I) if w == 3 else (tag,)
                return s[i + w:k], style + tuple(t for t in add if t not in style), k + w
            k += 1

    def _link(self, s, i, missing):
        j = s.find("](", i + 1)
        if j < 0:
            missing["]("] = True
            return None
        depth = 0
        k = j + 2
        while k < len(s):
            ch = s[k]
            if ch == "(":
                depth += 1
            elif ch == ")":
                if depth == 0:
                    break
                depth -= 1
            elif ch == " ":
                return None
            k += 1
        else:
            return None
        label = s[i + 1:j]
        href = s[j + 2:k]
        if not label or not href:
            return None
        for scheme in LINK_SCHEMES:
            if href.lower().startswith(scheme):
                return label, href, k + 1
        return None


def _code_style(style):
    # Telegram: code can't be inside bold/italic/links and nothing inside code.
    if QUOTE in style:
        return style
    return (CODE,)


# ---------------------------------------------------------------- block parser

def _indent(line):
    n = 0
    for c in line:
        if c == " ":
            n += 1
        elif c == "\t":
            n += 4
        else:
            break
    return n


def _fence(line):
    t = line.strip()
    for f in ("```", "~~~"):
        if t.startswith(f):
            lang = t[3:].strip().strip("`~").strip()
            ok = lang == "" or all(_word(ch) or ch in "+-#._" for ch in lang)
            return f, (lang if ok else "")
    return None, None


def _heading(t):
    n = 0
    while n < len(t) and t[n] == "#":
        n += 1
    if 1 <= n <= 6 and (len(t) == n or t[n] == " "):
        return t[n:].strip().rstrip("#").strip()
    return None


def _list_item(t):
    if len(t) > 1 and t[0] in "-*+" and t[1] == " ":
        return BULLET, t[2:].lstrip()
    j = 0
    while j < len(t) and t[j].isdigit():
        j += 1
    if 0 < j < 10 and j + 1 < len(t) and t[j] in ".)" and t[j + 1] == " ":
        return t[:j] + ". ", t[j + 2:].lstrip()
    return None


def _table_row(t):
    return len(t) > 2 and t[0] == "|" and t[-1] == "|"


def _table_rule(t):
    return t.replace("|", "").replace("-", "").replace(":", "").strip() == ""


def _rule(t):
    t = t.replace(" ", "")
    return len(t) >= 3 and t[0] in "-*_" and t == t[0] * len(t)


def parse(md):
    """Markdown -> list of [text, style] runs (adjacent equal styles merged)."""
    md = clean(md).replace("\r\n", "\n")
    runs = []
    inl = _Inline(runs)
    lines = md.split("\n")
    i = 0
    prev_quote = None  # None before the first line
    while i < len(lines):
        line = lines[i]
        t = line.strip()
        quote = t.startswith(">")
        if prev_quote is not None:
            # a newline between two quoted lines stays inside one <blockquote>
            inl.emit("\n", (QUOTE,) if quote and prev_quote else ())
        prev_quote = quote
        fence, lang = _fence(line)
        if fence:
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith(fence):
                j += 1
            code = "\n".join(lines[i + 1:j]).rstrip()
            if code.strip():
                inl.emit(code, ((PRE, lang),))
            i = j + 1  # an unclosed fence runs to the end
            continue
        if _table_row(t):
            # Telegram has no tables: keep the columns lined up in a code block
            j = i
            while j < len(lines) and _table_row(lines[j].strip()):
                j += 1
            rows = [r.strip() for r in lines[i:j] if not _table_rule(r.strip())]
            inl.emit("\n".join(rows), ((PRE, ""),))
            prev_quote = False
            i = j
            continue
        h = _heading(t)
        if h is not None:
            inl.parse(h, (B,))
        elif quote:
            inl.parse(t[1:].lstrip(), (QUOTE,))
        elif _rule(t):
            inl.emit(RULE, ())
        else:
            item = _list_item(t)
            if item:
                inl.emit("  " * min(_indent(line) // 2, 4) + item[0], ())
                inl.parse(item[1], ())
            else:
                inl.parse(line.rstrip(), ())
        i += 1
    for r in runs:
        r[0] = "".join(r[0])
    return runs


# ---------------------------------------------------------------- rendering

def _open(tag):
    if isinstance(tag, tuple):
        if tag[0] == PRE:
            return '<pre><code class="language-%s">' % html_escape(tag[1]) if tag[1] else "<pre>"
        return '<a href="%s">' % html_escape(tag[1])
    return "<%s>" % tag


def _close(tag):
    if isinstance(tag, tuple):
        if tag[0] == PRE:
            return "</code></pre>" if tag[1] else "</pre>"
        return "</a>"
    return "</%s>" % tag


def render_html(runs):
    out = []
    cur = ()
    for text, style in runs:
        # keep the common prefix open (one <blockquote> for several lines)
        k = 0
        while k < len(cur) and k < len(style) and cur[k] == style[k]:
            k += 1
        for tag in reversed(cur[k:]):
            out.append(_close(tag))
        for tag in style[k:]:
            out.append(_open(tag))
        out.append(html_escape(text, False))
        cur = style
    for tag in reversed(cur):
        out.append(_close(tag))
    return "".join(out)


def render_plain(runs, limit=limits.TG_MSG_MAX):
    """Visible text; a link's address is added after it while the part still fits."""
    out = []
    extra = 0
    size = sum(u16len(t) for t, _ in runs)
    for text, style in runs:
        out.append(text)
        for tag in style:
            if isinstance(tag, tuple) and tag[0] == A and tag[1] != text:
                add = " (%s)" % tag[1]
                if size + extra + u16len(add) <= limit:
                    out.append(add)
                    extra += u16len(add)
    return "".join(out)


def to_html(md):
    return render_html(parse(md))


# ---------------------------------------------------------------- splitting

def _pre_spans(runs):
    spans = []
    pos = 0
    for text, style in runs:
        end = pos + len(text)
        if style and isinstance(style[0], tuple) and style[0][0] == PRE:
            spans.append((pos, end))
        pos = end
    return spans


def _in_pre(spans, p):
    """Is the cut between text[p-1] and text[p] inside a code block?"""
    for a, b in spans:
        if a < p < b:
            return (a, b)
    return None


def _fit(text, start, limit):
    """Largest end such that text[start:end] has at most `limit` UTF-16 units."""
    end = min(len(text), start + limit)
    over = u16len(text[start:end]) - limit
    while over > 0:
        end -= max(1, (over + 1) // 2)
        over = u16len(text[start:end]) - limit
    return end


def _last(text, sep, lo, hi, spans, inside):
    """Last p in (lo, hi) where sep starts, cutting outside (or inside) a code block."""
    p = text.rfind(sep, lo, hi)
    while p > lo:
        if (_in_pre(spans, p) is not None) == inside:
            return p
        p = text.rfind(sep, lo, p)
    return -1


def _cut(text, start, end, spans):
    """(part_end, next_start) for a part starting at `start` that must end by `end`."""
    blk = _in_pre(spans, end)
    if blk and blk[0] > start and text[start:blk[0]].strip():
        return blk[0], blk[0]  # the code block starts the next message whole
    half = start + (end - start) // 2
    for lo in (half, start):
        for sep in ("\n\n", "\n", " "):
            p = _last(text, sep, lo, end, spans, False)
            if p >= 0 and text[start:p].strip():
                return p, p + len(sep)
    for lo in (half, start):  # the cut is inside one code block
        for sep in ("\n", " "):
            p = _last(text, sep, lo, end, spans, True)
            if p >= 0:
                return p, p + 1
    return end, end


def _slice(runs, a, b):
    out = []
    pos = 0
    for text, style in runs:
        end = pos + len(text)
        if end > a and pos < b:
            out.append([text[max(a, pos) - pos:min(b, end) - pos], style])
        pos = end
        if pos >= b:
            break
    return out


def _code_char(spans, i):
    for a, b in spans:
        if a <= i < b:
            return True
    return False


def _trim(spans, a, b, text):
    while a < b and text[a] in " \n" and not _code_char(spans, a):
        a += 1
    while b > a and text[b - 1] in " \n" and not _code_char(spans, b - 1):
        b -= 1
    return a, b


def split(md, limit=limits.TG_MSG_MAX):
    """Markdown -> [(html, plain)], each part at most `limit` UTF-16 units of
    visible text, cut at paragraph, line, then word boundaries, in order."""
    runs = parse(md)
    text = "".join(t for t, _ in runs)
    spans = _pre_spans(runs)
    parts = []
    start = 0
    n = len(text)
    while start < n:
        end = _fit(text, start, limit)
        end = max(end, start + 1)  # limit 1 and an astral character: still progress
        if end >= n:
            b = nxt = n
        else:
            b, nxt = _cut(text, start, end, spans)
        a, b = _trim(spans, start, b, text)
        if b > a:
            part = _slice(runs, a, b)
            parts.append((render_html(part), render_plain(part, limit)))
        start = nxt
    return parts
