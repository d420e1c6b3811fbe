# Device entry point. The REPL commands go into this namespace first, so they are
# there for mpremote both while the firmware runs and after Ctrl-C stops it.
from mimi.repl import *  # noqa: F401,F403
import mimi.app

mimi.app.main()
