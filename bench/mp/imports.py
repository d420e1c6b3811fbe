# MicroPython side of bench/boot.py's per-module table: the heap each module of a
# settled boot adds when imported in boot order, after its dependencies. The qstr
# pool is grown first, so a pool doubling is not charged to whichever module
# happens to cross it.
#   micropython bench/mp/imports.py ARGS.json   ({"image":..., "lib":..., "modules": [...]})
import sys
import json
import gc

with open(sys.argv[1]) as _f:  # a JSON file: long argv items abort the unix port
    A = json.load(_f)
for _i in range(1200):
    compile("q%d=1" % _i, "", "exec")  # interns q0..q1199: the pool is big from here on
sys.path[:] = [A["lib"]]
from mimi import board  # noqa: E402

board.mount_image(A["image"])
for _m in [m for m in sys.modules if m == "mimi" or m.startswith("mimi.")]:
    del sys.modules[_m]
sys.path[:] = ["", ".frozen", "/lib"]
del board
for name in A["modules"]:
    gc.collect()
    a = gc.mem_alloc()
    __import__(name)
    gc.collect()
    print("BENCH " + json.dumps({"module": name, "bytes": gc.mem_alloc() - a}))
