# Device entry point. Its namespace is the REPL's: the console puts the REPL
# commands in it when first used while the firmware runs, and they go in below
# once the firmware stops (Ctrl-C), for the board's own REPL and mpremote.
# A crash while importing or starting (a bad update?) is counted by the boot guard,
# which rolls a trial update back and resets; see mimi.safemode.crashed().
try:
    import mimi.app

    mimi.app.main()
except Exception as e:  # not KeyboardInterrupt/SystemExit: Ctrl-C and restart() pass
    import sys

    sys.print_exception(e)
    try:
        from mimi import safemode
    except Exception:  # the package itself is broken: use the kept previous version's guard
        for m in [m for m in sys.modules if m == "mimi" or m.startswith("mimi.")]:
            del sys.modules[m]
        sys.path.insert(0, "/ota/prev/lib")
        from mimi import safemode
    safemode.crashed()
from mimi.repl import *  # noqa: E402,F401,F403
