# Updates: OTA bundles and firmware (ota.py), the staging folder shared with make deploy
# (staging.py), the boot check with its trial boots and rollback (boot.py).
