# Frozen-module manifest for a custom MicroPython build with MimiClaw inside.
# See firmware/README.md. Paths are relative to this file.
import os
import sys

include("$(PORT_DIR)/boards/manifest.py")  # the ESP32 port's own frozen modules

# The application, compiled into the firmware: less RAM at import and a faster
# boot. On the esp32 port ".frozen" comes before "/lib" on sys.path, so the frozen
# copy is the one imported; see README.md for updates on a frozen build.
# Without the modules only the host simulator imports (tools/mkimage.py, HOST_ONLY).
_tools = os.path.abspath("../tools")  # (the build runs this from its folder)
sys.path.insert(0, _tools)
try:
    import mkimage
finally:
    sys.path.remove(_tools)  # (by name: mkimage puts lib/ in front of it)

package("mimi", files=mkimage.board_package(), base_path="../lib")

# Optional micropython-lib packages the firmware uses when present.
require("logging")
require("aiorepl")
