# The board layer: the only code that knows whether it runs on an ESP32-S3 or on
# the host under the MicroPython unix port. Everything else imports from here.
import sys

if sys.platform == "esp32":
    from mimi.board.esp32 import *  # noqa: F401,F403
else:
    from mimi.board.host import *  # noqa: F401,F403
