# The system prompt: order, headers, caps, cut notes, cacheable fixed part.
from support import write
from mimi import limits, board
from mimi.config import settings as config
from mimi.agent import context
from mimi.memory import store

FS_BLOCKS = 512
NOW = 1764676800  # 2025-12-02 12:00:00 UTC
HEADERS = ("## Personality", "## User Info", "## Long-term Memory", "## Recent Notes",
           "## Available Skills", "## Current Turn Context")


def setup():
    board.set_unix(NOW)


def nbytes(s):
    return len(s.encode())


def small_files():
    write("/spiffs/config/SOUL.md", "I am a cheerful assistant.")
    write("/spiffs/config/USER.md", "Name: Ada")
    write("/spiffs/memory/MEMORY.md", "# Long-term Memory\n\n- User likes tea")
    write(store.note_path("2025-12-02"), "# 2025-12-02\n\n- bought milk")
    write(store.note_path("2025-12-01"), "- called mum")
    write("/spiffs/skills/weather.md", "# Weather\n\nLook up today's weather for a city.\n\n## When to use\nx\n")


def test_order_and_content():
    small_files()
    p = context.build_system_prompt("telegram", "123")
    assert p.startswith("# MimiClaw")
    pos = [p.find(h + "\n") for h in HEADERS]
    assert -1 not in pos, pos
    assert pos == sorted(pos)
    assert "I am a cheerful assistant." in p and "Name: Ada" in p and "User likes tea" in p
    assert p.find("bought milk") < p.find("called mum")  # newest first
    assert "- **Weather**: Look up today's weather for a city. (read_file /spiffs/skills/weather.md)" in p
    assert "- source_channel: telegram" in p and "- source_chat_id: 123" in p
    assert "2025-12-02 12:00:00" in p
    assert "/spiffs/memory/2025-12-02.md" in p
    assert "/spiffs/memory/MEMORY.md" in p
    assert "/spiffs/memory/YYYY-MM-DD.md" in p and "/daily/" not in p
    assert "read_file /spiffs/skills/<name>.md" in p
    for tool in ("read_file", "write_file", "edit_file", "list_dir", "web_search", "cron_add"):
        assert "- %s: " % tool not in p  # the request carries the tools, not the prompt
    assert nbytes(p) <= limits.PROMPT_MAX


def test_note_path_in_prompt_is_the_loaded_one():
    config.cfg.set("tz", "+10:00")  # 22:00 local, still the 2nd
    board.set_unix(NOW + 3 * 3600)  # 15:00 UTC = 01:00 on the 3rd at +10:00
    write(store.note_path(), "- note written where the prompt said")
    p = context.build_system_prompt("websocket", "w1")
    assert "today_note: /spiffs/memory/2025-12-03.md" in p
    assert "note written where the prompt said" in p
    assert "UTC+10:00" in p


def test_missing_files_are_fine():
    p = context.build_system_prompt("websocket", "abc")
    assert "## Personality" not in p and "## Current Turn Context" in p
    assert nbytes(p) <= limits.PROMPT_MAX


def test_oversized_everything_stays_within_16kb():
    write("/spiffs/config/SOUL.md", "S" * 51200)
    write("/spiffs/config/USER.md", "ü" * 30000)
    write("/spiffs/memory/MEMORY.md", "M" * 20000 + "SECRET_TAIL")
    for d in store.note_dates():
        write(store.note_path(d), "n" * 9000)
    for i in range(60):
        write("/spiffs/skills/s%02d.md" % i, "# Skill %d\n\n%s\n" % (i, "d" * 400))
    p = context.build_system_prompt("telegram", "9" * 500)
    assert nbytes(p) <= limits.PROMPT_MAX, nbytes(p)
    for h in HEADERS:
        assert h + "\n" in p, h
    assert "[cut: SOUL.md is 51200 bytes; read_file /spiffs/config/SOUL.md for the rest]" in p
    assert "[cut: USER.md is 60000 bytes; read_file /spiffs/config/USER.md for the rest]" in p
    assert "[cut: MEMORY.md is 20011 bytes" in p and "SECRET_TAIL" not in p

    def section(name):
        a = p.index("## " + name + "\n")
        b = p.find("\n## ", a + 3)
        return p[a:b]

    assert nbytes(section("Long-term Memory")) <= limits.MEMORY_MAX + 40
    assert nbytes(section("Recent Notes")) <= limits.NOTES_MAX + 40
    assert nbytes(section("Available Skills")) <= limits.SKILLS_MAX + 40
    assert "more: list_dir /spiffs/skills/" in p
    # SOUL and USER shared the rest fairly: both are there with real content.
    assert section("Personality").count("S") > 1000 and nbytes(section("User Info")) > 1000
    assert nbytes(p) > limits.PROMPT_MAX - 600  # the budget was used, not wasted


def test_invalid_utf8_cannot_push_over_the_cap():
    write("/spiffs/config/SOUL.md", "")
    with open("/spiffs/config/SOUL.md", "wb") as f:
        f.write(b"\xff" * 40000)  # each byte decodes to a 3-byte U+FFFD
    p = context.build_system_prompt("telegram", "1")
    assert nbytes(p) <= limits.PROMPT_MAX


def test_fixed_part_identical_across_turns():
    small_files()
    f1, d1 = context.build_parts("telegram", "111")
    board.set_unix(NOW + 86400 * 3 + 4321)
    write("/spiffs/memory/MEMORY.md", "changed")
    f2, d2 = context.build_parts("websocket", "w-other-77")
    assert f1 == f2
    assert d1 != d2
    assert f1.startswith(context.fixed_part())
    for s in ("111", "w-other-77", "2025-12", "12:00"):
        assert s not in f1, s
    assert "source_chat_id" not in f1
    assert context.build_system_prompt("telegram", "111") == f1 + context.build_parts("telegram", "111")[1]


def test_clock_not_set():
    board.set_unix(100)
    p = context.build_system_prompt("telegram", "1")
    assert "local_time: unknown" in p


def test_tools_not_listed_and_fixed_part_the_same_whatever_was_imported():
    # The tools ride in every request (names, descriptions, schemas): the prompt does
    # not repeat them, and a tool module a REPL command imported changes nothing.
    small_files()
    f1, _ = context.build_parts("telegram", "1")
    import mimi.tools.cron  # noqa: F401
    from mimi.tools.registry import registry

    assert len(registry.names()) == 23  # SPEC §10, §13 and §14 (+ i2c_io)
    for name in registry.names():
        assert "- %s:" % name not in f1, name
    board.set_unix(NOW + 999)
    assert context.build_parts("websocket", "2")[0] == f1
    assert nbytes(f1) < 2600, nbytes(f1)


def test_encoded_prompt_is_the_same_prompt():
    import json

    small_files()
    fixed, sections, turn = context.encoded("telegram", "1")
    f, d = context.build_parts("telegram", "1")
    assert "".join(json.loads(x) for x in fixed) == f and len(fixed) > 1  # in parts, never one 1.8 KB block
    assert "".join(json.loads(x) for x in sections + turn) == d
    assert json.loads(turn[0]).startswith("## Current Turn Context")
    # oversized files with multi-byte text and whitespace runs across piece boundaries
    write("/spiffs/config/SOUL.md", "  \n" + ("héllo wörld \u4e2d\u6587 \"q\"\n\n   " * 900))
    write("/spiffs/config/USER.md", "\n\n" + "x" * 1023 + "\u00e9" + " " * 3000 + "end  \n")
    write("/spiffs/memory/MEMORY.md", "\t" * 5000)
    fixed, sections, turn = context.encoded("telegram", "1")
    f, d = context.build_parts("telegram", "1")
    assert "".join(json.loads(x) for x in sections + turn) == d
    assert "[cut: SOUL.md is" in d and "## Long-term Memory\n\n[cut: MEMORY.md is 5000" in d
    assert "x\u00e9" + " " * 3000 + "end\n\n## Long-term" in d
    assert nbytes(f + d) <= limits.PROMPT_MAX
    assert all(len(json.loads(x).encode()) <= limits.PROMPT_CHUNK + 2 for x in sections)


def test_spilled_prompt_is_the_same_prompt_in_two_regions():
    """On a short heap the escaped prompt goes to a file (limits.PROMPT_SPILL) that the
    requests read as Regions: the same prompt, and pieces written one after the other
    are one Region. (A Region per 1 KB piece, ~20, were kept for the turn wherever the
    escaping's garbage had left them: they split a short heap's free room, and
    ChipClaw's turn on 64-bit frozen found no 4 KB block for its read_file below 122 KB.)"""
    import json

    small_files()
    write("/spiffs/config/SOUL.md", "  \n" + ("h\u00e9llo w\u00f6rld \u4e2d\u6587 \"q\"\n\n   " * 900))
    write("/spiffs/config/USER.md", "x" * 3000)
    write("/spiffs/memory/MEMORY.md", "\t" * 5000)
    from mimi import board

    now = board.clock.local_str()  # the two builds' local_time the same whenever a second ends
    board.clock.local_str = lambda *a: now
    try:
        fixed, sections, turn = context.encoded("telegram", "1", limits.PROMPT_SPILL)
        f, d = context.build_parts("telegram", "1")
    finally:
        del board.clock.local_str
    with open(limits.PROMPT_SPILL, "rb") as fh:
        data = fh.read()

    def text(regions):
        return "".join(json.loads('"' + data[r.start:r.start + r.n].decode() + '"') for r in regions)

    assert text(fixed) == f and text(sections) + text(turn) == d
    assert len(sections) == 2, [(r.start, r.n) for r in sections]  # SOUL + USER, then the rest
    assert sum(r.n for r in fixed + sections + turn) == len(data)


def test_fixed_instructions_match_the_tools():
    from mimi.tools.registry import registry

    f = context.fixed_part()
    # cron_add answers in the current chat by itself (tools/cron.py _dest)
    assert 'pass channel "telegram"' not in f
    assert "leave channel and chat_id out" in f
    assert "gpio_allow" in f and "never try another" in f
    desc = dict((str(n, "utf-8"), str(d, "utf-8")) for n, d, s in registry.specs())  # views of the table
    assert "every interval_s" in desc["cron_add"] and "at at_epoch" in desc["cron_add"]
    assert "daily at time HH:MM (local)" in desc["cron_add"] and "deliver=true" in desc["cron_add"]
    assert "an output keeps its level" in desc["gpio_read"]


def test_devices_part_lists_them_within_the_caps():
    import sys
    from mimi.tools.registry import registry

    small_files()
    p = context.build_system_prompt("telegram", "1")
    assert "## Devices" not in p
    assert not [m for m in sys.modules if m.startswith("mimi.devices.")]  # nothing loaded without devices
    assert registry.call("device_add", {"name": "lamp", "type": "relay", "pin": 21}).startswith("OK")
    registry.call("device_set", {"name": "lamp", "value": "on"})
    p = context.build_system_prompt("telegram", "1")
    a = p.index("## Devices\n")
    assert a < p.index("## Current Turn Context") and a > p.index("## Available Skills")
    part = p[a:p.index("## Current Turn Context")]
    assert "- lamp (relay on GPIO21): on\n" in part, part
    assert "- chip_temp (chip_temp inside the chip): " in part
    # 16 devices with long names, everything else oversized: within both caps
    for i in range(15):
        registry.call("device_add", {"name": "d%02d_%s" % (i, "x" * 20), "type": "digital_in", "pin": 1 + i + (i > 1)})
    write("/spiffs/config/SOUL.md", "S" * 51200)
    write("/spiffs/memory/MEMORY.md", "M" * 20000)
    p = context.build_system_prompt("telegram", "1")
    part = p[p.index("## Devices\n"):p.index("## Current Turn Context")]
    assert nbytes(part) <= limits.DEVICES_PROMPT_MAX + 20, nbytes(part)
    assert part.count("\n- ") >= 10
    assert nbytes(p) <= limits.PROMPT_MAX, nbytes(p)
