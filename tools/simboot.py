# MicroPython side of the host simulator: mount the LittleFS image at / as the
# board's flash, then run the firmware from the image only, as the board does:
# /boot.py, /main.py and the package from /lib (so an OTA update installed there
# is what the next boot runs, and a broken one is rolled back by the firmware).
#   micropython tools/simboot.py IMAGE BUILD_LIB [KEY=VALUE ...]
# BUILD_LIB (the compiled tree tools/sim copies into the image) serves only the
# mount itself; its modules are dropped before anything else is imported.
# MIMI_SIM_PARTS (tools/sim --part, one spec a line) wires simulated parts to the
# board before it boots (mimi/devices/sim/parts.py; sim_set/sim_get on the console).
# MIMI_SIM_LIMITS (tests) shortens waits of lib/mimi/limits.py (simsetup.shorten_limits()).
# The steps are tools/simsetup.py's, loaded for each and dropped: this script's own code
# stays in the heap while main.py runs inside it (on the board, main.py's alone).
import sys

_tools = sys.path[0]  # this script's folder (the unix port makes it absolute): the image's paths replace it
import simsetup  # noqa: E402

_main = simsetup.start(sys.argv)
del sys.modules["simsetup"], simsetup
# main.py runs in this module's globals: they are the REPL namespace, as on the board.
exec(_main, globals())
sys.path[:0] = ["/host" + _tools, _tools]  # the host's files, now under /host (board/host.py)
import simsetup  # noqa: E402

del sys.path[:2]
simsetup.repl(globals())
