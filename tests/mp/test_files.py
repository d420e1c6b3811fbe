# File tools: MimiClaw's schemas and result strings, confinement to /spiffs/,
# atomic writes, first-occurrence edits, recursive list_dir.
from support import write, read
from mimi import limits, fs
from mimi.tools.registry import registry
from mimi.tools import files

FS_BLOCKS = 512


def call(name, **args):
    return registry.call(name, args)


def test_schemas_are_mimiclaws():
    path = {"type": "string", "description": "Absolute path starting with /spiffs/"}
    assert registry.schema("read_file") == {
        "type": "object", "properties": {"path": path}, "required": ["path"]}
    assert registry.schema("write_file") == {
        "type": "object", "properties": {
            "path": path, "content": {"type": "string", "description": "File content to write"}},
        "required": ["path", "content"]}
    assert registry.schema("edit_file") == {
        "type": "object", "properties": {
            "path": path, "old_string": {"type": "string", "description": "Text to find"},
            "new_string": {"type": "string", "description": "Replacement text"}},
        "required": ["path", "old_string", "new_string"]}
    assert registry.schema("list_dir") == {
        "type": "object", "properties": {"prefix": {
            "type": "string", "description": "Optional path prefix filter, e.g. /spiffs/memory/"}}}
    # (MimiClaw's has an empty "required" list besides: the same schema, 14 bytes less a request)
    names = registry.names()
    for n in ("read_file", "write_file", "edit_file", "list_dir"):
        assert n in names


def test_write_read_roundtrip():
    r = call("write_file", path="/spiffs/memory/x.md", content="héllo")
    assert r == "OK: wrote 6 bytes to /spiffs/memory/x.md"
    assert call("read_file", path="/spiffs/memory/x.md") == "héllo"
    # Parents are created.
    assert call("write_file", path="/spiffs/a/b/c.txt", content="deep").startswith("OK: wrote 4 bytes")
    assert read("/spiffs/a/b/c.txt") == "deep"
    # Overwrite, no temp file left behind.
    call("write_file", path="/spiffs/memory/x.md", content="new")
    assert read("/spiffs/memory/x.md") == "new"
    assert not fs.exists("/spiffs/memory/x.md.tmp")


def test_read_errors_and_cap():
    assert call("read_file", path="/spiffs/nope.md") == "Error: file not found: /spiffs/nope.md"
    fs.makedirs("/spiffs/d")
    assert call("read_file", path="/spiffs/d").startswith("Error: /spiffs/d is a directory")
    write("/spiffs/big.md", "b" * 50000)
    r = call("read_file", path="/spiffs/big.md")
    assert len(r.encode()) <= limits.TOOL_OUTPUT_MAX
    assert "[cut: /spiffs/big.md is 50000 bytes; showed the first" in r
    assert call("read_file") == "Error: 'path' required (string)"


def test_long_read_stays_in_pieces_for_the_agent():
    # The agent takes a long file as 1 KB pieces (bus.pieces()): a short heap has no block
    # its size. Every other caller gets the same text joined.
    text = "é" * 1500 + "x" * 3000  # a character across each 1 KB read
    write("/spiffs/long.md", text)
    got = registry.call("read_file", {"path": "/spiffs/long.md"}, None, True)
    assert isinstance(got, tuple) and len(got) > 1 and all(len(p.encode()) <= 1024 for p in got)
    assert "".join(got) == text == call("read_file", path="/spiffs/long.md")
    write("/spiffs/big.md", "é" * 20000)  # over the cap: the note is the last piece
    got = registry.call("read_file", {"path": "/spiffs/big.md"}, None, True)
    assert isinstance(got, tuple) and "".join(got) == call("read_file", path="/spiffs/big.md")
    assert got[-1].startswith("\n[cut: /spiffs/big.md is 40000 bytes; showed the first %d]"
                              % len("".join(got[:-1]).encode()))
    assert len("".join(got).encode()) <= limits.TOOL_OUTPUT_MAX


def test_long_read_in_smaller_pieces_on_a_short_heap():
    # mid-turn on a short heap a 1 KB block was what the read lacked: half-size pieces there
    import mimi

    text = "é" * 1500 + "x" * 3000
    write("/spiffs/long.md", text)
    mimi._short = True
    try:
        got = registry.call("read_file", {"path": "/spiffs/long.md"}, None, True)
    finally:
        mimi._short = False
    assert isinstance(got, tuple) and "".join(got) == text
    assert all(len(p.encode()) <= limits.READ_PIECE_SHORT for p in got) and len(got) >= 12


def test_edit_first_occurrence_only():
    write("/spiffs/memory/MEMORY.md", "name: ?\nname: ?\n")
    r = call("edit_file", path="/spiffs/memory/MEMORY.md", old_string="name: ?", new_string="name: Ada")
    assert r == "OK: edited /spiffs/memory/MEMORY.md (replaced 7 bytes with 9 bytes)"
    assert read("/spiffs/memory/MEMORY.md") == "name: Ada\nname: ?\n"


def test_edit_errors():
    write("/spiffs/m.md", "abc")
    assert call("edit_file", path="/spiffs/m.md", old_string="zzz", new_string="y") == \
        "Error: old_string not found in /spiffs/m.md"
    assert call("edit_file", path="/spiffs/none.md", old_string="a", new_string="b") == \
        "Error: file not found: /spiffs/none.md"
    assert call("edit_file", path="/spiffs/m.md", old_string="", new_string="b").startswith("Error:")
    write("/spiffs/huge.md", "x" * (limits.FILE_READ_MAX + 1))
    assert "too large" in call("edit_file", path="/spiffs/huge.md", old_string="x", new_string="y")
    assert read("/spiffs/m.md") == "abc"
    # Deleting text works (empty new_string).
    assert call("edit_file", path="/spiffs/m.md", old_string="b", new_string="").startswith("OK:")
    assert read("/spiffs/m.md") == "ac"


def test_list_dir_recursive_prefix_hidden():
    assert call("list_dir") == "(no files found)"
    write("/spiffs/config/SOUL.md", "s")
    write("/spiffs/memory/MEMORY.md", "m")
    write("/spiffs/memory/2025-01-01.md", "n")
    write("/spiffs/skills/deep/x.md", "x")
    write("/spiffs/.defaults.json", "{}")
    write("/spiffs/memory/MEMORY.md.tmp", "partial")
    assert call("list_dir").split("\n") == [
        "/spiffs/config/SOUL.md", "/spiffs/memory/2025-01-01.md", "/spiffs/memory/MEMORY.md",
        "/spiffs/skills/deep/x.md"]
    assert call("list_dir", prefix="/spiffs/memory/").split("\n") == [
        "/spiffs/memory/2025-01-01.md", "/spiffs/memory/MEMORY.md"]
    assert call("list_dir", prefix="skills/") == "/spiffs/skills/deep/x.md"
    assert call("list_dir", prefix="/spiffs/nothing/") == "(no files found)"
    assert call("list_dir", prefix="/") .count("\n") == 3  # never anything outside /spiffs


def test_list_dir_output_is_capped():
    for i in range(200):
        write("/spiffs/many/file-with-a-longish-name-%03d.md" % i, "")
    r = call("list_dir")
    assert len(r.encode()) <= limits.LIST_DIR_MAX
    assert r.split("\n")[-1].endswith("more)")


def escapes():
    base = ["/config.json", "config.json", "/spiffs", "/spiffs/", "spiffs/x.md", "./spiffs/x.md",
            "/spiffs/../config.json", "/spiffs/..", "/spiffs/../", "/spiffs/../../etc/passwd",
            "/spiffs/./config.json", "/spiffs//config.json", "//spiffs/x.md", "/spiffs/memory/../../config.json",
            "/spiffs/memory/..", "/spiffs/...", "/spiffs/a/./b", "/spiffs/a/", "/spiffs/a//b",
            "/spiffs\\..\\config.json", "\\spiffs\\x.md", "/spiffs/a\\..\\..\\config.json",
            "/spiffs/x\x00.md", "/spiffs/\x00../config.json", "/spiffs/x\n.md", "/spiffs/x\r.md",
            "/spiffs/x\t.md", "/spiffs/\x1b[2J", "/spiffs/x\x7f", "/spiffs/\u2028x",
            "/spiffs/\uff0e\uff0e/config.json", "/spiffs/\u2025/config.json", "/spiffs/\u2024\u2024/x",
            "/spiffs/\u3002\u3002/x", "/spiffs/.", "/spiffs/ ../x", "/spiffs/.. /x",
            "/SPIFFS/x.md", "/spiffsx/a.md", "/spiffs.md", "/", "", "/etc/passwd", "/defaults/config/SOUL.md",
            "/certs/roots.pem", "/main.py", "/lib/mimi/app.py", "/spiffs/" + "a" * 300,
            "/spiffs/" + "a/" * 100 + "x", "/spiffs/.defaults.json", "/spiffs/memory/MEMORY.md.tmp",
            "/spiffs/%2e%2e/config.json" + "\x00", "~/x", "/spiffs/a/../../../../config.json",
            "/spiffs/sessions/../../config.json", "/./spiffs/x", "/spiffs/x/.."]
    return base


def every_tool_refuses(paths, content, old, secret):
    """read_file, write_file and edit_file answer an error for each path, never quoting secret."""
    for p in paths:
        for tool, extra in (("read_file", {}), ("write_file", {"content": content}),
                            ("edit_file", {"old_string": old, "new_string": "b"})):
            args = {"path": p}
            args.update(extra)
            r = registry.call(tool, args)
            assert r.startswith("Error:"), (tool, p, r)
            assert secret not in r


def test_path_escapes_refused():
    write("/config.json", '{"api_key": "sk-secret"}')
    write("/spiffs/x.md", "ok")
    cases = escapes()
    assert len(cases) >= 50
    every_tool_refuses(cases, "pwned", "a", "sk-secret")
    assert read("/config.json") == '{"api_key": "sk-secret"}'
    assert read("/spiffs/x.md") == "ok"
    # Nothing was written anywhere outside the allowed tree.
    assert sorted(fs.walk_files("/spiffs")) == ["/spiffs/x.md"]
    assert "pwned" not in read("/config.json")
    # Non-string paths too.
    for bad in (1, None, [], {"a": 1}):
        assert registry.call("read_file", {"path": bad}).startswith("Error:")


def test_allowed_paths():
    for p in ("/spiffs/x.md", "/spiffs/memory/2025-12-02.md", "/spiffs/skills/my-skill.md",
              "/spiffs/日记/笔记.md", "/spiffs/a.b.c", "/spiffs/.hidden", "/spiffs/a b/c d.md"):
        assert files.check_path(p) == (p, None), p
        assert call("write_file", path=p, content="x").startswith("OK:"), p
        assert call("read_file", path=p) == "x"


def test_write_over_directory_or_under_a_file():
    fs.makedirs("/spiffs/dir")
    assert call("write_file", path="/spiffs/dir", content="x").startswith("Error:")
    write("/spiffs/f", "file")
    assert call("write_file", path="/spiffs/f/child.md", content="x").startswith("Error:")
    assert read("/spiffs/f") == "file"


def test_write_size_cap():
    r = call("write_file", path="/spiffs/big", content="x" * (limits.FILE_WRITE_MAX + 1))
    assert r.startswith("Error: content too large")
    assert not fs.exists("/spiffs/big")


def test_repl_tool_exec():
    from support import Capture
    from mimi import repl

    with Capture() as c:
        repl.tool_exec("write_file", '{"path": "/spiffs/t.md", "content": "hi"}')
        repl.tool_exec("read_file", '{"path": "/spiffs/t.md"}')
        repl.tool_exec("list_dir", "{}")
        repl.tool_exec("read_file", '{"path": "/config.json"}')
        repl.tool_exec("read_file", "not json")
        repl.tool_exec("nope", "{}")
    lines = [x for x in c.text.split("\n") if not x.startswith("[")]  # log lines
    assert lines[0] == "OK: wrote 2 bytes to /spiffs/t.md"
    assert lines[1] == "hi"
    assert "/spiffs/t.md" in lines[2]
    assert lines[3].startswith("Error: path must start with /spiffs/")
    assert lines[4].startswith("Error:") and lines[5] == "Error: unknown tool 'nope'"


def test_sessions_and_cron_json_out_of_reach():
    # Issue 16 item 5: from a WebSocket turn the model read and forged a Telegram
    # chat's history and wrote cron.json jobs that cron_add refuses.
    chat = '{"role": "user", "content": "owner private text", "ts": 1}\n'
    jobs = '{"jobs": []}'
    write("/spiffs/sessions/tg_42.jsonl", chat)
    write("/spiffs/cron.json", jobs)
    tricks = ("/spiffs/sessions/tg_42.jsonl", "/spiffs/sessions", "/spiffs/sessions/",
              "/spiffs/sessions/new.jsonl", "/spiffs/sessions/tg_42.jsonl/", "/spiffs/sessions/tg_42.jsonl.tmp",
              "/spiffs/Sessions/tg_42.jsonl", "/spiffs/SESSIONS/tg_42.jsonl", "/spiffs/sessions./tg_42.jsonl",
              "/spiffs/sessions\u2024/tg_42.jsonl", "/spiffs//sessions/tg_42.jsonl", "/spiffs/./sessions/tg_42.jsonl",
              "/spiffs/sessions//tg_42.jsonl", "/spiffs/sessions/./tg_42.jsonl", "/spiffs/sessions/x/../tg_42.jsonl",
              "/spiffs/memory/../sessions/tg_42.jsonl", "/spiffs/sessions/sub/x.md",
              "/spiffs/cron.json", "/spiffs/CRON.JSON", "/spiffs/Cron.json", "/spiffs/cron.json/", "/spiffs/cron.json.",
              "/spiffs/cron.json\uff0e", "/spiffs/cron.json/x", "/spiffs//cron.json", "/spiffs/./cron.json",
              "/spiffs/cron.json.tmp", "/spiffs/memory/../cron.json", "/spiffs/.defaults.json", "/spiffs/.DEFAULTS.json")
    every_tool_refuses(tricks, '{"jobs": [{"chat_id": "666"}]}', "owner", "private")
    assert read("/spiffs/sessions/tg_42.jsonl") == chat
    assert read("/spiffs/cron.json") == jobs
    assert sorted(fs.walk_files("/spiffs")) == ["/spiffs/cron.json", "/spiffs/sessions/tg_42.jsonl"]
    assert not fs.exists("/spiffs/Sessions") and not fs.exists("/spiffs/CRON.JSON")
    # list_dir shows neither, whatever the prefix.
    write("/spiffs/memory/MEMORY.md", "m")
    assert call("list_dir") == "/spiffs/memory/MEMORY.md"
    for prefix in ("/spiffs/sessions/", "sessions", "/spiffs/cron", "/spiffs/s", "/spiffs/Sessions/",
                   "/spiffs/memory/../sessions/", "memory/../sessions/t", "/spiffs/sessions./"):
        assert call("list_dir", prefix=prefix) == "(no files found)", prefix


def test_reserved_names_match_their_owners():
    from mimi.memory import sessions
    from mimi.services import cron

    for p in (sessions.DIR, sessions.DIR + "/x.jsonl", cron.PATH, limits.DEFAULTS_RECORD):
        assert files.check_path(p)[0] is None, p
    assert files.check_path(limits.SPIFFS + "/sessions-notes.md")[0]  # a look-alike that is no folder of ours
    assert files.check_path(limits.SPIFFS + "/memory/sessions/x.md")[0]
    assert files.check_path(limits.SPIFFS + "/memory/cron.json")[0]


def quota(kb):
    from mimi.config.settings import cfg

    cfg.set("files_quota_kb", kb)
    files._used = None  # as after a reboot: counted again


def test_quota_refuses_with_how_much_is_used():
    # Issue 16 item 6: nothing stopped the model from filling the flash.
    quota(64)
    # 30000 bytes take 8 blocks (32 KB), the new folder 8 KB: 40 KB used.
    assert call("write_file", path="/spiffs/q/a.md", content="a" * 30000).startswith("OK:")
    r = call("write_file", path="/spiffs/q/b.md", content="b" * 30000)
    assert r.startswith("Error:") and "40 KB" in r and "64 KB" in r and "files_quota_kb" in r, r
    assert "32 KB more" in r, r
    assert not fs.exists("/spiffs/q/b.md")
    # Growing a file by edit is refused too, and leaves it as it was.
    r = call("edit_file", path="/spiffs/q/a.md", old_string="aaaa", new_string="x" * 30000)
    assert r.startswith("Error:") and "64 KB" in r, r
    assert read("/spiffs/q/a.md") == "a" * 30000
    # Shrinking is always allowed, and frees room for the next file.
    assert call("write_file", path="/spiffs/q/a.md", content="short").startswith("OK:")
    assert call("write_file", path="/spiffs/q/b.md", content="b" * 30000).startswith("OK:")
    # Each file counts at least a block, each folder two: many tiny files or folders
    # cannot slip past the quota.
    quota(64)
    out = [call("write_file", path="/spiffs/t/%d/x" % i, content="") for i in range(8)]
    # q, a, b: 44 KB; t, t/0 and x: 20 KB more, 64 in all; t/1 and its x would be 12 more.
    assert [r[:3] for r in out].count("OK:") == 1, out
    assert "files_quota_kb" in out[-1]


def test_quota_total_is_kept_not_recounted():
    quota(1024)
    walks = []
    real = fs.entries

    def counting(top, *a):
        if top == "/":
            walks.append(top)
        return real(top, *a)

    fs.entries = counting
    try:
        for i in range(5):
            assert call("write_file", path="/spiffs/n/%d.md" % i, content="x" * 5000).startswith("OK:")
        assert call("edit_file", path="/spiffs/n/0.md", old_string="xx", new_string="y").startswith("OK:")
    finally:
        fs.entries = real
    assert len(walks) == 1
    # The running total equals a fresh count.
    used = files._used
    files._used = None
    files.usage()
    assert files._used == used == 2 * limits.BLOCK_SIZE + 5 * 2 * limits.BLOCK_SIZE


def test_quota_setting():
    from mimi.config.settings import cfg
    from support import raises

    assert cfg.get("files_quota_kb") == 0  # 0: sized to the flash
    for bad in (-1, "lots", limits.FILES_QUOTA_MAX_KB + 1):
        raises(ValueError, cfg.set, "files_quota_kb", bad)
    cfg.set("files_quota_kb", "2048")
    assert cfg.get("files_quota_kb") == 2048
