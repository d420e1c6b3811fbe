# Tool modules register themselves in mimi.tools.registry.registry when imported.
from mimi import log

MODULES = ("clock", "files", "cron", "gpio", "search")


def load_all():
    """Import every tool module; a missing one is skipped, a broken one is logged."""
    from mimi.tools.registry import registry

    for name in MODULES:
        full = "mimi.tools." + name
        try:
            __import__(full)
        except ImportError as e:
            if name in str(e):
                log.warning("tools", "tool module %s not available", name)
            else:
                log.exception("tools", "loading " + full, e)
        except Exception as e:
            log.exception("tools", "loading " + full, e)
    return registry
