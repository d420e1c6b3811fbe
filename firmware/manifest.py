# Frozen-module manifest for a custom MicroPython build with MimiClaw inside.
# See firmware/README.md. Paths are relative to this file.
include("$(PORT_DIR)/boards/manifest.py")  # the ESP32 port's own frozen modules

# The application, compiled into the firmware: less RAM at import and a faster
# boot. On the esp32 port ".frozen" comes before "/lib" on sys.path, so the frozen
# copy is the one imported; see README.md for updates on a frozen build.
package("mimi", base_path="../lib")

# Optional micropython-lib packages the firmware uses when present.
require("logging")
require("aiorepl")
