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
    board/host_sys.py (GPIO, access point, OTA slots; and that seam, host_io.py)."""
    if name[:1] == "_" or name[:4] == "host" or name[:5] == "esp32":  # asked by imports
        raise AttributeError(name)
    mod = "mimi.board." + ("esp32_io" if sys.platform == "esp32" else "host_sys")
    __import__(mod)
    return getattr(sys.modules[mod], name)
