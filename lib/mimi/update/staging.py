# The staging folder /ota/new, shared by OTA updates (ota.fetch() streams a bundle
# into it) and `make deploy` (begin_deploy() copies the installed version there,
# mpremote sends the files that differ and the manifest, finish_deploy() installs):
# verify() is the one check before ota.install() swaps anything. Imported only for
# an update or a deploy, not at boot.
import os
from mimi import limits, fs
from mimi.update import ota
from mimi.config.defaults import file_hash
from mimi.services import watchdog

NEW = ota.NEW
MANIFEST = ota.MANIFEST
PREV = ota.PREV


def verify():
    """Check /ota/new against its manifest.json as it is on the flash: every file
    with the manifest's size and SHA-256; files the manifest does not list are
    removed. -> the manifest; OTAError naming the first bad file."""
    try:
        with open(MANIFEST, "rb") as f:
            raw = f.read(limits.OTA_MANIFEST_MAX + 1)
    except OSError:
        raise ota.OTAError("nothing staged: %s is missing" % MANIFEST)
    if len(raw) > limits.OTA_MANIFEST_MAX:
        raise ota.OTAError("manifest too large")
    m = ota._check_manifest(raw)
    listed = {NEW + f["path"]: f for f in m["files"]}
    listed[MANIFEST] = None
    for p in fs.walk_files(NEW):
        if p not in listed:
            os.remove(p)
            print("removed", p[len(NEW):])
    for p, f in listed.items():
        if f is None:
            continue
        if fs.size(p) != f["size"]:
            raise ota.OTAError("%s: %d bytes staged, the manifest says %d" % (f["path"], fs.size(p), f["size"]))
        if file_hash(p) != f["sha256"].lower():
            raise ota.OTAError("SHA-256 mismatch for %s" % f["path"])
        watchdog.poke()  # run from the REPL, this holds the loop
    return m


def begin_deploy():
    """Start a deploy: /ota/new becomes a copy of the installed application, so
    mpremote (which skips files whose SHA-256 already matches) sends only changes."""
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
    m = verify()
    ota.install(m)
    print("OK: version %s installed (%d files); the previous one is kept in %s" % (
        m.get("version"), len(m["files"]), PREV))
