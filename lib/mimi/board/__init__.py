# The board layer: the only code that knows whether it runs on an ESP32-S3 or on
# the host under the MicroPython unix port. Everything else imports from here.
import sys

if sys.platform == "esp32":
    from mimi.board.esp32 import *  # noqa: F401,F403
else:
    from mimi.board.host import *  # noqa: F401,F403

    def __getattr__(name):
        """The host's fakes used now and then (board/host_sys.py), loaded on first use."""
        if name[:1] == "_" or name == "host_sys":  # the import machinery asks these
            raise AttributeError(name)
        __import__("mimi.board.host_sys")
        return getattr(sys.modules["mimi.board.host_sys"], name)
