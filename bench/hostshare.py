"""The host-only share of the whole firmware's heap (32-bit .mpy): what of the heap in
tests/host/test_board_heap_e2e.py's run exists only because it runs on the host
(board/host*.py, hostlib/, mimi/devices/sim/, tools/simboot.py, the names they intern,
the simulated parts' data), less what the board loads in their place (board/esp32.py
and esp32_io.py; its onewire, dht, neopixel are frozen). tests/wholefw.py's HOST_HW_KB
is this, rounded down.
1. The firmware as the test runs it (tests/wholefw.py, the body at rest), its four parts
   wired on the console: live heap, the host-only modules loaded, their data (each
   object measured by a copy of it: bench/mp/hostprobe.py), every interned name; the
   host-only modules loaded while the four turns run (sampled every 5 ms).
2. bench/mp/hostshare.py: each of those modules' code and globals (a second copy
   imported with its names and dependencies there), the board's counterparts, simboot.py.
3. The names: those of the loaded host-only .mpy files that no loaded board .mpy has,
   and those interned at run time by the host only (tools/sim's argv: the --set values,
   the image's and build's paths; the host modules' names; simboot/simsetup's globals).

  .venv/bin/python bench/hostshare.py
"""
import ast
import json
import re
import tempfile
from pathlib import Path

from common import BENCH, BUILD, MP32, ROOT, Sim, Table, _runs, certs, cli, mp_args, run_mp
from fakes import llm as fake_llm
from fakes import search as fake_search
from fakes import telegram as fake_telegram
import wholefw

HOST = ("mimi.board.host", "mimi.devices.sim")
COUNTERPARTS = ("mimi.board.esp32", "mimi.board.esp32_io")
REST_RE = re.compile(r"^HOSTSHARE (\{.*\})$", re.M)
QSTRS_RE = re.compile(r"^qstr pool: .*?$(.*?)^HOSTSHARE qstrs end", re.M | re.S)
WATCHED_RE = re.compile(r"^HOSTSHARE watched (\[.*\])$", re.M)


def mpy_names(path):
    """The names an .mpy (v6) interns when it loads: its qstr table's non-static entries."""
    b = path.read_bytes()
    i = 4

    def vuint():
        nonlocal i
        n = 0
        while True:
            c = b[i]
            i += 1
            n = n << 7 | c & 0x7F
            if not c & 0x80:
                return n

    nq = vuint()
    vuint()
    out = []
    for _ in range(nq):
        v = vuint()
        if not v & 1:
            out.append(b[i:i + (v >> 1)].decode("utf-8", "replace"))
            i += (v >> 1) + 1
    return out


def script_names(*paths):
    names = set()
    for p in paths:
        for node in ast.walk(ast.parse(p.read_text())):
            names.add(getattr(node, "id", None) or getattr(node, "name", None) or getattr(node, "arg", None))
    return names - {None}


def live_run(tmp, mp):
    c = certs(tmp)
    llm, tg, search = fake_llm.start("anthropic", c), fake_telegram.start(), fake_search.start()
    try:
        wholefw.prepare(tmp, c["ca"], body=True)
        with Sim.start(tmp, *wholefw.settings(llm, tg), console=True,
                       heap="%dk" % (272 + wholefw.HOST_HW_KB), micropython=mp) as sim:
            wholefw.ready(sim, search)
            wholefw.attach_parts(sim)
            at = len(sim.output())
            sim.send("exec(open(%r).read())\r" % ("/host" + str(BENCH / "mp" / "hostprobe.py")))
            sim.wait_for(r"hostprobe in", start=at)
            sim.send("_hs_rest()\r")
            rest = json.loads(sim.wait_for(REST_RE, start=at).group(1))
            names = re.findall(r"^Q\((.*)\)$", sim.wait_for(QSTRS_RE, start=at).group(1), re.M)
            sim.send("_hs_watch(True)\r")
            wholefw.ws_turn(sim, llm)
            wholefw.tg_long_turn(tg, llm)
            wholefw.tg_turn(tg, llm)
            wholefw.device_turn(sim, llm)
            sim.send("_hs_watch(False)\r")
            watched = json.loads(sim.wait_for(WATCHED_RE, start=at).group(1))
    finally:
        for f in (llm, tg, search):
            f.close()
    return rest, names, watched


def name_share(live, tmp):
    """-> (host-only names, the board counterparts' names the board would add): lists."""
    lib = BUILD / "lib"
    tables = {p.relative_to(lib).as_posix(): mpy_names(p) for p in lib.rglob("*.mpy")}
    live_set = set(live)
    loaded = {r for r in tables if "/lib/" + r in live_set}
    host = {r for r in loaded if r.replace("/", ".").startswith(HOST)}
    board = set().union(*(tables[r] for r in loaded - host))
    in_host = set().union(*(tables[r] for r in host))
    sims = script_names(ROOT / "tools" / "simboot.py", ROOT / "tools" / "simsetup.py")
    leaf = lambda r: r.rsplit("/", 1)[-1][:-4]  # noqa: E731
    leaves = ({leaf(r) for r in host} | {"hostlib", "sim"}) - {leaf(r) for r in loaded - host}
    paths = (str(ROOT), str(tmp), "/usr/lib/micropython")
    both = {"mimi.board", "mimi.devices.pins", "mimi.flashmount"}  # the board imports them too
    only = []
    for n in live:
        if n in both or n in board:
            continue
        if n in in_host or "=" in n or n.startswith(paths) or n.startswith(HOST) or \
                n in leaves or (n in sims and not n.startswith("_hs")):
            only.append(n)
    ours = set(tables["mimi/board/esp32.mpy"]) | set(tables["mimi/board/esp32_io.mpy"]) | {
        "esp32", "esp32_io", "mimi.board.esp32", "mimi.board.esp32_io", "machine", "network"}
    only_set = set(only)
    adds = [n for n in ours if n not in live_set or n in only_set]
    return only, adds


def nbytes(names):
    return sum(len(n.encode()) + 1 for n in names)


def tables(n=None):
    t = Table("The host-only share of the whole firmware's heap (32-bit .mpy, tests/wholefw.py with "
              "the body, the four parts wired)", ["what", "B", "note"])
    if not _runs(MP32):
        t.add("none", "-", "no 32-bit MicroPython here")
        return [t]
    with tempfile.TemporaryDirectory() as tmp:
        rest, live, watched = live_run(tmp, MP32)
        # (board/host_vfs.py is not in sys.modules: tools/simboot.py's mount dropped it, and the
        # mounted VFS keeps its classes, hence all of it)
        mods = sorted(set(rest["modules"]) | set(watched) | {"mimi.board.host_vfs"})
        img = Path(tmp) / "fs.img"
        rc, recs, out = run_mp("hostshare.py", mp_args(img, modules=mods + list(COUNTERPARTS),
                                                       simboot=str(ROOT / "tools" / "simboot.py")), mp=MP32)
        if rc:
            raise RuntimeError("bench/mp/hostshare.py: %s" % out[-2000:])
        only, adds = name_share(live, tmp)
    code = {r["module"]: r["bytes"] for r in recs}
    total = 0
    for m in mods + ["tools/simboot.py"]:
        later = m not in rest["modules"] and m not in ("tools/simboot.py", "mimi.board.host_vfs")
        t.add(m, code[m], "loaded during the turns" if later else "kept by the mounted VFS"
              if m == "mimi.board.host_vfs" else "loaded at rest")
        total += code[m]
    data = sum(rest["data"].values())
    t.add("the parts' and the host layer's data", data,
          ", ".join("%s %d" % kv for kv in sorted(rest["data"].items(), key=lambda kv: -kv[1])[:6]))
    t.add("host-only names interned", nbytes(only), "%d names (their text; the qstr pool's "
          "slots are not counted)" % len(only))
    board = sum(code[m] for m in COUNTERPARTS) + nbytes(adds)
    t.add("less the board's own: esp32.py, esp32_io.py and their names", -board,
          " + ".join("%s %d" % (m[11:], code[m]) for m in COUNTERPARTS) + " + %d names %d" % (len(adds), nbytes(adds)))
    share = total + data + nbytes(only) - board
    t.add("host-only share", share, "%.1f KB: HOST_HW_KB %d (tests/wholefw.py)" % (share / 1024, wholefw.HOST_HW_KB))
    t.notes = ("Live heap at rest (parts wired) %d B. Code: bench/mp/hostshare.py's second copies "
               "(code and globals). Data: bench/mp/hostprobe.py, each object by a copy of it. Not "
               "counted (each under 0.6 KB): the Ctrl-C pipe's task, sys.modules and the packages' "
               "room made before the agent thread starts (board/host.py before_threads), a host Pin "
               "or I2C object per driver call (static objects on the board)." % rest["alloc"])
    return [t]


if __name__ == "__main__":
    cli(tables)
