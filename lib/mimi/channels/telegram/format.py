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

# the plain tags' HTML, made once (a part's HTML holds one per tag: not a new str each)
TAG_HTML = {}
for t in (B, I, S, CODE, QUOTE):
    TAG_HTML[t] = ("<%s>" % t, "</%s>" % t)
del t

BULLET = "\u2022 "
RULE = "\u2500" * 8


# ---------------------------------------------------------------- text helpers

def u16len(s):
    """Length in UTF-16 code units (characters outside the BMP count 2) of a str, or
    of the texts of a list of runs."""
    if not isinstance(s, str):
        n = 0
        for r in s:
            n += u16len(r[0])
        return n
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

    code = False  # a code block (or table) has text: its next line needs a newline first

    def __init__(self, out):
        self.out = out  # list of [[text pieces], style] (made (text, style) by _out())
        self.styles = {}  # each style once: a run's is shared, not a tuple of its own

    def emit(self, text, style):
        if not text:
            return
        o = self.out
        if o and o[-1][1] == style:
            o[-1][0].append(text)  # joined once at the end: no quadratic copying
        else:
            o.append([[text], self.styles.setdefault(style, style)])

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
                for t in (B, I) if w == 3 else (tag,):
                    if t not in style:
                        style += (t,)
                return s[i + w:k], style, k + w
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


def _lines(md, most=limits.TG_LINE_MAX):
    """Markdown (a str, or a text in pieces: bus.pieces(), or an iterator of them) ->
    (line, continued), line by line; a line longer than `most` comes in pieces cut at a
    space (continued: the same line goes on), so no piece of the work is as big as a
    long paragraph or the text."""
    step = limits.PROMPT_CHUNK
    src = (md[j:j + step] for j in range(0, len(md), step)) if isinstance(md, str) else md
    buf = []
    n = 0
    cont = False
    for piece in src:
        i = 0
        while True:
            k = piece.find("\n", i)
            buf.append(piece if i == 0 and k < 0 else piece[i:] if k < 0 else piece[i:k])
            n += len(buf[-1])
            if n > most:  # a long line: its start goes now
                line = "".join(buf)
                j = 0
                while len(line) - j > most:
                    c = line.rfind(" ", j + 1, j + most)
                    c = j + most if c < 0 else c
                    yield line[j:c], cont
                    cont = True
                    j = c
                buf = [line[j:]]
                n = len(buf[0])
                line = None
            if k < 0:
                break
            # not held while the line is worked on: its pieces (one is not joined: a
            # join copies)
            line = buf[0] if n == len(buf[0]) else "".join(buf)
            buf, n = [], 0
            yield line[:-1] if line.endswith("\r") else line, cont
            cont = False
            i = k + 1
    yield "".join(buf), cont


def _runs(md):
    """Markdown -> (text, style) runs, a line's at a time (a generator)."""
    runs = []
    inl = _Inline(runs)
    prev_quote = None  # None before the first line
    fence = lang = None  # inside a code block: its fence and language
    blanks = 0  # blank lines held back inside a code block (dropped at its end)
    table = False  # inside a table (rows kept as a code block)
    block = ()  # the style of the line that goes on in pieces
    for line, cont in _lines(md):
        line = clean(line)
        if cont:
            if fence or table:
                inl.emit(line, ((PRE, lang if fence else ""),))
            else:
                inl.parse(line, block)
        elif fence:
            if line.strip().startswith(fence):
                fence = None
                blanks = 0
            elif not line.strip() and not inl.code:
                pass  # blank lines before the code
            elif not line.strip():
                blanks += 1
            else:
                style = ((PRE, lang),)
                if inl.code:
                    inl.emit("\n" * (blanks + 1), style)
                inl.emit(line, style)
                inl.code = True
                blanks = 0
            prev_quote = False
        else:
            t = line.strip()
            if table and _table_row(t):
                if not _table_rule(t):
                    if inl.code:
                        inl.emit("\n", ((PRE, ""),))
                    inl.emit(t, ((PRE, ""),))
                    inl.code = True
                yield from _out(runs)
                continue
            table = False
            quote = t.startswith(">")
            if prev_quote is not None:
                # a newline between two quoted lines stays inside one <blockquote>
                inl.emit("\n", (QUOTE,) if quote and prev_quote else ())
            prev_quote = quote
            block = ()
            inl.code = False
            f, lng = _fence(line)
            if f:
                fence, lang, blanks = f, lng, 0  # an unclosed fence runs to the end
            elif _table_row(t):
                # Telegram has no tables: keep the columns lined up in a code block
                table = True
                prev_quote = False
                if not _table_rule(t):
                    inl.emit(t, ((PRE, ""),))
                    inl.code = True
            else:
                h = _heading(t)
                if h is not None:
                    block = (B,)
                    inl.parse(h, block)
                elif quote:
                    block = (QUOTE,)
                    inl.parse(t[1:].lstrip(), block)
                elif _rule(t):
                    inl.emit(RULE, ())
                else:
                    item = _list_item(t)
                    if item:
                        inl.emit("  " * min(_indent(line) // 2, 4) + item[0], ())
                        inl.parse(item[1], ())
                    else:
                        inl.parse(line.rstrip(), ())
        yield from _out(runs)


def _out(runs):
    """The runs made so far as (text, style), each text joined (one piece is not:
    a join copies), handed out (the list emptied)."""
    out = [(t[0] if len(t) == 1 else "".join(t), style) for t, style in runs]
    runs.clear()
    return out


def parse(md):
    """Markdown -> list of (text, style) runs."""
    return list(_runs(md))


# ---------------------------------------------------------------- rendering

def _tag(tag, end):
    """A style tag's HTML: its opening (end 0) or its closing (end 1)."""
    if not isinstance(tag, tuple):
        return TAG_HTML[tag][end]
    if tag[0] == PRE:
        if end:
            return "</code></pre>" if tag[1] else "</pre>"
        return '<pre><code class="language-%s">' % html_escape(tag[1]) if tag[1] else "<pre>"
    return "</a>" if end else '<a href="%s">' % html_escape(tag[1])


def render_html(runs):
    """-> the HTML as a list of str pieces (a run's each: never one block for a part)."""
    out = []
    cur = ()
    for text, style in runs:
        # keep the common prefix open (one <blockquote> for several lines)
        k = 0
        while k < len(cur) and k < len(style) and cur[k] == style[k]:
            k += 1
        for tag in reversed(cur[k:]):
            out.append(_tag(tag, 1))
        for tag in style[k:]:
            out.append(_tag(tag, 0))
        out.append(html_escape(text, False))
        cur = style
    for tag in reversed(cur):
        out.append(_tag(tag, 1))
    return out


def render_plain(runs, limit=limits.TG_MSG_MAX):
    """Visible text as a list of str pieces; a link's address is added after it while
    the part still fits."""
    out = []
    size = u16len(runs)  # and the addresses added
    for text, style in runs:
        out.append(text)
        for tag in style:
            if isinstance(tag, tuple) and tag[0] == A and tag[1] != text:
                add = " (%s)" % tag[1]
                if size + u16len(add) <= limit:
                    out.append(add)
                    size += u16len(add)
    return out


def to_html(md):
    return "".join(render_html(parse(md)))


# ---------------------------------------------------------------- splitting
# The runs not sent yet are a window (a list of runs) over the visible text, which is
# never joined: positions are offsets into it, found run by run (Text).

class Text:
    def __init__(self, runs):
        self.runs = runs
        self.at = []  # where each run starts
        n = 0
        spans = []  # code blocks: (start, end), a block's runs taken together
        last = None
        for t, style in runs:
            self.at.append(n)
            pre = style[0] if style and isinstance(style[0], tuple) and style[0][0] == PRE else None
            if pre is not None and pre == last and spans and spans[-1][1] == n:
                spans[-1] = (spans[-1][0], n + len(t))
            elif pre is not None:
                spans.append((n, n + len(t)))
            last = pre
            n += len(t)
        self.n = n
        self.spans = spans

    def _run(self, p):
        """Index of the run holding position p (0 <= p < n)."""
        lo, hi = 0, len(self.at) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.at[mid] <= p:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def char(self, p):
        k = self._run(p)
        return self.runs[k][0][p - self.at[k]]

    def pieces(self, a, b):
        """The text [a, b) as slices of its runs."""
        if a >= b:
            return
        k = self._run(a)
        while k < len(self.runs) and self.at[k] < b:
            t = self.runs[k][0]
            x = self.at[k]
            # a run wholly inside goes as it is: a slice is a copy, even of all of it
            yield t if a <= x and x + len(t) <= b else t[max(a, x) - x:min(b, x + len(t)) - x]
            k += 1

    def u16(self, a, b):
        n = 0
        for t in self.pieces(a, b):
            n += u16len(t)
        return n

    def blank(self, a, b):
        for t in self.pieces(a, b):
            if t.strip():
                return False
        return True

    def rfind(self, sep, lo, hi):
        """Last p in [lo, hi - len(sep)] where sep starts (-1): within a run, or across
        two (sep is one or two characters)."""
        if hi - lo < len(sep):
            return -1
        k = self._run(hi - 1)
        while k >= 0 and self.at[k] + len(self.runs[k][0]) > lo:
            t = self.runs[k][0]
            x = self.at[k]
            e = x + len(t)  # (a run ends where the next starts)
            if len(sep) == 2 and lo < e < hi and t and t[-1] == sep[0] and e < self.n \
                    and self.char(e) == sep[1]:
                return e - 1
            q = t.rfind(sep, max(lo, x) - x, min(hi, e) - x)
            if q >= 0:
                return x + q
            k -= 1
        return -1

    def in_pre(self, p, at=0):
        """The code block (start, end) that a cut before position p would split (at=1:
        that holds the character at p), or None."""
        for blk in self.spans:
            if blk[0] < p + at and p < blk[1]:
                return blk
        return None

    def fit(self, limit):
        """Largest end such that [0, end) has at most `limit` UTF-16 units."""
        end = min(self.n, limit)
        over = self.u16(0, end) - limit
        while over > 0:
            end -= max(1, (over + 1) // 2)
            over = self.u16(0, end) - limit
        return end

    def last(self, sep, lo, hi, inside):
        """Last p in (lo, hi) where sep starts, cutting outside (or inside) a code block."""
        p = self.rfind(sep, lo, hi)
        while p > lo:
            if (self.in_pre(p) is not None) == inside:
                return p
            p = self.rfind(sep, lo, p)
        return -1

    def cut(self, end):
        """(part_end, next_start) for a part starting at 0 that must end by `end`."""
        blk = self.in_pre(end)
        if blk and blk[0] > 0 and not self.blank(0, blk[0]):
            return blk[0], blk[0]  # the code block starts the next message whole
        for lo in (end // 2, 0):
            for sep in ("\n\n", "\n", " "):
                p = self.last(sep, lo, end, False)
                if p >= 0 and not self.blank(0, p):
                    return p, p + len(sep)
        for lo in (end // 2, 0):  # the cut is inside one code block
            for sep in ("\n", " "):
                p = self.last(sep, lo, end, True)
                if p >= 0:
                    return p, p + 1
        return end, end

    def trim(self, a, b):
        while a < b and self.char(a) in " \n" and self.in_pre(a, 1) is None:
            a += 1
        while b > a and self.char(b - 1) in " \n" and self.in_pre(b - 1, 1) is None:
            b -= 1
        return a, b

    def slice(self, a, b):
        """The runs of [a, b)."""
        out = []
        k = self._run(a)  # (any a: none when a >= b)
        for t in self.pieces(a, b):
            out.append((t, self.runs[k][1]))
            k += 1
        return out


def parts(md, limit=limits.TG_MSG_MAX):
    """Markdown (a str, or a text in pieces: bus.pieces()) -> each message's runs, in
    order, each at most `limit` UTF-16 units of visible text, cut at paragraph, line,
    then word boundaries (render_html(), render_plain() make its text). A generator: the
    text is parsed and cut as it goes, so a long text is never held whole."""
    win = []
    units = 0
    for run in _runs(md):
        if not run[0]:
            continue
        win.append(run)
        units += u16len(run[0])
        while units > limit:
            part, win = _cut(win, limit)
            units = u16len(win)
            if part:
                yield part
    yield from recut(win, limit)


def recut(runs, limit):
    """Runs (a part's, or the window's end: a list, emptied as the parts go, so that
    none is held twice) -> each part's runs at most `limit` units."""
    while runs:
        part, runs[:] = _cut(runs, limit)
        if part:
            yield part


def _cut(win, limit):
    """-> (the first part's runs (or []), the runs left)."""
    t = Text(win)
    end = max(t.fit(limit), 1)  # limit 1 and an astral character: still progress
    b, nxt = (t.n, t.n) if end >= t.n else t.cut(end)
    a, b = t.trim(0, b)
    return t.slice(a, b), t.slice(nxt, t.n)


def split(md, limit=limits.TG_MSG_MAX):
    """Markdown -> [(html, plain)] of parts() (joined: for short texts and tests)."""
    return [("".join(render_html(p)), "".join(render_plain(p, limit))) for p in parts(md, limit)]
