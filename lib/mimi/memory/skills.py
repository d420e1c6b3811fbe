# Skills: /spiffs/skills/<name>.md, shaped `# Title`, blank line, one-paragraph
# description, then `## When to use` / `## How to use` / `## Example`. The prompt
# carries one line per skill; the model reads the whole file when it needs it.
import os
from mimi import limits, fs

DIR = limits.SPIFFS + "/skills"


def names():
    """Skill file names (with .md), sorted."""
    try:
        return sorted(e[0] for e in os.ilistdir(DIR) if e[0].endswith(".md") and not e[1] & 0x4000)
    except OSError:
        return []


def parse(text, fallback=""):
    """(title, description) of a skill's text. The description is the first paragraph
    after the title: blank lines before it are skipped (MimiClaw stopped there)."""
    pos = 0
    title = ""
    desc = []
    s, pos = _line(text, pos)
    while s == "" and pos >= 0:  # blank lines before the title
        s, pos = _line(text, pos)
    if s.startswith("# "):
        title = s[2:].strip()
        s, pos = _line(text, pos)
    while s == "" and pos >= 0:
        s, pos = _line(text, pos)
    while s and not s.startswith("#"):  # the paragraph: up to a blank line or a heading
        desc.append(s)
        if pos < 0 or len(desc) > limits.SKILL_DESC_MAX:
            break
        s, pos = _line(text, pos)
    title = (title or fallback)[: limits.SKILL_TITLE_MAX]
    d = " ".join(desc)
    if len(d) > limits.SKILL_DESC_MAX:
        d = d[: limits.SKILL_DESC_MAX - 3].rstrip() + "..."
    return title, d


def _line(text, pos):
    """(the stripped line at pos, where the next starts or -1): only the lines needed
    are made, never a list of all of them."""
    if pos < 0:
        return "", -1
    end = text.find("\n", pos)
    if end < 0:
        return text[pos:].strip(), -1
    return text[pos:end].strip(), end + 1


def _head(name):
    try:
        # a character the read splits becomes U+FFFD: only the first paragraph is used
        return fs.decode(fs.read_head(DIR + "/" + name, limits.SKILL_HEAD_READ))
    except OSError:
        return ""


def skill_list():
    """[(name, title, description)] for every skill, by name."""
    out = []
    for n in names():
        title, desc = parse(_head(n), n[:-3])
        out.append((n[:-3], title, desc))
    return out


def summary(limit=limits.SKILLS_MAX):
    """One line per skill for the system prompt, at most `limit` UTF-8 bytes."""
    lines = []
    used = 0
    files = names()  # only file names here: a skill is opened only if its line may fit
    more = len("- ... %d more: list_dir %s/\n" % (len(files), DIR))  # as long as it gets
    for i, fname in enumerate(files):
        name = fname[:-3]
        title, desc = parse(_head(fname), name)
        line = "- **%s**: %s (read_file %s/%s.md)\n" % (title, desc or "(no description)", DIR, name)
        b = len(memoryview(line))
        if used + b + (more if i < len(files) - 1 else 0) > limit:
            if used + more <= limit:
                lines.append("- ... %d more: list_dir %s/\n" % (len(files) - i, DIR))
            break
        lines.append(line)
        used += b
    return "".join(lines)


def _file(name):
    name = str(name).strip()
    if name.endswith(".md"):
        name = name[:-3]
    if not name or "/" in name or "\\" in name or name.startswith(".") or "\x00" in name:
        return None
    return DIR + "/" + name + ".md"


def skill_show(name, limit=limits.FILE_READ_MAX):
    """The skill's text, or None when there is no such skill."""
    p = _file(name)
    if p is None:
        return None
    try:
        return fs.read_text(p, limit)
    except OSError:
        return None


def skill_search(word):
    """[(name, line)]: skills whose name or text contains `word` (any case), with the
    first matching line (or the title when only the name matched)."""
    w = str(word).lower()
    out = []
    if not w:
        return out
    for n in names():
        text = _read_all(n)
        hit = None
        for line in text.split("\n"):
            if w in line.lower():
                hit = line.strip()
                break
        if hit is None and w in n.lower():
            hit = parse(text, n[:-3])[0]
        if hit is not None:
            out.append((n[:-3], hit))
    return out


def _read_all(name):
    try:
        return fs.read_text(DIR + "/" + name, limits.FILE_READ_MAX)
    except OSError:
        return ""
