# Frozen-module manifest for the MicroPython unix port (host simulator) with the
# mimi package inside, to measure the heap as a frozen board build would have it.
# Build commands: docs/benchmarks.md §3c. Paths are relative to this file.

# The unix port's standard variant freezes asyncio (from MicroPython itself) and a
# few micropython-lib packages (mip, ssl, requests, argparse) the firmware does not
# import; only asyncio is needed, so micropython-lib is not.
include("$(MPY_DIR)/extmod/asyncio")

package("mimi", base_path="../lib")
