# Long texts in session history: an answer in pieces (bus.pieces()) stored as one
# message, and long stored messages sent from the file on a short heap, never held.
import json
from support import write
from mimi.memory import sessions

FS_BLOCKS = 1536


def line(role, content, ts=1):
    return json.dumps({"role": role, "content": content, "ts": ts}) + "\n"


def test_a_text_in_pieces_is_stored_as_one_message():
    pieces = ('He said "hi"\n', "\u00e9\u4e2d\U0001F389 " * 300, "\\ and \t tabs")
    sessions.append("tg_p", "user", "tell me")
    sessions.append("tg_p", "assistant", pieces)
    sessions.flush()
    with open(sessions.path("tg_p")) as f:
        rows = [json.loads(x) for x in f.read().split("\n") if x]
    assert rows[1]["content"] == "".join(pieces) and rows[1]["role"] == "assistant"
    assert sessions.load("tg_p")[1]["content"] == "".join(pieces)


def test_a_text_in_pieces_too_long_for_a_line_keeps_what_fits():
    from mimi import limits

    pieces = tuple("%d " % i + "x" * 1000 for i in range(limits.SESSION_LINE_MAX // 1000 + 4))
    sessions.append("tg_q", "assistant", pieces)
    sessions.flush()
    with open(sessions.path("tg_q")) as f:
        raw = f.read()
    assert len(raw.encode()) <= limits.SESSION_LINE_MAX
    got = json.loads(raw)["content"]
    assert got.endswith("\n[cut: message too long]") and "".join(pieces).startswith(got[:-25])
    assert len(got) > limits.SESSION_LINE_MAX - 1100


def test_long_lines_are_sent_from_the_file_on_a_short_heap():
    # a short heap never holds a long stored message: it is found in the file in blocks
    # and sent from there (a Region), as stored; one that is not sent as stored (a \ud
    # escape) is decoded as before
    import mimi
    from mimi.net.http import Region

    long_ascii = "word " * 2500  # 12.5 KB
    long_utf8 = ("\u00e9\u4e2d\U0001F389 \\\"q\" " * 700)  # escapes and characters across blocks
    surrogate = json.dumps({"role": "assistant", "content": "x" * 3000, "ts": 1}).replace("xxxx", "\\ud83dxx", 1)
    write(sessions.path("tg_far"), line("user", "a") + line("assistant", long_ascii) +
          line("user", long_utf8) + surrogate + "\n" + line("user", "b") +
          '{"role":"assistant","content":"' + "z" * 2000 + '","ts":5}\n')
    mimi._short = True
    try:
        msgs = sessions.load("tg_far", lambda m: ("enc", m["role"], m["content"]))
    finally:
        mimi._short = False
    assert len(msgs) == 6, msgs
    raw = open(sessions.path("tg_far"), "rb").read()
    for m, (role, text) in zip([msgs[1], msgs[2], msgs[5]], [("assistant", long_ascii), ("user", long_utf8),
                                                            ("assistant", "z" * 2000)]):
        assert isinstance(m, tuple) and isinstance(m[1], Region), m
        assert m[0] == sessions._ROLE_JSON[role]
        assert json.loads(raw[m[1].start:m[1].start + m[1].n]) == text
    assert msgs[3][0] == "enc" and msgs[3][1] == "assistant" and msgs[3][2].endswith("x" * 2990)  # decoded


def test_a_long_line_is_sent_from_the_file_on_any_heap():
    # with room (not short) short messages are held as before, but a long one is sent
    # from the file too: held, it needs a block its size (at 192 KB a 10 KB answer in the
    # history failed its turn with "allocating 10438 bytes" while 100 KB were free)
    import mimi
    from mimi.net.http import Region

    write(sessions.path("tg_room"), line("user", "a") + line("assistant", "word " * 2000) +
          line("user", "b") + line("assistant", "short"))
    mimi._short = False
    msgs = sessions.load("tg_room", lambda m: ("enc", m["role"], m["content"]))
    assert [m[0] for m in msgs] == ["enc", sessions._ROLE_JSON["assistant"], "enc", "enc"], msgs
    assert isinstance(msgs[1][1], Region)
    assert msgs[3] == ("enc", "assistant", "short")


def test_lines_across_the_read_blocks_load_whole():
    # the tail is read backwards into one buffer, a line's end kept while the block before
    # it is read in front: lines shorter and longer than a block (held whole without
    # encode), characters and escapes across the blocks' edges
    texts = []
    for i in range(24):
        n = (i * 397) % 2300 + 1
        texts.append(("\u00e9\"\\%d\n" % i + "\u4e2d" * (n // 3) + "x" * (n % 7))[:n])
    write(sessions.path("tg_blocks"), "".join(line(("user", "assistant")[i % 2], t) for i, t in enumerate(texts)))
    msgs = sessions.load("tg_blocks")
    assert [m["content"] for m in msgs] == texts[-20:]


def test_a_short_heap_merges_a_run_of_one_role_read_back_from_the_file():
    # on a short heap a stored text is not held while the history loads (it is sent from
    # the file); two user messages in a row are still joined into one, as with room
    import mimi

    write(sessions.path("tg_run"), line("user", "first") + line("user", "second \u00e9") +
          line("assistant", "answer") + line("user", "next") + line("assistant", "done"))
    mimi._short = True
    try:
        msgs = sessions.load("tg_run", lambda m: ("enc", m["role"], m["content"]))
    finally:
        mimi._short = False
    assert msgs[0] == ("enc", "user", "first\n\nsecond \u00e9"), msgs
    assert [m[0] for m in msgs[1:]] == [sessions._ROLE_JSON[r] for r in ("assistant", "user", "assistant")]
