"""pytest plugin: MicroPython tests run inside the real MicroPython unix port.

Every `test_*` function of tests/mp/test_*.py becomes its own pytest item, run as
its own `micropython` process (tests/mp/runner.py) on a fresh LittleFS image
mounted at / by the firmware's board layer. Module-level settings read from the
source (without running it):
  HEAPSIZE = "256k"      heap cap for every test of the file (-X heapsize)
  HEAP = {"test_x": "256k"}  per-test heap caps; a pair ("320k", "224k") is the cap on
                         the 64-bit interpreter, then on the 32-bit ones (8-byte words
                         take a third more heap: one cap is tight on one, loose on the other).
                         A cap sits ~10% over what the test needs: the lengths of the temp
                         and checkout paths move the need by up to ~12 KB, and a test at its
                         cap's edge fails on another machine; say the need beside the cap
                         (tests/heapneed.py measures it; MIMI_HEAP=64BIT[,32BIT] in the
                         environment replaces the caps of the tests run). The test's module
                         is compiled from source in the same heap: a capped test lives in a
                         small module of its own (test_big_turn.py), or its cap measures
                         its neighbours' code
  FS_BLOCKS = 1536       size of the fresh filesystem in 4 KB blocks (default 256)
  TIMEOUT = 60           seconds before the test is killed and failed (times
                         MIMI_TIMEOUT_SCALE from the environment: long runs, `make fuzz`)
  FIXTURES = ("name",)   pytest fixtures whose (JSON) values reach the test as
                         support.fixture("name")
  PARAMS = {"a": ("fixture",), "b": ()}
                         a test function with one argument runs once per key, as
                         test_x[a], called with the key, with that key's fixtures too

Every MicroPython test runs on .venv's 64-bit unix port and, when it is there, also on
the 32-bit MicroPython of ../shared/mp32 (the board's word size: 31-bit small ints,
4-byte objects): items `test_x[mp32]`, `test_x[a-mp32]`. `MP32=path` names another
32-bit interpreter; `MP32=` (empty) runs the 64-bit one only. An interpreter that
cannot start (no 32-bit C library) is left out and the run header says so.

The frozen 32-bit interpreter (the firmware frozen in, as a custom board firmware has
it: tools/mpbuild.py, `make frozen`) runs the tests that ask for it (mp32_frozen_bin());
it is built, or brought up to date with lib/, by the first of them, under a lock.
"""
import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent
MP_DIR = TESTS / "mp"
sys.path.insert(0, str(TESTS))
sys.path.insert(0, str(ROOT / "tools"))

# Not pytest_plugins = ["fixtures"]: pytest registers its own plugin under that name
# and would silently skip ours.
from fixtures import *  # noqa: E402,F401,F403
import interpreters as interpreters_  # noqa: E402  (tools/)


def micropython_bin():
    return interpreters_.micropython()


def mp32_bin():
    """(path of the 32-bit interpreter or None, why not): tools/interpreters.py."""
    return interpreters_.mp32()


def mp32_frozen_bin():
    """(path of the frozen 32-bit interpreter or None, why not): tools/interpreters.py."""
    return interpreters_.frozen(32)


def interpreters():
    """[(item suffix, micropython path)]: the 64-bit port, then the 32-bit one if present."""
    return [("" if label == "64-bit" else "mp32", path) for label, path in interpreters_.all_present()]


def pytest_report_header(config):
    path, why = mp32_bin()
    frozen, not_frozen = interpreters_.frozen(32, build=False)
    return ["MicroPython tests on: 64-bit %s%s" % (
        micropython_bin(), "; 32-bit %s" % path if path else " only (%s)" % why),
        "frozen 32-bit: %s" % (frozen or not_frozen)]


def _literal(tree, name, default):
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            t = node.targets[0]
            if isinstance(t, ast.Name) and t.id == name:
                return ast.literal_eval(node.value)
    return default


_compiled = None


def compiled_lib():
    """The firmware compiled to .mpy (build/lib), as the board runs it: tests import
    the same bytecode, and a capped heap is not spent compiling source."""
    global _compiled
    if _compiled is None:
        import mkimage

        mkimage.compile_tree(ROOT / "build")
        _compiled = str(ROOT / "build" / "lib")
    return _compiled


def pytest_configure(config):
    # Under xdist, compiled here before the workers start: on a fresh clone each would
    # otherwise compile the whole tree at the same time as the other.
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        compiled_lib()


def run_mp(module, func, tmp_path, heapsize=None, blocks=256, timeout=60, fixtures=None,
           param=None, mp=None):
    cmd = [mp or micropython_bin()]
    if heapsize:
        cmd += ["-X", "heapsize=%s" % heapsize]
    cmd += [str(MP_DIR / "runner.py"), str(ROOT), module, func, str(tmp_path), str(blocks)]
    if param is not None:
        cmd.append(param)
    env = dict(os.environ)
    env["MIMI_TEST_FIXTURES"] = json.dumps(fixtures or {})
    env["MIMI_TEST_LIB"] = compiled_lib()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout, env=env,
                           cwd=str(tmp_path))
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        pytest.fail("micropython timed out after %ss\n%s" % (timeout, out), pytrace=False)
    return r


class MpFile(pytest.File):
    def collect(self):
        tree = ast.parse(self.path.read_text(), str(self.path))
        settings = {
            "heapsize": _literal(tree, "HEAPSIZE", None),
            "heap": _literal(tree, "HEAP", {}),
            "blocks": _literal(tree, "FS_BLOCKS", 256),
            "timeout": _literal(tree, "TIMEOUT", 60) * float(os.getenv("MIMI_TIMEOUT_SCALE") or 1),
            "fixtures": _literal(tree, "FIXTURES", ()),
        }
        params = _literal(tree, "PARAMS", {})
        for tag, mp in interpreters():
            for node in tree.body:
                if not (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                        and node.name.startswith("test_")):
                    continue
                if params and len(node.args.args) == 1:
                    for p, extra in params.items():
                        yield pytest.Function.from_parent(
                            self, name="%s[%s]" % (node.name, "-".join(filter(None, (p, tag)))),
                            callobj=_make_runner(self.path.stem, node.name, settings, mp, tag, p, extra))
                else:
                    yield pytest.Function.from_parent(
                        self, name=node.name + ("[%s]" % tag if tag else ""),
                        callobj=_make_runner(self.path.stem, node.name, settings, mp, tag))


def _make_runner(module, func, s, mp, tag, param=None, param_fixtures=()):
    heap = s["heap"].get(func, s["heapsize"])
    if os.getenv("MIMI_HEAP"):  # tests/heapneed.py: "64BIT[,32BIT]"
        h = os.environ["MIMI_HEAP"].split(",")
        heap = (h[0], h[-1])
    if isinstance(heap, tuple):
        heap = heap[1 if tag else 0]

    def run(request, tmp_path):
        names = tuple(s["fixtures"]) + tuple(param_fixtures)
        fixtures = {name: request.getfixturevalue(name) for name in names}
        r = run_mp(module, func, tmp_path, heap, s["blocks"],
                   s["timeout"], fixtures, param, mp)
        out = r.stdout + r.stderr
        if r.returncode == 3 and "SKIP:" in out:
            pytest.skip(out.split("SKIP:", 1)[1].strip())
        if r.returncode != 0:
            pytest.fail("micropython exit %d\n%s" % (r.returncode, out), pytrace=False)

    run.__name__ = func
    return run


# The files that take longest, longest first (seconds of one core in a `make test` on 2
# busy cores). `make test` runs pytest-xdist with --dist loadfile --no-loadscope-reorder:
# whole files, handed out in this order, so that no long file starts last while the other
# core runs out of work (xdist's own order, by number of tests, put the soak last). The
# other files follow, those with more tests first (xdist's order).
LONG_FIRST = (
    "host/test_soak.py",  # 150
    "host/test_bench_smoke.py",  # 150
    "mp/test_telegram.py",  # 135
    "host/test_deploy_uart.py",  # 95
    "host/test_ota_sim.py",  # 55
    "host/test_faults.py",  # 55
    "mp/test_devices_more.py",  # 55
    "mp/test_http.py",  # 50
    "host/test_layout_update.py",  # 45
    "mp/test_ota.py",  # 45
    "host/test_powercut.py",  # 35
    "mp/test_history_store.py",  # 30
)


def pytest_collection_modifyitems(session, config, items):
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    count = {}
    for item in items:
        count[item.path] = count.get(item.path, 0) + 1

    def key(item):
        rel = item.path.relative_to(TESTS).as_posix() if item.path.is_relative_to(TESTS) else ""
        return rank.get(rel, len(rank)), -count[item.path], str(item.path)

    items.sort(key=key)  # stable: a file's own tests keep their order


def _is_mp_test(path):
    return path.parent == MP_DIR and path.name.startswith("test_") and path.suffix == ".py"


def pytest_collect_file(parent, file_path):
    # Files named on the command line go through pytest_pycollect_makemodule instead.
    if _is_mp_test(file_path) and not parent.session.isinitpath(file_path):
        return MpFile.from_parent(parent, path=file_path)


def pytest_pycollect_makemodule(module_path, parent):
    if _is_mp_test(module_path):
        return MpFile.from_parent(parent, path=module_path)
