# Runs one MicroPython test function on a fresh LittleFS mounted at / (the
# board layer's host filesystem), and reports through the exit code:
# 0 passed, 1 failed (traceback printed), 3 skipped.
#   micropython runner.py REPO MODULE FUNC TMPDIR BLOCKS [PARAM]
import sys

repo, module, func, tmp, blocks = sys.argv[1:6]
param = sys.argv[6] if len(sys.argv) > 6 else None
import os  # noqa: E402

# The firmware as compiled .mpy (conftest builds it), else its sources.
sys.path[:] = [repo + "/tests/mp", os.getenv("MIMI_TEST_LIB") or repo + "/lib", ".frozen"]

import support  # noqa: E402

support.REPO = repo
support.TMP = tmp
from mimi import board  # noqa: E402

board.mount_image(tmp + "/flash.img", int(blocks), mkfs=True)
support.TMP = board.host_path(tmp)
support.REPO = board.host_path(repo)

try:
    mod = __import__(module)
    if hasattr(mod, "setup"):
        mod.setup()
    fn = getattr(mod, func)
    result = fn() if param is None else fn(param)
    if type(result).__name__ == "generator":  # an async def test
        import asyncio

        asyncio.run(result)
    if hasattr(mod, "teardown"):
        mod.teardown()
except support.Skip as e:
    print("SKIP:", e)
    sys.exit(3)
except BaseException as e:  # noqa: B902 - report everything, SystemExit included
    sys.print_exception(e)
    sys.exit(1)
sys.exit(0)
