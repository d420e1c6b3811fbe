# The system prompt, built fresh every turn (SPEC §11): fixed instructions, then
# `## Personality`, `## User Info`, `## Long-term Memory`, `## Recent Notes`,
# `## Available Skills`, `## Devices` (when parts are attached), `## Current Turn
# Context`. Every part has a byte cap and the whole stays within PROMPT_MAX UTF-8 bytes whatever the files hold. The fixed part
# carries no time or chat id, so it is byte-identical between turns and a provider
# can cache it (build_parts returns it separately). The tools are not listed here:
# every request carries their names, descriptions and schemas (mimi/tools/).
import json  # (here: an import of json looks for a json.py on the flash each time it runs)
from mimi import limits, fs, board, channels
from mimi.memory import store, skills
from micropython import const

SOUL_PATH = limits.SPIFFS + "/config/SOUL.md"
USER_PATH = limits.SPIFFS + "/config/USER.md"
_CHAT_ID_SHOWN_MAX = const(64)
_GROUP = const(("- chat_type: group (several people share this chat and its history; each of "
                "their messages starts with the sender's name, e.g. \"Ann: ...\")\n"))


# The fixed instructions in parts, each formatted alone: the whole (1.8 KB) is one block
# only for a caller that joins them (fixed_part())
_FIXED = const((
    """# MimiClaw

You are MimiClaw, a personal AI assistant running on an ESP32-S3 board. People talk \
to you through %(channels)s. Reply in the language the user writes in. Be concise: \
your replies are read on a phone.

""",
    """## Tools
Use them when they help: get_current_time for the date and time, web_search for \
anything current (if it says no search key is set, tell the user to set one on the \
REPL). A cron job answers in the chat it was made in by itself: leave channel and \
chat_id out. GPIO: touch only the pins the user names; a refused pin stays refused \
(outside gpio_allow, or it would break the board): tell the user, never try another.

""",
    """## Files
The file tools reach only /spiffs/. Your personality is %(soul)s, the user's \
profile %(user)s. Edit them only when the user asks.

""",
    """## Memory
- Long-term memory: %(memory)s. When you learn something lasting (the user's name, \
preferences, important facts, decisions), save it right away with edit_file (or \
write_file to rewrite it). Keep it short and organised: it is shown to you every \
turn, up to 4 KB.
- Daily notes: %(note)s, with the local date (today's path is in Current Turn \
Context). Note events, tasks and things to follow up there: write_file creates \
the day's note; to add to it, read_file it and write_file it back with the new \
lines at the end. The last 3 days are shown under Recent Notes.
- Do not store secrets (passwords, keys) in memory.

""",
    """## Skills
Skills are instructions for particular tasks, stored as %(skills)s/<name>.md and \
listed under Available Skills. When a request matches one, read it first with \
read_file %(skills)s/<name>.md and follow it. To create a skill, read \
%(skills)s/skill-creator.md and write the new file as it describes.

""",
))


def _fixed():
    """The instructions that never change between turns (cacheable prefix), in parts."""
    d = {
        "memory": store.MEMORY_PATH,
        "note": store.note_path("YYYY-MM-DD"),
        "skills": skills.DIR,
        "soul": SOUL_PATH,
        "user": USER_PATH,
        "channels": channels.spoken([r.label for r in channels.available() if r.label], "and"),
    }
    return [t % d for t in _FIXED]


def fixed_part():
    return "".join(_fixed())


def _n(s):
    return len(memoryview(s))  # UTF-8 bytes of a str, no copy


def _put(st, data, out, enc):
    """Add text (str) to a section being built, stripped as a whole: st = [its header
    (None once written), whitespace held back, bytes added]."""
    if st[0] is not None:  # nothing written yet: leading whitespace goes, then the header
        data = data.lstrip()
        if not data:
            return
        out.append(enc(st[0]))
        st[2] += _n(st[0])
        st[0] = None
    body = data.rstrip()
    if not body:
        st[1] += data
        return
    ws = st[1]  # ASCII whitespace held back: text follows it, so it is written
    for i in range(0, len(ws), limits.PROMPT_CHUNK):
        out.append(enc(ws[i:i + limits.PROMPT_CHUNK]))
    out.append(enc(body))
    st[2] += len(ws) + _n(body)
    st[1] = data[len(body):] if len(body) < len(data) else ""  # kept if more text follows


def _section(title, text, out, enc):
    """`## title`, text (str) stripped, a blank line -> bytes added (0 for no text); in
    pieces of at most PROMPT_CHUNK bytes."""
    st = ["## %s\n\n" % title, "", 0]
    step = limits.PROMPT_CHUNK if _n(text) == len(text) else limits.PROMPT_CHUNK // 4
    for i in range(0, len(text), step):
        _put(st, text[i:i + step], out, enc)
    return _end(st, out, enc)


def _end(st, out, enc):
    if st[0] is None:
        out.append(enc("\n\n"))
        st[2] += 2
    return st[2]


def _opened(path):
    """(the file open for reading, its size), or (None, 0) when it is missing: one
    look-up of the path (os.stat() makes two, and each walks folders' metadata on the
    flash), its size and its text from the same open file."""
    try:
        f = open(path, "rb")
    except OSError:
        return None, 0
    try:
        return f, f.seek(0, 2)
    except Exception:  # (closed here, not by the GC: outside fs.lock on the host)
        f.close()
        raise


def _closed(*opened):
    for f, _ in opened:
        if f is not None:
            f.close()


def _file_section(title, path, opened, cap, out, enc):
    """Like _section for a file's text (valid UTF-8; `opened` = _opened(path)), read
    in pieces: never the whole file at once. Over `cap` bytes it is cut, with a note
    saying so."""
    st = ["## %s\n\n" % title, "", 0]
    f, size = opened
    if size > 0:
        note = ""
        limit = cap
        if size > cap:
            note = "\n[cut: %s is %d bytes; read_file %s for the rest]" % (
                path.rsplit("/", 1)[-1], size, path)
            limit = cap - _n(note)
        if limit > 0:
            try:
                f.seek(0)
                _read(f, limit, st, out, enc)
            except OSError:
                pass
            if note:
                _put(st, note, out, enc)
    return _end(st, out, enc)


def _read(f, limit, st, out, enc):
    carry = b""
    with fs.lock:
        while limit > 0:
            raw = f.read(limits.PROMPT_CHUNK)
            end = not raw
            if carry:
                raw = carry + raw
            if not raw:
                break
            if not end and raw[-1] >= 0x80:  # a character split by the read waits
                text = fs.utf8_cut(raw, len(raw))
                carry = raw[len(text):]
            else:
                text, carry = raw, b""
            if len(text) > limit:
                text = fs.utf8_cut(text, limit)
            text = fs.decode(text)  # no copy for valid text; what is not valid is U+FFFD
            n = _n(text)
            if n > limit:  # U+FFFD for stray bytes made it longer
                text = fs.decode(fs.utf8_cut(text.encode(), limit))
                n = _n(text)
            limit -= n
            _put(st, text, out, enc)
            if end:
                break


def _turn(channel, chat_id, group):
    cid = str(chat_id)
    if len(cid) > _CHAT_ID_SHOWN_MAX:
        cid = cid[:_CHAT_ID_SHOWN_MAX] + "..."
    tz = store.tz_s()
    if board.clock.valid():
        now = board.clock.local_str(tz)
    else:
        now = "unknown (the clock is not set yet; get_current_time may help)"
    return ("## Current Turn Context\n\n- source_channel: %s\n- source_chat_id: %s\n%s"
            "- local_time: %s\n- today_note: %s\n" % (
                channel, cid, _GROUP if group else "", now, store.note_path()))


def _devices():
    """The `## Devices` text ("" when no device is attached: nothing of the device layer
    is loaded then); devices/lines.py makes it, loaded for that and dropped."""
    from mimi import devices

    if not devices.attached():
        return ""
    import mimi

    return mimi.run("devices.lines", "part", limits.DEVICES_PROMPT_MAX)


def _build(channel, chat_id, enc, group=False):
    """(fixed, sections, turn): the fixed part's parts (a list) and the turn context
    through enc(str),
    the sections (Personality, User Info, Memory, Notes, Skills) as a list of pieces of
    at most PROMPT_CHUNK bytes each through enc, each made, measured and encoded before
    the next is read: no big block of heap, and a caller that encodes never holds a
    section twice. <= PROMPT_MAX bytes in all."""
    fixed = _fixed()
    used = 0
    for t in fixed:
        used += _n(t)
    if used > limits.PROMPT_MAX // 2:
        fixed = [fs.decode(fs.utf8_cut("".join(fixed).encode(), limits.PROMPT_MAX // 2))]
    if not fixed[-1].endswith("\n\n"):
        fixed[-1] += "\n"
    turn = _turn(channel, chat_id, group)
    used = 0
    for t in fixed:
        used += _n(t)
    used += _n(turn)
    fixed, turn = [enc(t) for t in fixed], enc(turn)
    tail = []
    mem = _opened(store.MEMORY_PATH)
    try:
        used += _file_section("Long-term Memory", store.MEMORY_PATH, mem, limits.MEMORY_MAX,
                              tail, enc)
    finally:
        _closed(mem)
    used += _section("Recent Notes", store.recent_notes(limits.NOTES_MAX), tail, enc)
    used += _section("Available Skills", skills.summary(limits.SKILLS_MAX), tail, enc)
    used += _section("Devices", _devices(), tail, enc)
    room = limits.PROMPT_MAX - used
    head = len("## Personality\n\n") + len("\n\n")
    # SOUL and USER share what is left: each gets half, and what one leaves unused
    # goes to the other.
    half = room // 2
    soul_cap = user_cap = max(0, half - head)
    soul = user = (None, 0)
    sections = []
    try:
        soul = _opened(SOUL_PATH)  # (looked up once: each look-up reads the flash)
        user = _opened(USER_PATH)
        soul_size, user_size = soul[1], user[1]
        if soul_size < soul_cap:
            soul_cap, user_cap = soul_size, user_cap + soul_cap - soul_size
        elif user_size < user_cap:
            soul_cap, user_cap = soul_cap + user_cap - user_size, user_size
        _file_section("Personality", SOUL_PATH, soul, soul_cap, sections, enc)
        _file_section("User Info", USER_PATH, user, user_cap, sections, enc)
    finally:
        _closed(soul, user)
    return fixed, sections + tail, turn


def build_parts(channel, chat_id, group=False):
    """(fixed, dynamic) strings; fixed + dynamic is the system prompt, <= PROMPT_MAX bytes.
    group: the chat is a group, whose members' messages start with their names."""
    fixed, sections, turn = _build(channel, chat_id, lambda s: s, group)
    sections.append(turn)
    return "".join(fixed), "".join(sections)


def encoded(channel, chat_id, spill=None, group=False):
    """The same prompt for an LLM request: ([fixed], [sections], [turn]) as JSON string
    literals, the fixed part in its parts, the sections in pieces of at most
    PROMPT_CHUNK bytes (never the whole prompt, nor a whole section, escaped at once). With spill (a file path), escaped
    into that file instead and returned as net.http Regions of it: the requests read
    it from the flash, and the heap holds none of it."""
    if spill is None:
        enc = json.dumps

        fixed, sections, turn = _build(channel, chat_id, enc, group)
    else:
        import mimi

        hb = mimi.load("mimi.net.httpbody")  # (the turn's requests load it too)
        Region, escapes = hb.Region, hb.escapes
        hb = None
        with fs.lock, open(spill, "wb") as f:
            def enc(s):  # (escaped a few hundred bytes at a time: no 1 KB block a piece)
                at = f.tell()
                for q in escapes(s, json.dumps):
                    f.write(q)
                return Region(spill, at, f.tell() - at)

            fixed, sections, turn = _build(channel, chat_id, enc, group)
        fixed, sections = _joined(fixed), _joined(sections)
    return fixed, sections, [turn]  # llm.provider.prompt()'s shape


def _joined(regions):
    """Pieces next to each other in the file as one Region: a section's ~20 pieces make
    two (SOUL + USER, then the rest, in the order they were written), the fixed part's
    one, not ~20 small objects kept for the turn wherever the escaping's garbage left
    them (they split a short heap's free room: a 4 KB read_file then found no block)."""
    out = []
    for r in regions:
        if out and out[-1].start + out[-1].n == r.start:
            out[-1].n += r.n
        else:
            out.append(r)
    return out


def build_system_prompt(channel, chat_id):
    fixed, dynamic = build_parts(channel, chat_id)
    return fixed + dynamic
