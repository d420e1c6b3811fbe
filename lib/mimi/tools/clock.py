# get_current_time: the board clock in the configured UTC offset.
from mimi import board
from mimi.board.clock import parse_tz, VALID_AFTER


def now_text(tz_text=None, unix=None):
    """tz_text: a UTC offset such as "+08:00" (default: the `tz` setting)."""
    if tz_text is None:
        # Imported here: the settings (~25 KB of heap) are not part of a bare LLM turn,
        # which must fit a 256 KB heap (tests/mp/llmcases.py big_turn).
        from mimi.config.settings import tz_s

        tz = tz_s()
    else:
        try:
            tz = parse_tz(tz_text)
        except ValueError:
            tz = 0
    clock = board.clock
    if unix is None:
        unix = clock.unix()
    text = "%s, unix %d" % (clock.local_str(tz, unix), unix)
    if unix < VALID_AFTER:
        text += " (warning: the clock has not been set yet, so this time is wrong)"
    return text


def get_current_time(args, ctx):
    return now_text()

