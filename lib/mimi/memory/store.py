# Long-term memory (MEMORY.md) and daily notes (/spiffs/memory/YYYY-MM-DD.md by the
# local date). note_path() is the one place a note's path is made: the system prompt
# and the loader both use it, so they cannot disagree.
from mimi import limits, fs, board
from mimi.config.settings import tz_s
from micropython import const

DIR = limits.SPIFFS + "/memory"
MEMORY_PATH = DIR + "/MEMORY.md"
NOTE_SEP = "\n---\n"
_DAY_S = const(86400)


def today(unix=None):
    return board.clock.local_date(tz_s(), unix)


def note_path(date=None):
    """Path of the daily note for `date` ("YYYY-MM-DD"; default today, local time)."""
    return "%s/%s.md" % (DIR, date or today())


def note_dates(days=limits.NOTES_DAYS, unix=None):
    """Today and the days before it, newest first."""
    now = board.clock.unix() if unix is None else unix
    tz = tz_s()
    return [board.clock.local_date(tz, now - i * _DAY_S) for i in range(days)]


def read_memory(limit=limits.MEMORY_MAX):
    try:
        return fs.read_text(MEMORY_PATH, limit)
    except OSError:
        return ""


def write_memory(text):
    fs.write_atomic(MEMORY_PATH, text)


def append_note(text, date=None):
    """Add a line to today's note (created with a '# YYYY-MM-DD' header). Returns its path."""
    p = note_path(date)
    with fs.lock:  # header check and append as one change
        head = [] if fs.exists(p) else ["# %s\n\n" % (date or today())]
        fs.append(p, head + [text.rstrip("\n") + "\n"])
    return p


def recent_notes(limit=limits.NOTES_MAX, days=limits.NOTES_DAYS, unix=None):
    """Notes of today and the days before, newest first, each headed by its date and
    joined with '---'; at most `limit` UTF-8 bytes in all."""
    parts = []
    used = 0
    for date in note_dates(days, unix):
        p = note_path(date)
        try:
            raw = fs.read_head(p, limit + 1)
        except OSError:
            continue
        text = fs.decode(raw).strip()  # (no copy of valid text)
        raw = None
        if not text:
            continue
        head = "%s%s (%s)\n" % (NOTE_SEP if parts else "", date, p)
        room = limit - used - len(memoryview(head))
        if room <= 0:
            break
        n = len(memoryview(text))
        if n > room:
            note = "\n[cut: %s is %d bytes; read_file for the rest]" % (p, fs.size(p))
            if room <= len(note):
                break
            text = fs.decode(fs.utf8_cut(text.encode(), room - len(note))) + note
            n = len(memoryview(text))
        parts.append(head)
        parts.append(text)
        used += len(memoryview(head)) + n
    return "".join(parts)
