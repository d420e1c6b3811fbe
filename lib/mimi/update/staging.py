# `make deploy` through the staging folder /ota/new that OTA updates use too
# (ota.fetch() streams a bundle into it): begin_deploy() copies the installed version
# there, mpremote sends the files that differ and the manifest, finish_deploy()
# checks them with ota.verify(), the one check before ota.install() swaps anything,
# and installs. Imported only for a deploy, not at boot.
from mimi import limits, fs
from mimi.update import ota
from mimi.services import watchdog

NEW = ota.NEW
PREV = ota.PREV


def begin_deploy():
    """Start a deploy: /ota/new becomes a copy of the installed application, so
    mpremote (which skips files whose SHA-256 already matches) sends only changes."""
    import mimi

    if getattr(mimi, "downloading", None) is not None:
        raise ota.OTAError("an update is downloading into %s; wait for it to end (ota_status())" % NEW)
    ota.rmtree(NEW)
    buf = bytearray(limits.OTA_CHUNK)
    n = 0
    for t in limits.OTA_TOPS:
        src = "/" + t
        for p in fs.walk_files(src) if fs.isdir(src) else ([src] if fs.exists(src) else ()):
            fs.makedirs(fs.parent(NEW + p))
            with open(p, "rb") as fi, open(NEW + p, "wb") as fo:
                fs.pump(fi, fo, buf)
            n += 1
            watchdog.poke()
    fs.makedirs(NEW)
    print("staged: %d installed files in %s" % (n, NEW))


def finish_deploy():
    """End a deploy (tools/deploy.py): verify /ota/new and install it, like an OTA
    update (trial boots, rollback). The caller resets the board."""
    m = ota.verify()
    ota.install(m)
    print("OK: version %s installed (%d files); the previous one is kept in %s" % (
        m.get("version"), len(m["files"]), PREV))
