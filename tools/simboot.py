# MicroPython side of the host simulator: mount the LittleFS image at / as the
# board's flash (through the firmware's own board layer), apply --set settings
# with the firmware's own validation, then run /boot.py and /main.py from the
# image exactly as the board does.
#   micropython tools/simboot.py IMAGE BUILD_LIB [KEY=VALUE ...]
# BUILD_LIB is the compiled tree tools/sim just copied into the image, so the few
# modules imported before the mount are the same bytes as the image's.
import sys

image, build_lib = sys.argv[1], sys.argv[2]
sets = sys.argv[3:]

sys.path[:] = [build_lib]
from mimi import board  # noqa: E402

board.mount_image(image)
sys.path[:] = ["", ".frozen", "/lib"]

from mimi import config  # noqa: E402

config.cfg.load()
for item in sets:
    key, sep, value = item.partition("=")
    try:
        if not sep:
            raise ValueError("--set wants KEY=VALUE, got %r" % item)
        config.cfg.set(key, value)
    except ValueError as e:
        print("sim: refused --set %s: %s" % (item, e))
        sys.exit(2)

with open("/boot.py") as f:
    exec(f.read(), {"__name__": "boot"})
# main.py runs in this module's globals: they are the REPL namespace, as on the board.
del image, build_lib, sets, config, board
with open("/main.py") as f:
    exec(f.read(), globals())
# Stopped from the console (Ctrl-D), or main.py's boot guard gave up on an app
# that does not import (safe mode): the board would now show MicroPython's REPL.
try:
    import mimi.app  # noqa: E402

    stopped = mimi.app._stop.is_set()
except Exception:
    stopped = True
from mimi import board  # noqa: E402

if board.CONSOLE and stopped:
    from mimi import console  # noqa: E402

    console.serve_blocking(globals())
