"""The device layer (issue 23): what its tools cost each LLM request, how long a
device_read takes the agent, and how long a read holds the asyncio loop, against the
simulated parts.

  .venv/bin/python bench/devices.py [-n RUNS]

The heap figures (after boot with and without devices, and the whole firmware with four
devices and a device turn) are bench/boot.py's and bench/longrun.py's; docs/benchmarks.md
§9 has them beside these.
"""
from common import BUILD, Table, cli, interpreters, make_image, median, mkimage, mp_args, run_mp


BEFORE = 3455, 3803  # the table's bytes (Anthropic's, OpenAI's shape) when issue 23 was filed


def schema_table():
    from mimi.tools import TABLE, NEEDS

    TOOLS = [tuple(row.split("\t")) for row in b"".join(TABLE).decode().split("\n")[1:]]  # (name, module, description, schema)
    # (the table: bytes constants of whole rows, each beginning with "\n")

    noargs = '{"type":"object","properties":{}}'  # left out in OpenAI's shape (llm/openai.py _NOARGS)

    def size(rows, openai):
        fmt = ('{"type":"function","function":{"name":"%s","description":"%s","parameters":%s}},' if openai
               else '{"name":"%s","description":"%s","input_schema":%s},')
        bare = '{"type":"function","function":{"name":"%s","description":"%s"}},'  # no arguments
        return sum(len(bare % (n, d) if openai and s == noargs else fmt % (n, d, s)) for n, _, d, s in rows)

    body = ("devices", "i2c", "history", "rules")  # SPEC §13 and §14's tools
    base = [t for t in TOOLS if t[1] not in body]
    t = Table("Tool schemas each LLM request carries (bytes of JSON)",
              ["devices", "tools offered", "Anthropic shape", "+ over no device tools",
               "+ over the table before issue 23 (%d)" % BEFORE[0],
               "OpenAI shape", "+ over no device tools", "+ over the table before issue 23 (%d)" % BEFORE[1]])
    for label, have in (("none", 0), ("attached", 1), ("attached, after an I2C scan", 3)):
        rows = [r for r in TOOLS if not NEEDS.get(r[0]) or NEEDS[r[0]] & have]
        extra = [r[0] for r in rows if r not in base]
        a, o = size(rows, False), size(rows, True)
        t.add(label, ", ".join(extra), a, a - size(base, False), a - BEFORE[0],
              o, o - size(base, True), o - BEFORE[1])
    t.notes = ("All the firmware's tools are sent with every request (names, descriptions, input "
               "schemas; in OpenAI's shape a tool without arguments goes without parameters); the "
               "device, history and rule tools are offered only where they can do something "
               "(lib/mimi/tools/__init__.py NEEDS). Issue 23's budget: +600 bytes a request with no "
               "device; +1.6 KB for all device, history and rule tools (issue 24).")
    return t


def tables(n=None):
    n = n or 7
    mkimage.compile_tree(BUILD)
    reads = Table("device_read as the agent calls it (registry.call, %d runs; ms on this host)" % n,
                  ["interpreter", "device", "first (code loaded)", "median", "median, code dropped after each"])
    stalls = Table("The asyncio loop's longest gap while one device is read (%d runs each)" % n,
                   ["interpreter", "device", "read took ms (median)", "loop gap awaited (aread), median ms",
                    "max ms", "loop gap, blocking read on the loop, median ms"])
    import tempfile
    from pathlib import Path

    for label, mp in interpreters():
        with tempfile.TemporaryDirectory() as tmp:
            img = make_image(Path(tmp) / "fs.img")
            rc, recs, out = run_mp("devices.py", mp_args(img, runs=n), mp=mp, timeout=600)
            if rc:
                raise RuntimeError(out[-3000:])
        for r in recs:
            if r["case"] == "read":
                reads.add(label, r["type"], r["first_ms"], r["median_ms"], r["cold_ms"])
        by = {}
        for r in recs:
            if r["case"] == "stall":
                by.setdefault(r["type"], {}).setdefault(r["how"], []).append(r)
        for typ, h in by.items():
            a, b = h.get("awaited", []), h.get("blocking", [])
            stalls.add(label, typ, median([r["took_ms"] for r in a]), median([r["worst_ms"] for r in a]),
                       max(r["worst_ms"] for r in a), median([r["worst_ms"] for r in b]))
    reads.notes = ("bench/mp/devices.py: the simulated parts of lib/mimi/devices/sim/ take the time "
                   "the chips' take (conversions, bus clocks at 100 kHz), so a read's time is mostly "
                   "the part's: SHT3x 16 ms wait, AHT20 80, BME280 10, BH1750 200, DS18B20 750, "
                   "DHT22 ~275 (its start signal and frame), HC-SR04 the echo (150 cm: 8.7 ms). "
                   "Issue 23's budget: an I2C sensor's read at most 30 ms on the host.")
    stalls.notes = ("A probe task sleeping 1 ms records the longest gap between its wake-ups. "
                    "Awaited: conversions awaited (a driver's generator); a DHT's, an HC-SR04's and a DS18B20's read "
                    "on a short thread; blocking: the same read called on the loop. "
                    "Stuck bus: the SHT3x holding SDA low, each transfer waiting the controller's "
                    "timeout (limits.I2C_TIMEOUT_US). On the board a thread does not run beside the "
                    "loop while it holds the GIL: a DHT's 40-bit frame (~5 ms) and an HC-SR04's "
                    "echo (busy-waited, up to 18 ms) hold the loop there.")
    return [schema_table(), reads, stalls]


if __name__ == "__main__":
    cli(tables)
