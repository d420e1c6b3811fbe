# The board layer: the only code that knows whether it runs on an ESP32-S3 or on
# the host under the MicroPython unix port. Everything else imports from here.
import sys

if sys.platform == "esp32":
    from mimi.board.esp32 import *  # noqa: F401,F403
else:
    from mimi.board.host import *  # noqa: F401,F403


def __getattr__(name):
    """What the firmware uses now and then, loaded on first use: on the board the
    device drivers' hardware seam (board/esp32_io.py), on the host the fakes of
    board/host_sys.py (access point, OTA slots; through it GPIO, host_pins.py, and
    that seam, host_io.py).
    A submodule not imported yet (from mimi.board import host_io) is imported."""
    if name[:1] == "_":
        raise AttributeError(name)
    sub = name[:4] == "host" or name[:5] == "esp32"
    mod = "mimi.board." + (name if sub else "esp32_io" if sys.platform == "esp32" else "host_sys")
    try:
        __import__(mod)
    except ImportError:
        if not sub:
            raise
        raise AttributeError(name)
    mod = sys.modules[mod]
    return mod if sub else getattr(mod, name)
