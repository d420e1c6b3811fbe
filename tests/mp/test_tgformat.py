# Markdown -> Telegram HTML and the 4096-unit splitter (lib/mimi/channels/tgformat.py).
from mimi.channels.telegram import format as f

HEAPSIZE = "1m"
# the same parts for every cut of five long texts, all kept for the comparison (64-bit
# objects): at 1 MB a 16 KB block could be missing, depending on what else is loaded
HEAP = {"test_a_text_in_pieces_splits_as_the_whole": "2m"}
TIMEOUT = 120

TAGS = ("b", "i", "s", "code", "pre", "a", "blockquote")


def check_html(html):
    """Balanced, known tags only; no raw '<' or '&' outside tags and entities.
    Returns the visible text (entities decoded)."""
    stack = []
    out = []
    i = 0
    while i < len(html):
        c = html[i]
        if c == "<":
            j = html.index(">", i)
            tag = html[i + 1:j]
            if tag.startswith("/"):
                assert stack and stack[-1] == tag[1:], (html, stack, tag)
                stack.pop()
            else:
                name = tag.split(" ", 1)[0]
                assert name in TAGS, (name, html)
                stack.append(name)
            i = j + 1
        elif c == "&":
            j = html.index(";", i)
            ent = html[i:j + 1]
            assert ent in ("&lt;", "&gt;", "&amp;", "&quot;"), ent
            out.append({"&lt;": "<", "&gt;": ">", "&amp;": "&", "&quot;": '"'}[ent])
            i = j + 1
        else:
            j = min(k for k in (html.find("<", i), html.find("&", i), len(html)) if k >= 0)
            assert ">" not in html[i:j], html
            out.append(html[i:j])
            i = j
    assert not stack, (html, stack)
    return "".join(out)


def check_parts(parts, limit=4096):
    for html, plain in parts:
        vis = check_html(html)
        assert f.u16len(vis) <= limit, (f.u16len(vis), limit)
        assert f.u16len(plain) <= limit
        assert vis.strip()
        assert plain.startswith(vis[:20].split("\n")[0][:5])
    return parts


def test_inline_formatting():
    h = f.to_html("**bold** and *it* and _it_ and ~~gone~~ and `x<y`")
    assert h == "<b>bold</b> and <i>it</i> and <i>it</i> and <s>gone</s> and <code>x&lt;y</code>", h


def test_escaping_everywhere():
    assert f.to_html("a < b && c > d") == "a &lt; b &amp;&amp; c &gt; d"
    s = "<<&&>>" * 2000
    h = f.to_html(s)
    assert check_html(h) == s
    assert "<<" not in h


def test_nested_formatting():
    assert f.to_html("**a *b* c**") == "<b>a <i>b</i> c</b>"
    assert f.to_html("*a **b** c*") == "<i>a <b>b</b> c</i>"
    # code can't live inside bold on Telegram: it is taken out of it
    h = f.to_html("**run `ls -l` now**")
    assert h == "<b>run </b><code>ls -l</code><b> now</b>", h
    check_html(f.to_html("***both*** and **[link](https://x.org) text**"))


def test_unbalanced_markers_stay_literal():
    for md in ("**bold and *it and `code and [x](y", "a ** b", "*", "_", "**", "`",
               "**a*", "*a**", "~~a", "[a](", "[a](http://x", "__init__.py", "2*3*4",
               "snake_case_name", "* * *x"):
        h = f.to_html(md)
        check_html(h)
    assert f.to_html("snake_case_name") == "snake_case_name"
    assert f.to_html("__init__.py") == "<b>init</b>.py"
    assert f.to_html("2*3*4") == "2*3*4"
    assert f.to_html("a ** b") == "a ** b"


def test_stray_markers_linear():
    # thousands of unmatched markers must not take quadratic time (no timing assert:
    # the test's TIMEOUT is the guard)
    s = "*a _b [d ~~e " * 3000 + "`x"
    assert check_html(f.to_html(s)) == s
    s = "*a _b `c [d ~~e " * 1000  # backticks pair up: many runs
    check_html(f.to_html(s))


def test_links_with_quotes():
    h = f.to_html('[say "hi"](https://ex.com/?q="a"&b=<c>)')
    assert h == '<a href="https://ex.com/?q=&quot;a&quot;&amp;b=&lt;c&gt;">say "hi"</a>', h
    assert f.to_html("[x](javascript:alert(1))") == "[x](javascript:alert(1))"
    assert f.to_html("[a (b)](https://w.org/x_(y))") == '<a href="https://w.org/x_(y)">a (b)</a>'
    parts = f.split("see [docs](https://d.org/p) now")
    assert parts[0][1] == "see docs (https://d.org/p) now", parts


def test_blocks():
    md = "# Title *x*\n\n- one\n* two\n  - nested\n1. first\n2) second\n> quoted `c`\n> more\n---\nend"
    h = f.to_html(md)
    check_html(h)
    assert h.startswith("<b>Title <i>x</i></b>\n\n\u2022 one\n\u2022 two\n  \u2022 nested\n1. first\n2. second\n"), h
    assert "<blockquote>quoted c\nmore</blockquote>" in h, h


def test_fenced_code():
    md = "Code:\n```python\nif a < b and c > d:\n    print('**not bold**')\n```\nafter"
    h = f.to_html(md)
    assert h == ('Code:\n<pre><code class="language-python">if a &lt; b and c &gt; d:\n'
                 "    print('**not bold**')</code></pre>\nafter"), h
    assert f.to_html("```\nx\n```") == "<pre>x</pre>"
    # unclosed fence runs to the end
    assert f.to_html("```js\nlet a = 1 < 2;") == '<pre><code class="language-js">let a = 1 &lt; 2;</code></pre>'
    # a hostile language name is dropped, not injected
    assert f.to_html('```"><b>\nx\n```') == "<pre>x</pre>"


def test_surrogates_fixed():
    assert f.to_html("\ud83d\ude00 ok \ud83d lone") == "\U0001F600 ok \ufffd lone"
    assert f.to_html("\ud55c\uad6d\uc5b4") == "\ud55c\uad6d\uc5b4"  # Hangul is fine


def test_u16len():
    assert f.u16len("abc") == 3
    assert f.u16len("\u00e9\u4e2d") == 2
    assert f.u16len("\U0001F600") == 2
    assert f.u16len("a\U0001F600\u4e2d") == 4


def test_short_text_one_part():
    parts = f.split("Hello **world**")
    assert parts == [("Hello <b>world</b>", "Hello world")], parts
    assert f.split("") == []
    assert f.split("   \n\n ") == []


def test_split_at_4096_boundary_ascii():
    s = "a" * 4096
    assert [p[1] for p in f.split(s)] == [s]
    s = "a" * 4097
    parts = check_parts(f.split(s))
    assert [len(p[1]) for p in parts] == [4096, 1]


def test_split_boundary_astral():
    # 2048 emoji = 4096 UTF-16 units: exactly one message; one more: two
    e = "\U0001F600"
    parts = check_parts(f.split(e * 2048))
    assert len(parts) == 1
    parts = check_parts(f.split(e * 2049))
    assert [len(p[1]) for p in parts] == [2048, 1]
    # odd boundary: an emoji that would straddle unit 4096 moves to the next part
    parts = check_parts(f.split("a" + e * 2048))
    assert [f.u16len(p[1]) for p in parts] == [4095, 2], [f.u16len(p[1]) for p in parts]


def test_split_boundary_cjk_and_bytes():
    # 3-byte characters count 1 unit each: 4096 of them fit although 12 KB of UTF-8
    s = "\u4e2d" * 4096
    assert len(f.split(s)) == 1
    parts = check_parts(f.split("\u4e2d" * 5000))
    assert [len(p[1]) for p in parts] == [4096, 904]


def test_split_entities_count_once():
    # 2000 '&' are 10 KB of HTML but 2000 visible characters: one message
    parts = f.split("&" * 4000)
    assert len(parts) == 1 and parts[0][0] == "&amp;" * 4000


def test_split_prefers_paragraphs_then_lines_then_words():
    para = ("word " * 700).strip()  # 3499 chars
    md = para + "\n\n" + para + "\n\n" + para
    parts = check_parts(f.split(md))
    assert [p[1] for p in parts] == [para, para, para]
    lines = "\n".join(["line %04d " % i + "x" * 40 for i in range(200)])
    parts = check_parts(f.split(lines))
    assert len(parts) == 3
    for html, plain in parts:
        assert plain.startswith("line ") and plain.endswith("x"), plain[-20:]
    assert "\n".join(p[1] for p in parts) == lines
    words = " ".join("w%05d" % i for i in range(1500))
    parts = check_parts(f.split(words))
    assert " ".join(p[1] for p in parts) == words


def test_split_small_limit_order_kept():
    md = "one two three four five six seven eight nine ten"
    parts = check_parts(f.split(md, 10), 10)
    assert " ".join(p[1] for p in parts) == md


def test_split_big_code_block():
    code = "\n".join("    x_%04d = compute(%d) < limit && ok;" % (i, i) for i in range(260))
    assert len(code) > 10000
    md = "Here is the code:\n\n```c\n" + code + "\n```\n\nDone."
    parts = check_parts(f.split(md))
    assert parts[0][1] == "Here is the code:"
    assert parts[-1][1].endswith("Done.")
    code_parts = [p for p in parts if "<pre>" in p[0]]
    assert len(code_parts) >= 3
    for html, plain in code_parts:
        assert html.startswith('<pre><code class="language-c">'), html[:60]
        assert "</code></pre>" in html
    # cut between lines; all code lines come back in order
    got = "\n".join(p[1].replace("\n\nDone.", "") for p in code_parts)
    assert got == code


def test_code_block_not_split_when_it_fits():
    intro = ("Intro sentence. " * 150).strip()  # 2399 chars
    code = "\n".join("line %d" % i for i in range(300))  # ~2.4 KB
    md = intro + "\n\n```\n" + code + "\n```\nbye"
    parts = check_parts(f.split(md))
    assert parts[0][1] == intro
    assert parts[1][0].startswith("<pre>") and parts[1][1].startswith(code)


def test_long_line_in_code_block_hard_cut():
    md = "```\n" + "y" * 9000 + "\n```"
    parts = check_parts(f.split(md))
    assert [len(p[1]) for p in parts] == [4096, 4096, 808]
    assert all(p[0].startswith("<pre>") and p[0].endswith("</pre>") for p in parts)


def test_formatting_across_a_cut_is_reopened():
    md = "**" + ("bold words " * 600).strip() + "**"
    parts = check_parts(f.split(md))
    assert len(parts) == 2
    for html, plain in parts:
        assert html.startswith("<b>") and html.endswith("</b>")


def test_nine_thousand_chars_three_parts():
    para = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 50).strip()
    md = "\n\n".join([para] * 3)  # ~8.6 KB
    parts = check_parts(f.split(md))
    assert len(parts) == 3


def test_table_becomes_code_block():
    md = "Prices:\n| item | cost |\n|---|---:|\n| a<b | 1 |\n| c | 22 |\nend"
    h = f.to_html(md)
    assert h == "Prices:\n<pre>| item | cost |\n| a&lt;b | 1 |\n| c | 22 |</pre>\nend", h


def test_a_text_in_pieces_splits_as_the_whole():
    # a long answer comes as a tuple of str pieces (bus.pieces()), cut anywhere (inside
    # a word, a marker, a code fence, a line end): the same parts as the joined text
    code = "\n".join("    x_%04d = f(%d) < y && ok;" % (i, i) for i in range(200))
    para = ("Some **bold words** and `code`, a [link](https://x.org/a_b) and *more*. " * 30).strip()
    texts = [
        "# Title\n\n" + "\n\n".join([para] * 4),
        "Here:\n\n```c\n" + code + "\n```\n\nDone.",
        "Prices:\n| item | cost |\n|---|---:|\n| a<b | 1 |\n| c | 22 |\nend\n" * 40,
        "> quoted *it*\n> more\n---\n- one\n  - two\n1. x\r\n" * 60,
        "w" * 9000 + " tail",
    ]
    for md in texts:
        whole = f.split(md)
        for step in (7, 100, 1000, 5000):
            pieces = tuple(md[i:i + step] for i in range(0, len(md), step))
            assert f.split(pieces) == whole, (step, md[:40])
        check_parts(whole)
