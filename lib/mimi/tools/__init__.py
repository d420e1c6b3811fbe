# Tool modules register themselves in mimi.tools.registry.registry when imported.
from mimi import log

MODULES = ("clock", "files", "cron", "gpio", "search")


def load_all():
    """Import every tool module; a broken one is logged and the others still load."""
    from mimi.tools.registry import registry

    for name in MODULES:
        full = "mimi.tools." + name
        try:
            __import__(full)
        except Exception as e:
            log.exception("tools", "loading " + full, e)
    return registry
