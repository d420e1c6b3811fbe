# MicroPython side of bench/hostshare.py: the heap of each module's code and globals,
# its names already interned and its dependencies loaded. Each module is imported once
# (with what it needs), then dropped from sys.modules and imported again: the second
# copy is what is measured (the least of three; the first copies stay alive, so nothing
# of them is freed meanwhile).
# The qstr pool is grown past its 8th part first. The board's esp32.py and esp32_io.py
# import over stub machine and network modules (bench/mp/stubs/, loaded before).
# Last, tools/simboot.py compiled (the script main.py runs inside on the host).
#   micropython bench/mp/hostshare.py ARGS.json   ({"image", "lib", "mp_dir", "modules", "simboot"})
import sys
import json
import gc

with open(sys.argv[1]) as _f:
    A = json.load(_f)
for _i in range(2600):
    compile("q%d=1" % _i, "", "exec")
sys.path[:] = [A["lib"]]
from mimi import board  # noqa: E402

board.mount_image(A["image"])
for _m in [m for m in sys.modules if m == "mimi" or m.startswith("mimi.")]:
    del sys.modules[_m]
_host = board.host_path
sys.path[:] = ["", ".frozen", "/lib", _host(A["mp_dir"] + "/stubs")]
del board
_old = []
for name in ["machine", "network"] + A["modules"]:
    __import__(name)
for name in A["modules"]:
    b = None
    for _k in range(3):  # the least of three copies (a dict's table that grows, a word on the stack)
        _old.append(sys.modules.pop(name))
        gc.collect()
        a = gc.mem_alloc()
        __import__(name)
        gc.collect()
        b = gc.mem_alloc() - a if b is None else min(b, gc.mem_alloc() - a)
    print("BENCH " + json.dumps({"module": name, "bytes": b}))
with open(_host(A["simboot"])) as _f:
    _src = _f.read()
gc.collect()
a = gc.mem_alloc()
_code = compile(_src, "simboot.py", "exec")  # the script tools/sim runs main.py inside
gc.collect()
print("BENCH " + json.dumps({"module": "tools/simboot.py", "bytes": gc.mem_alloc() - a}))
