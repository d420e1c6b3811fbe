"""Every benchmark driver (bench/) runs through in its short form, as `make bench` runs
it (bench/run_all.py, tables written as markdown): --smoke gives each case one turn or
run and cuts each heap scan to one try, on every interpreter here (64-bit, 32-bit, and
the frozen builds that are current). A driver that a firmware or harness change broke
fails here, not an hour into `make bench`. No figure is checked (docs/benchmarks.md
has them, from the full runs)."""
import ast
import subprocess
import sys

import pytest

from conftest import ROOT

RUN_ALL = ROOT / "bench" / "run_all.py"


def drivers():
    for node in ast.parse(RUN_ALL.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "DRIVERS":
            return ast.literal_eval(node.value)
    raise AssertionError("bench/run_all.py has no DRIVERS")


@pytest.mark.parametrize("driver", drivers())
def test_bench_driver_runs(driver, tmp_path):
    md = tmp_path / "bench.md"
    r = subprocess.run([sys.executable, str(RUN_ALL), "--smoke", "--only", driver,
                        "--markdown", str(md)], capture_output=True, text=True, timeout=900,
                       cwd=str(tmp_path))
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-8000:]
    tables = md.read_text().count("\n### ")
    assert tables >= 1 and "`.venv/bin/python bench/%s.py`" % driver in md.read_text(), out[-4000:]
