# MicroPython side of the host simulator: mount the LittleFS image at / as the
# board's flash, then run the firmware from the image only, as the board does:
# /boot.py, /main.py and the package from /lib (so an OTA update installed there
# is what the next boot runs, and a broken one is rolled back by the firmware).
#   micropython tools/simboot.py IMAGE BUILD_LIB [KEY=VALUE ...]
# BUILD_LIB (the compiled tree tools/sim copies into the image) serves only the
# mount itself; its modules are dropped before anything else is imported.
# MIMI_SIM_PARTS (tools/sim --part, one spec a line) wires simulated parts to the
# board before it boots (mimi/devices/sim/parts.py; sim_set/sim_get on the console).
# MIMI_SIM_LIMITS (tests) shortens waits of lib/mimi/limits.py: shorten_limits() below.
import os
import sys
import time
import _thread

image, build_lib = sys.argv[1], sys.argv[2]
sets = sys.argv[3:]


def _mount(image, done):
    try:
        from mimi import board

        board.mount_image(image)
        done.append(None)
    except BaseException as e:  # noqa: B902 - raised again below, in the main thread
        done.append(e)


# The mount runs in a thread of its own: its modules (the build's copy) become garbage
# below, but a word left on the stack that imported them would keep them all alive for
# good (the conservative GC cannot tell; 10 KB of heap in some builds), and a thread's
# stack is gone when it ends.
sys.path[:] = [build_lib]
_done = []
_thread.start_new_thread(_mount, (image, _done))
while not _done:
    time.sleep_ms(1)
if _done[0] is not None:
    raise _done[0]
# The image's board layer (and a kept previous version's, main.py's fallback) finds
# the mounted image here: host_path(), the RTC memory file next to it.
os.putenv("MIMI_SIM_IMAGE", image)
for _m in [m for m in sys.modules if m == "mimi" or m.startswith("mimi.")]:
    del sys.modules[_m]
sys.path[:] = ["", ".frozen", "/lib"]


def apply_sets(sets):
    """--set values, with the firmware's own validation (from the image's code).
    A code that does not import is main.py's boot guard's business, not ours."""
    try:
        try:
            from mimi.config import settings as config
        except ImportError:  # a version from before lib/mimi/config/ (updated from, or rolled back to)
            from mimi import config
    except Exception as e:  # noqa: B902 - e.g. a broken update: boot anyway
        print("sim: --set skipped, the image's config module does not import:", repr(e))
        return
    try:
        config.cfg.load()
    except Exception as e:  # noqa: B902 - its settings code broken (an update?): main.py's guard's
        print("sim: --set skipped, the image's settings do not load:", repr(e))
        return
    for item in sets:
        key, sep, value = item.partition("=")
        try:
            if not sep:
                raise ValueError("--set wants KEY=VALUE, got %r" % item)
            config.cfg.set(key, value)
        except ValueError as e:
            print("sim: refused --set %s: %s" % (item, e))
            sys.exit(2)
        except OSError as e:  # a full flash: this run has it, /config.json does not
            from mimi import fs

            config.cfg.hold({key: value})
            print("sim: --set %s applies to this run only: not saved (%s)" % (item, fs.why(e)))


def shorten_limits(spec):
    """MIMI_SIM_LIMITS="NAME=N,...": tests' shorter waits (lib/mimi/limits.py), e.g. a boot
    counted as good after 20 s instead of 60 (HEALTHY_AFTER_S=20)."""
    from mimi import limits

    for item in spec.split(","):
        name, _, value = item.partition("=")
        if not hasattr(limits, name):
            raise SystemExit("sim: MIMI_SIM_LIMITS: limits has no %s" % name)
        setattr(limits, name, int(value))


if os.getenv("MIMI_SIM_PARTS"):
    exec("from mimi.devices.sim.parts import boot; boot()")
if os.getenv("MIMI_SIM_LIMITS"):
    shorten_limits(os.getenv("MIMI_SIM_LIMITS"))
apply_sets(sets)
with open("/boot.py") as f:
    exec(f.read(), {"__name__": "boot"})
# main.py runs in this module's globals: they are the REPL namespace, as on the board.
del image, build_lib, sets, apply_sets, shorten_limits, _m, _mount, _done, os, time, _thread
# Compiled first, its text and file object dropped before it runs, as on the board: the
# REPL namespace kept the closed file (`f`, 0.7 KB with its LittleFS cache) for the
# whole run, and exec() main.py's text.
with open("/main.py") as f:
    _main = compile(f.read(), "main.py", "exec")
del f
exec(_main, globals())
# Stopped from the console (Ctrl-D), or main.py's boot guard gave up on an app
# that does not import (safe mode): the board would now show MicroPython's REPL.
try:
    import mimi.app  # noqa: E402

    stopped = mimi.app._stop.is_set()
except Exception:
    stopped = True
from mimi import board  # noqa: E402

if board.CONSOLE and stopped:
    # The board's own REPL, emulated with the firmware's console (the unix port has no
    # REPL on a pipe). Ctrl-D on an empty line soft-resets, which on the board runs
    # main.py again; here it boots the simulator again.
    try:
        from mimi.console import serial as console  # noqa: E402
    except ImportError:  # a version from before lib/mimi/console/
        from mimi import console  # noqa: E402

    _con = console.Console(globals(), prompt=b">>> ",
                           greeting=b"MicroPython REPL, firmware stopped: restart() or Ctrl-D boots it again\r\n")
    _con.write(b"\r\n" + _con.greeting + _con.prompt)
    # tools/sim's Ctrl-C comes on a pipe (board/host.py), or as SIGINT where it did not start us
    _line = getattr(board, "ctrl_c_line", lambda: None)()
    if _line:
        import select

        _wait = select.poll()
        _wait.register(sys.stdin, select.POLLIN)
        _wait.register(_line, select.POLLIN)
    while True:
        try:
            if _line and [1 for _s, _ev in _wait.poll() if _s is _line]:
                break  # the simulator is being stopped
            _ch = sys.stdin.read(1)
        except KeyboardInterrupt:  # the simulator is being stopped
            break
        if not _ch:
            break
        for _c in _ch.encode() if isinstance(_ch, str) else _ch:
            if _con.feed(_c) == console.STOP:
                board.reset()
