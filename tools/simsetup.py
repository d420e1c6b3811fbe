# The host simulator's boot and stop steps (MicroPython side), for tools/simboot.py:
# start() mounts the LittleFS image at / as the board's flash, applies the --set values
# and the tests' shorter limits, runs /boot.py and returns /main.py compiled; repl()
# is the board's own REPL once the firmware stopped. simboot.py imports this module for
# each step and drops it again: a script's own code stays in the heap while it runs
# (main.py runs inside it, for good), and this code is not the board's.
import os
import sys
import time
import _thread


def _mount(image, done):
    try:
        from mimi import board

        board.mount_image(image)
        done.append(None)
    except BaseException as e:  # noqa: B902 - raised again below, in the main thread
        done.append(e)


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


def start(argv):
    """argv: IMAGE BUILD_LIB [KEY=VALUE ...] -> /main.py compiled, ready to run."""
    image, build_lib = argv[1], argv[2]
    # The mount runs in a thread of its own: its modules (the build's copy) become garbage
    # below, but a word left on the stack that imported them would keep them all alive for
    # good (the conservative GC cannot tell; 10 KB of heap in some builds), and a thread's
    # stack is gone when it ends.
    sys.path[:] = [".frozen", build_lib]  # a frozen build mounts with its own code, as the board
    done = []
    _thread.start_new_thread(_mount, (image, done))
    while not done:
        time.sleep_ms(1)
    if done[0] is not None:
        raise done[0]
    # The image's board layer (and a kept previous version's, main.py's fallback) finds
    # the mounted image here: host_path(), the RTC memory file next to it.
    os.putenv("MIMI_SIM_IMAGE", image)
    for m in [m for m in sys.modules if m == "mimi" or m.startswith("mimi.")]:
        del sys.modules[m]
    sys.path[:] = ["", ".frozen", "/lib"]
    if os.getenv("MIMI_SIM_PARTS"):
        exec("from mimi.devices.sim.parts import boot; boot()")
    if os.getenv("MIMI_SIM_LIMITS"):
        shorten_limits(os.getenv("MIMI_SIM_LIMITS"))
    apply_sets(argv[3:])
    with open("/boot.py") as f:
        exec(f.read(), {"__name__": "boot"})
    # Compiled first, its text and file object dropped before it runs, as on the board:
    # the REPL namespace kept the closed file (`f`, 0.7 KB with its LittleFS cache) for
    # the whole run, and exec() main.py's text.
    with open("/main.py") as f:
        return compile(f.read(), "main.py", "exec")


def repl(ns):
    """Stopped from the console (Ctrl-D), or main.py's boot guard gave up on an app that
    does not import (safe mode): the board would now show MicroPython's REPL, here on
    ns (the REPL namespace main.py ran in)."""
    try:
        import mimi.app

        stopped = mimi.app._stop.is_set()
    except Exception:  # noqa: B902
        stopped = True
    from mimi import board

    ns["board"] = board
    if not (board.CONSOLE and stopped):
        return
    # The board's own REPL, emulated with the firmware's console (the unix port has no
    # REPL on a pipe). Ctrl-D on an empty line soft-resets, which on the board runs
    # main.py again; here it boots the simulator again.
    try:
        from mimi.console import serial as console
    except ImportError:  # a version from before lib/mimi/console/
        from mimi import console

    con = console.Console(ns, prompt=b">>> ",
                          greeting=b"MicroPython REPL, firmware stopped: restart() or Ctrl-D boots it again\r\n")
    con.write(b"\r\n" + con.greeting + con.prompt)
    # tools/sim's Ctrl-C comes on a pipe (board/host.py), or as SIGINT where it did not start us
    line = getattr(board, "ctrl_c_line", lambda: None)()
    if line:
        import select

        wait = select.poll()
        wait.register(sys.stdin, select.POLLIN)
        wait.register(line, select.POLLIN)
    while True:
        try:
            if line and [1 for s, _ev in wait.poll() if s is line]:
                break  # the simulator is being stopped
            ch = sys.stdin.read(1)
        except KeyboardInterrupt:  # the simulator is being stopped
            break
        if not ch:
            break
        for c in ch.encode() if isinstance(ch, str) else ch:
            if con.feed(c) == console.STOP:
                board.reset()
