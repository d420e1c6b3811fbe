"""The MicroPython test plugin itself: a failing MicroPython test fails the run."""
import subprocess
import sys

from conftest import ROOT, interpreters


def test_failing_micropython_test_fails_pytest(tmp_path):
    mp = ROOT / "tests" / "mp"
    probe = mp / "test_zz_harness_probe.py"
    probe.write_text(
        # the knobs conftest reads from the source reach the micropython process
        "HEAPSIZE = '300k'\nHEAP = {'test_heap_per_test': '128k'}\nFS_BLOCKS = 300\n\n"
        "def heap():\n    import gc\n    return gc.mem_free() + gc.mem_alloc()\n\n"
        "def test_heap_of_the_file():\n    assert 256 * 1024 < heap() <= 300 * 1024, heap()\n\n"
        "def test_heap_per_test():\n    assert heap() <= 128 * 1024, heap()\n\n"
        "def test_fs_blocks():\n    import os\n    assert os.statvfs('/')[2] == 300\n\n"
        "def test_passes():\n    assert 1 + 1 == 2\n\n"
        "def test_fails():\n    assert 1 + 1 == 3, 'arithmetic'\n\n"
        "async def test_async_passes():\n    import asyncio\n    await asyncio.sleep_ms(1)\n\n"
        "def test_skips():\n    import support\n    support.skip('not on this port')\n\n"
        # PARAMS: a one-argument test runs once per key, with that key's fixtures
        "PARAMS = {'one': ('harness_probe',), 'two': ()}\n\n"
        "def test_params(p):\n    import support\n"
        "    assert p in ('one', 'two')\n"
        "    if p == 'one':\n        assert support.fixture('harness_probe') == {'value': 42}\n"
        "    else:\n        assert support.raises(KeyError, support.fixture, 'harness_probe')\n")
    try:
        r = subprocess.run([sys.executable, "-m", "pytest", str(probe), "-p", "no:xdist", "-q",
                            "-p", "no:cacheprovider", "-o", "addopts="],
                           capture_output=True, text=True, cwd=str(ROOT), timeout=120)
    finally:
        probe.unlink()
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    n = len(interpreters())  # every test runs once per interpreter (the 32-bit one when present)
    assert "%d failed, %d passed, %d skipped" % (n, 7 * n, n) in out, out
    assert "AssertionError: arithmetic" in out, out
    if n > 1:
        assert "test_fails[mp32]" in out, out
