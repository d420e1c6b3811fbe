# App and firmware over-the-air updates: bundles served by a loopback HTTP
# server (tests/fakes/otaserver.py), boots simulated with the boot-guard calls.
import os
from support import fixture, raises, read, write, Capture
from mimi import fs, board
from mimi.config import settings as config

FIXTURES = ("ota_server",)
FS_BLOCKS = 512

OLD = {
    "/lib/mimi/fakeapp.py": "VERSION = 'old'\n",
    "/lib/mimi/oldonly.py": "# only in the old version\n",
    "/defaults/config/SOUL.md": "old soul\n",
    "/main.py": "print('old main')\n",
}


def setup():
    for p, text in OLD.items():
        write(p, text)
    config.cfg.load()


def srv():
    return fixture("ota_server")


def keyed():
    config.cfg.set("ota_key", srv()["key"])


def assert_old(staged=False):
    for p, text in OLD.items():
        assert read(p) == text, p
    assert not fs.exists("/lib/mimi/extra")
    assert fs.exists("/ota/new") == staged


def assert_new():
    for p, text in srv()["files"].items():
        assert read(p) == text, p


def test_good_bundle_applied_and_confirmed():
    from mimi import safemode
    from mimi.update import ota

    keyed()
    m = ota.fetch(srv()["base"] + "/good.bundle")
    assert m["version"] == "9.9.9"
    assert_old(staged=True)  # fetching alone changes nothing
    with Capture():
        e = raises(SystemExit, ota.ota_update, srv()["base"] + "/good.bundle")
    assert e.args[0] == 75
    assert_new()
    # the whole old lib/ waits in /ota/prev, the new one replaced it as a whole
    assert read("/ota/prev/lib/mimi/oldonly.py") == OLD["/lib/mimi/oldonly.py"]
    assert not fs.exists("/lib/mimi/oldonly.py")
    with Capture():
        safemode.boot_start(reboot=False)
    assert safemode.trial
    safemode.healthy()  # not before it passed its check
    assert ota._state()["state"] == "trial"
    safemode.checked = True
    safemode.healthy()
    assert ota._state()["state"] == "ok"
    for _ in range(3):  # later crash-boots no longer roll a confirmed version back
        with Capture():
            safemode.boot_start(reboot=False)
    assert_new()


def test_download_keeps_the_watchdog_fed():
    # ota_update() runs on the REPL, holding the loop: the download feeds the watchdog.
    from mimi.update import ota
    from mimi.services import watchdog

    pokes = []
    real = watchdog.poke
    watchdog.poke = lambda: pokes.append(1)
    try:
        keyed()
        ota.fetch(srv()["base"] + "/good.bundle")
        ota.update_firmware(srv()["base"] + "/fw.bin", srv()["fw_sha256"], reboot=False)
    finally:
        watchdog.poke = real
    assert len(pokes) >= len(srv()["files"]) + 3  # every file, every firmware block


def test_redirect_and_chunked_download():
    from mimi.update import ota

    keyed()
    m = ota.fetch(srv()["base"] + "/redirect/good.bundle")
    assert len(m["files"]) == 4
    m = ota.fetch(srv()["base"] + "/chunked/good.bundle")
    assert read("/ota/new/lib/mimi/fakeapp.py") == srv()["files"]["/lib/mimi/fakeapp.py"]


def test_bad_bundles_refused_old_version_intact():
    from mimi.update import ota

    keyed()
    cases = {
        "tampered.bundle": "SHA-256 mismatch",
        "wrongkey.bundle": "bad signature",
        "unsigned.bundle": "not signed",
        "truncated.bundle": "truncated",
        "outside.bundle": "outside the application",
        "missing.bundle": "HTTP 404",
    }
    for name, why in cases.items():
        e = raises(ota.OTAError, ota.fetch, srv()["base"] + "/" + name)
        assert why in str(e), (name, e)
        assert_old()
    with Capture() as c:
        ota.ota_update(srv()["base"] + "/tampered.bundle")  # no restart on refusal
    assert "Error" in c.text and "Nothing changed" in c.text
    assert_old()
    assert read("/lib/mimi/fakeapp.py") == OLD["/lib/mimi/fakeapp.py"]


def test_unsigned_bundle_accepted_without_key():
    from mimi.update import ota

    with Capture():
        m = ota.fetch(srv()["base"] + "/unsigned.bundle")
    assert m["version"] == "9.9.9"


def test_crashing_bundle_rolled_back_after_two_boots():
    from mimi import safemode
    from mimi.update import ota

    keyed()
    ota.install(ota.fetch(srv()["base"] + "/good.bundle"))
    assert_new()
    with Capture() as c:
        safemode.boot_start(reboot=False)  # trial boot 1: crashes before healthy
        safemode.boot_start(reboot=False)  # trial boot 2: crashes again
    assert "boot 2 of 2" in c.text
    assert_new()
    with Capture() as c:
        e = raises(SystemExit, safemode.boot_start)  # boot 3: rolls back, restarts
    assert e.args[0] == 75
    assert "restoring" in c.text
    assert_old()
    assert read("/lib/mimi/oldonly.py") == OLD["/lib/mimi/oldonly.py"]
    assert ota._state() is None
    assert "9.9.9" in read("/ota/last.json")


def test_interrupted_swap_finished_at_boot():
    from mimi.update import ota

    keyed()
    m = ota.fetch(srv()["base"] + "/good.bundle")
    # a power cut after the first directory moved: state says "swap"
    import mimi

    st = {"state": "swap", "version": "9.9.9", "prev": mimi.VERSION, "tops": m["tops"], "created": []}
    fs.makedirs(ota.PREV)
    ota._save_state(st)
    fs.makedirs(ota.PREV + "/lib")
    os.rename("/lib/mimi", ota.PREV + "/lib/mimi")
    assert ota.boot_check(reboot=False) == "swapped"
    assert_new()
    assert ota._state()["state"] == "trial"


def test_manual_rollback():
    from mimi.update import ota

    from mimi import safemode
    from mimi.update import boot

    keyed()
    ota.install(ota.fetch(srv()["base"] + "/good.bundle"))
    with Capture():
        assert ota.boot_check(reboot=False) == "trial"
    safemode.confirm()
    assert ota._state()["state"] == "ok"
    with Capture():
        raises(SystemExit, boot.ota_rollback)
    assert_old()
    e = raises(ota.OTAError, ota.rollback)
    assert "no previous version" in str(e)


def test_firmware_to_next_slot():
    from mimi.update import ota

    P = board.Partition
    keyed()
    digest = ota.update_firmware(srv()["base"] + "/fw.bin", srv()["fw_sha256"], reboot=False)
    assert digest == srv()["fw_sha256"]
    assert P.boot == "ota_1"
    n = srv()["fw_size"]
    slot = P.slots["ota_1"]
    assert slot[0] == 0xE9 and slot[n] == 0xFF
    import hashlib
    import binascii

    assert binascii.hexlify(hashlib.sha256(bytes(slot[:n])).digest()).decode() == srv()["fw_sha256"]
    assert not P.valid
    from mimi import safemode

    safemode.healthy()  # a boot that is not an app update's trial: the slot kept
    assert P.valid


def test_firmware_refused():
    from mimi.update import ota

    P = board.Partition
    keyed()
    e = raises(ota.OTAError, ota.update_firmware, srv()["base"] + "/fw.bin", "00" * 32, False)
    assert "SHA-256 mismatch" in str(e)
    assert P.boot == "ota_0"
    e = raises(ota.OTAError, ota.update_firmware, srv()["base"] + "/notfw.bin", None, False)
    assert "HTTP 404" in str(e)  # with ota_key set, an image needs its .sig
    config.cfg.set("ota_key", "")
    e = raises(ota.OTAError, ota.update_firmware, srv()["base"] + "/notfw.bin", None, False)
    assert "not an ESP32 app image" in str(e)
    P.ota = False
    e = raises(ota.OTAError, ota.update_firmware, srv()["base"] + "/fw.bin", None, False)
    assert "no OTA slots" in str(e)
    assert P.boot == "ota_0"


def test_https_download_verifies_the_certificate():
    from mimi import limits
    from mimi.update import ota

    keyed()
    write(limits.CA_BUNDLE, srv()["other_ca"])
    e = raises(ota.OTAError, ota.fetch, srv()["https_base"] + "/good.bundle")
    assert "cannot connect" in str(e) or "download failed" in str(e), e
    assert_old()
    write(limits.CA_BUNDLE, srv()["other_ca"] + srv()["ca"])  # a bundle of several roots
    m = ota.fetch(srv()["https_base"] + "/good.bundle")
    ota.install(m)
    assert_new()


def test_download_goes_through_the_proxy_setting():
    from mimi.update import ota

    keyed()
    config.cfg.update({"proxy_host": "127.0.0.1", "proxy_port": 1, "proxy_type": "http"})
    e = raises(ota.OTAError, ota.fetch, srv()["base"] + "/good.bundle")
    assert "cannot connect" in str(e) and "127.0.0.1:1" in str(e), e  # the proxy, not the server
    assert_old()


def manifest_for(files, version="7.7.7"):
    import hashlib
    import binascii
    import json

    return json.dumps({"format": 1, "version": version, "files": [
        {"path": p, "size": len(d), "sha256": binascii.hexlify(hashlib.sha256(d).digest()).decode()}
        for p, d in sorted(files.items())]})


def test_packages_beside_the_app_in_lib_stay():
    # mip installs aiorepl and logging into /lib: an update swaps /lib/mimi only.
    from mimi.update import ota

    write("/lib/aiorepl.py", "# the user's\n")
    ota.install(ota.fetch(srv()["base"] + "/good.bundle"))
    assert_new()
    assert read("/lib/aiorepl.py") == "# the user's\n"
    with Capture():
        ota.rollback(reboot=False)
    assert_old()
    assert read("/lib/aiorepl.py") == "# the user's\n"
    e = raises(ota.OTAError, ota._check_path, "/lib/aiorepl.py", {})
    assert "outside the application" in str(e)


def test_deploy_goes_through_staging():
    # tools/deploy.py: begin_deploy(), mpremote copies the changed files and the
    # manifest into /ota/new, finish_deploy() verifies all of it and swaps it in.
    from mimi.update import ota, staging

    with Capture() as c:
        staging.begin_deploy()
    assert "staged: 4 installed files" in c.text
    for p, text in OLD.items():
        assert read(ota.NEW + p) == text
    new = {"/lib/mimi/fakeapp.py": b"VERSION = 'deployed'\n", "/lib/mimi/added.py": b"# added\n",
           "/defaults/config/SOUL.md": b"old soul\n", "/main.py": b"print('old main')\n"}
    for p in ("/lib/mimi/fakeapp.py", "/lib/mimi/added.py"):  # what mpremote sends
        write(ota.NEW + p, new[p].decode())
    write(ota.MANIFEST, manifest_for(new))
    with Capture() as c:
        staging.finish_deploy()
    assert "removed /lib/mimi/oldonly.py" in c.text and "OK: version 7.7.7 installed (4 files)" in c.text
    for p, data in new.items():
        assert read(p) == data.decode(), p
    assert not fs.exists("/lib/mimi/oldonly.py") and not fs.exists(ota.NEW)
    assert read(ota.PREV + "/lib/mimi/oldonly.py") == OLD["/lib/mimi/oldonly.py"]
    assert ota._state()["state"] == "trial"  # a deploy that crashes at boot is rolled back too


def test_deploy_with_a_bad_copy_changes_nothing():
    from mimi.update import ota, staging

    with Capture():
        staging.begin_deploy()
    new = {"/lib/mimi/fakeapp.py": b"VERSION = 'deployed'\n"}
    write(ota.NEW + "/lib/mimi/fakeapp.py", "VERSION = 'deplo")  # the copy was cut short
    write(ota.MANIFEST, manifest_for(new))
    e = raises(ota.OTAError, staging.finish_deploy)
    assert "/lib/mimi/fakeapp.py: 16 bytes staged, the manifest says 21" in str(e), str(e)
    write(ota.NEW + "/lib/mimi/fakeapp.py", "VERSION = 'deployeD'\n")  # right size, wrong bytes
    e = raises(ota.OTAError, staging.finish_deploy)
    assert "SHA-256 mismatch for /lib/mimi/fakeapp.py" in str(e)
    fs.remove(ota.MANIFEST)
    assert "nothing staged" in str(raises(ota.OTAError, staging.finish_deploy))
    assert_old(staged=True)
    # a reset now: the boot guard clears the staging, the old version runs
    assert ota.boot_check(reboot=False) is None
    assert_old(staged=False)
