# The system prompt, built fresh every turn (SPEC §11): fixed instructions, then
# `## Personality`, `## User Info`, `## Long-term Memory`, `## Recent Notes`,
# `## Available Skills`, `## Current Turn Context`. Every part has a byte cap and the
# whole stays within PROMPT_MAX UTF-8 bytes whatever the files hold. The fixed part
# carries no time or chat id, so it is byte-identical between turns and a provider
# can cache it (build_parts returns it separately).
from mimi import limits, fs, board, channels
from mimi.memory import store, skills

SOUL_PATH = limits.SPIFFS + "/config/SOUL.md"
USER_PATH = limits.SPIFFS + "/config/USER.md"
CHAT_ID_SHOWN_MAX = 64
GROUP = ("- chat_type: group (several people share this chat and its history; each of "
         "their messages starts with the sender's name, e.g. \"Ann: ...\")\n")
TOOL_LINE_MAX = 160


def _tools():
    """(name, description) of every tool, from the registry with every tool module
    loaded, so the list is the same on the first turn as on later ones (and never
    just the few tools a REPL command happened to import)."""
    import mimi.tools

    return [(t["name"], t.get("description") or "") for t in mimi.tools.load_all().anthropic_tools()]


def _one_line(text):
    s = str(text).strip().split("\n")[0]
    dot = s.find(". ")
    if dot > 0:
        s = s[: dot + 1]
    return s if len(s) <= TOOL_LINE_MAX else s[: TOOL_LINE_MAX - 3] + "..."


def fixed_part():
    """The instructions that never change between turns (cacheable prefix)."""
    tools = "".join("- %s: %s\n" % (n, _one_line(d)) for n, d in _tools())
    return FIXED % {
        "tools": tools,
        "memory": store.MEMORY_PATH,
        "note": store.note_path("YYYY-MM-DD"),
        "skills": skills.DIR,
        "soul": SOUL_PATH,
        "user": USER_PATH,
        "channels": channels.spoken([r.label for r in channels.available() if r.label], "and"),
    }


FIXED = """# MimiClaw

You are MimiClaw, a personal AI assistant running on an ESP32-S3 board. People talk \
to you through %(channels)s. Reply in the language the user writes \
in. Be concise: your replies are read on a phone.

## Tools
%(tools)s
Use tools when they help: get_current_time for the date and time, web_search for \
anything current (it uses whichever of Tavily and Brave has a key set, each the \
other's fallback; if it says no key is configured, tell the user to set one on the \
REPL).
- Scheduling: a job made with cron_add fires as a new turn in the chat it was made \
in, and its answer arrives there by itself: leave channel and chat_id out. Forms: \
schedule_type "every" with interval_s (seconds), "at" with at_epoch (Unix time: \
call get_current_time first), or "daily" with time "HH:MM" (24-hour, the user's \
local time). Check cron_list before adding a job twice. For a plain reminder \
("remind me to take the pills at 9") set deliver=true with the reminder text as \
message: it is sent as is, with no turn.
- GPIO: only touch pins the user names. Pins outside the gpio_allow setting and \
pins that would break the board are refused: tell the user, never try another \
pin. Reading a pin set with gpio_write leaves it an output at its level.

## Files
The file tools reach only /spiffs/. Your personality is %(soul)s, the user's \
profile %(user)s. Edit them only when the user asks.

## Memory
- Long-term memory: %(memory)s. When you learn something lasting (the user's name, \
preferences, important facts, decisions), save it right away with edit_file (or \
write_file to rewrite it). Keep it short and organised: it is shown to you every \
turn, up to 4 KB.
- Daily notes: %(note)s, with the local date (today's path is in Current Turn \
Context). Note events, tasks and things to follow up there: write_file creates \
the day's note; to add to it, read_file it and write_file it back with the new \
lines at the end. The last 3 days are shown under Recent Notes.
- Do not store secrets (passwords, keys) in memory.

## Skills
Skills are instructions for particular tasks, stored as %(skills)s/<name>.md and \
listed under Available Skills. When a request matches one, read it first with \
read_file %(skills)s/<name>.md and follow it. To create a new skill, read \
%(skills)s/skill-creator.md and write the new file as it describes.
"""


def _read(path, cap):
    """(bytes of the file as valid UTF-8, at most cap+1 of them, real size) or (b'', 0)."""
    try:
        raw = fs.read_head(path, cap + 1)
    except OSError:
        return b"", 0
    return fs.decode(raw).encode(), fs.size(path)


def _fit(body, cap, path, size):
    """body cut to `cap` bytes; a cut body ends with a note saying so."""
    if len(body) <= cap:
        return body
    note = ("\n[cut: %s is %d bytes; read_file %s for the rest]" % (
        path.rsplit("/", 1)[-1], size, path)).encode()
    if cap <= len(note):
        return b""
    return fs.utf8_cut(body, cap - len(note)) + note


def _section(title, body):
    return ("## %s\n\n" % title).encode() + body.strip() + b"\n\n" if body.strip() else b""


def _turn(channel, chat_id, group):
    cid = str(chat_id)
    if len(cid) > CHAT_ID_SHOWN_MAX:
        cid = cid[:CHAT_ID_SHOWN_MAX] + "..."
    tz = store.tz_s()
    if board.clock.valid():
        now = board.clock.local_str(tz)
    else:
        now = "unknown (the clock is not set yet; get_current_time may help)"
    return ("## Current Turn Context\n\n- source_channel: %s\n- source_chat_id: %s\n%s"
            "- local_time: %s\n- today_note: %s\n" % (
                channel, cid, GROUP if group else "", now, store.note_path())).encode()


def build_parts(channel, chat_id, group=False):
    """(fixed, dynamic) strings; fixed + dynamic is the system prompt, <= PROMPT_MAX bytes.
    group: the chat is a group, whose members' messages start with their names."""
    fixed = fixed_part().encode()
    fixed = fs.utf8_cut(fixed, limits.PROMPT_MAX // 2)
    fixed += b"\n" if not fixed.endswith(b"\n\n") else b""
    turn = _turn(channel, chat_id, group)
    mem, size = _read(store.MEMORY_PATH, limits.MEMORY_MAX)
    mem = _section("Long-term Memory", _fit(mem, limits.MEMORY_MAX, store.MEMORY_PATH, size))
    notes = _section("Recent Notes", store.recent_notes(limits.NOTES_MAX).encode())
    sk = _section("Available Skills", skills.summary(limits.SKILLS_MAX).encode())
    room = limits.PROMPT_MAX - len(fixed) - len(turn) - len(mem) - len(notes) - len(sk)
    head = len("## Personality\n\n") + len("\n\n")
    soul, soul_size = _read(SOUL_PATH, max(0, room))
    user, user_size = _read(USER_PATH, max(0, room))
    # SOUL and USER share what is left: each gets half, and what one leaves unused
    # goes to the other.
    half = room // 2
    soul_cap = max(0, half - head)
    user_cap = max(0, half - head)
    if len(soul) < soul_cap:
        user_cap += soul_cap - len(soul)
    elif len(user) < user_cap:
        soul_cap += user_cap - len(user)
    parts = (
        _section("Personality", _fit(soul, soul_cap, SOUL_PATH, soul_size)),
        _section("User Info", _fit(user, user_cap, USER_PATH, user_size)),
        mem, notes, sk, turn,
    )
    dynamic = b"".join(parts)
    # Belt and braces: never over the cap, whatever happened above.
    dynamic = fs.utf8_cut(dynamic, limits.PROMPT_MAX - len(fixed))
    return fixed.decode(), dynamic.decode()


def build_system_prompt(channel, chat_id):
    fixed, dynamic = build_parts(channel, chat_id)
    return fixed + dynamic
