# Charts drawn by the firmware for tests/host/test_chart_png.py, which reads them with
# CPython's zlib and its own PNG parse: each case's readings go into the history store
# on a fresh LittleFS image, the chart is written to <tmp>/<case>.png, and one line
# "CHART {json}" says what it should show (the plot's frame, its marks, its size).
#   micropython chartpng.py ARGS.json
# ARGS: {"lib", "tmp", "cases": [{"case", "name", "start", "step", "values", "second",
#        "now", "hours", "tz", "unit", "field", "width", "height", "deflate"}]};
# deflate: "stored", "fake" (tests/mp/fakedeflate.py: the two-pass compressed path) or
# "firmware" (MicroPython's own compressor; the case is left out where there is none).
import sys
import json

args = json.load(open(sys.argv[1]))
sys.path[:] = [args["lib"], ".frozen", __file__.rpartition("/")[0] or "."]
from mimi import board  # noqa: E402

board.mount_image(args["tmp"] + "/flash.img", 512, mkfs=True)
from mimi.services.history import chart, png, store  # noqa: E402
from fakedeflate import FakeDeflate  # noqa: E402

for c in args["cases"]:
    second = c.get("second")
    for i, v in enumerate(c["values"]):
        if v is not None:
            assert store.add(c["name"], v, None if second is None else second[i],
                             every_s=c["step"], t=c["start"] + i * c["step"]) is None
    store.flush()
    kind = c.get("deflate", "stored")
    if kind == "firmware" and not png.compressor():
        print("CHART " + json.dumps({"case": c["case"], "skipped": "no compressor in this firmware"}))
        continue
    ch = chart.Chart(c["name"], c["hours"], tz_s=c.get("tz", 0), unit=c.get("unit", ""),
                     field=c.get("field", 0), now=c["now"], width=c.get("width", 480),
                     height=c.get("height", 240),
                     deflate={"stored": False, "fake": FakeDeflate, "firmware": None}[kind])
    size = ch.size()
    with open(board.host_path(args["tmp"] + "/" + c["case"] + ".png"), "wb") as f:
        written = ch.write(f)
    print("CHART " + json.dumps({"case": c["case"], "size": size, "written": written, "frame": ch.frame,
                                 "marks": ch.marks, "palette": chart.PALETTE, "epoch": store.EPOCH}))
