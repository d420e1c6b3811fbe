# First-boot install of the default files: user edits always survive.
import os
from support import write, read
from mimi import fs
from mimi.config import defaults


def ship(files):
    for rel, text in files.items():
        write("/defaults" + rel, text)


def test_first_boot_installs_everything():
    ship({"/config/SOUL.md": "soul v1", "/skills/weather.md": "w1"})
    r = defaults.install()
    assert sorted(r["installed"]) == ["/config/SOUL.md", "/skills/weather.md"]
    assert read("/spiffs/config/SOUL.md") == "soul v1"
    for d in ("config", "memory", "sessions", "skills"):
        assert fs.isdir("/spiffs/" + d)


def test_second_boot_keeps_user_edits():
    ship({"/config/SOUL.md": "soul v1", "/memory/MEMORY.md": "empty"})
    defaults.install()
    write("/spiffs/memory/MEMORY.md", "User is called Ada")
    r = defaults.install()
    assert r["installed"] == [] and r["upgraded"] == []
    assert read("/spiffs/memory/MEMORY.md") == "User is called Ada"


def test_new_default_upgrades_only_untouched_files():
    ship({"/config/SOUL.md": "soul v1", "/config/USER.md": "user v1"})
    defaults.install()
    write("/spiffs/config/USER.md", "my own profile")
    ship({"/config/SOUL.md": "soul v2", "/config/USER.md": "user v2", "/skills/new.md": "n"})
    r = defaults.install()
    assert r["upgraded"] == ["/config/SOUL.md"]
    assert r["installed"] == ["/skills/new.md"]
    assert r["kept"] == ["/config/USER.md"]
    assert read("/spiffs/config/SOUL.md") == "soul v2"
    assert read("/spiffs/config/USER.md") == "my own profile"
    # And again: the user's file still wins on every later boot.
    defaults.install()
    assert read("/spiffs/config/USER.md") == "my own profile"


def test_deleted_default_stays_deleted():
    ship({"/skills/weather.md": "w"})
    defaults.install()
    os.remove("/spiffs/skills/weather.md")
    defaults.install()
    assert not fs.exists("/spiffs/skills/weather.md")


def test_corrupt_record_does_not_overwrite_user_files():
    ship({"/config/SOUL.md": "soul v1"})
    defaults.install()
    write("/spiffs/config/SOUL.md", "mine")
    write("/spiffs/.defaults.json", "{garbage")
    defaults.install()
    assert read("/spiffs/config/SOUL.md") == "mine"
