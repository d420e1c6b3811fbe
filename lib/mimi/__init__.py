# MimiClaw for MicroPython: a private AI assistant on an ESP32-S3.
import sys

VERSION = "0.1.0"


def drop(name):
    """Forget module mimi.<name> (dotted below the package): code used once or now
    and then (a boot step, a REPL command) gives its heap back once nothing else
    holds its functions. The next import loads it again."""
    full = "mimi." + name
    sys.modules.pop(full, None)
    parent, _, leaf = full.rpartition(".")
    parent = sys.modules.get(parent)
    if parent is not None and leaf in parent.__dict__:
        delattr(parent, leaf)

