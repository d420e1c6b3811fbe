# Huge Telegram updates on a small heap: a ~100 KB update and ten of ~48 KB are skipped
# or handled, never a MemoryError that kills the poll. A module of its own, importing
# only tgbot.py: its cap measures the firmware, not test_telegram.py's source compiled
# beside it (the 32-bit run needed all of its 224k cap with it).
from mimi import log
from tgbot import setup, update, _flood_then_owner, ALLOWED  # noqa: F401 (setup: the runner's)

FIXTURES = ("fake_telegram",)
HEAPSIZE = "2m"
# (64-bit, 32-bit): it needs 176-180k / 124-128k (tests/heapneed.py, 2026-12-05, from
# /work/main and /check/work/main); every run passes from there to 208k / 152k (7 temp
# paths from each, every 4-12 KB): ~90% of each cap
HEAP = {"test_huge_updates_on_a_small_heap": ("200k", "144k")}
TIMEOUT = 120


async def test_huge_updates_on_a_small_heap():
    # a ~100 KB update and ten of ~48 KB on a small heap (HEAP): skipped or handled, never a
    # MemoryError that kills the poll
    await update(chat_id=ALLOWED, text="z", repeat=100000)
    await _flood_then_owner()
    assert "polling failed" not in "\n".join(log.recent())
