# MicroPython side of bench/gateway.py's heap table: what each part of the channels
# costs on the heap when it is loaded, after the modules every boot has.
#   micropython bench/mp/channels.py ARGS.json   (a file: long argv items abort this port)
# One "BENCH {json}" line per part: name, bytes (gc.mem_alloc() after - before).
import sys
import json

with open(sys.argv[1]) as f:
    A = json.load(f)
sys.path[:] = [A["lib"]]
from mimi import board  # noqa: E402

board.mount_image(A["image"])
for _m in [m for m in sys.modules if m == "mimi" or m.startswith("mimi.")]:
    del sys.modules[_m]
sys.path[:] = ["", ".frozen", "/lib"]  # the image's code, as the board runs it
import gc  # noqa: E402

for m in A["base"]:
    __import__(m)


def used():
    gc.collect()
    return gc.mem_alloc()


for name, mods in A["parts"]:
    before = used()
    for m in mods:
        __import__(m)
    print("BENCH " + json.dumps({"name": name, "bytes": used() - before}))
