#!/usr/bin/env python3
"""Build an over-the-air update bundle (CPython host tool).

The bundle holds the same compiled application and default files as the
board's filesystem image (tools/mkimage.py), never /config.json; --sim makes one
for the simulator (tools/sim), with its host-only modules (an update swaps /lib/mimi
whole: a board's bundle would leave the simulator without its board layer):

    b"MIMIOTA1\\n"
    b"<manifest length> <hex HMAC-SHA256 of the manifest, or ->\\n"
    manifest JSON {"format": 1, "version", "files": [{"path", "size", "sha256"}]}
    every file's bytes, in manifest order

The board (lib/mimi/update/ota.py) streams it to flash, checks every SHA-256 and, when
its `ota_key` setting is set, the HMAC with the same key (--key or $MIMI_OTA_KEY).
"""
import argparse
import hashlib
import hmac
import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAGIC = b"MIMIOTA1\n"


def app_version():
    text = (ROOT / "lib" / "mimi" / "__init__.py").read_text()
    m = re.search(r"VERSION\s*=\s*['\"]([^'\"]+)['\"]", text)
    return m.group(1) if m else "0"


def manifest_bytes(files, version):
    entries = [{"path": p, "size": len(d), "sha256": hashlib.sha256(d).hexdigest()}
               for p, d in sorted(files.items())]
    return json.dumps({"format": 1, "version": version, "files": entries},
                      separators=(",", ":")).encode()


def sign(manifest, key):
    return hmac.new(key.encode(), manifest, hashlib.sha256).hexdigest() if key else "-"


def bundle_bytes(files, version, key=None):
    """{device path: bytes} -> (bundle bytes, manifest bytes)."""
    man = manifest_bytes(files, version)
    head = MAGIC + ("%d %s\n" % (len(man), sign(man, key))).encode() + man
    body = b"".join(d for _, d in sorted(files.items()))
    return head + body, man


def app_files(build, sim=False):
    sys.path.insert(0, str(ROOT / "tools"))
    import mkimage

    files = mkimage.image_files(build, sim=sim)
    files.pop("/config.json", None)
    return files


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", help="bundle path (default build/mimiclaw-VERSION.bundle)")
    ap.add_argument("--version", default=None, help="version string (default mimi.VERSION)")
    ap.add_argument("--key", default=os.environ.get("MIMI_OTA_KEY"), help="ota_key to sign with")
    ap.add_argument("--sim", action="store_true", help="a bundle for the simulator (with its host-only modules)")
    a = ap.parse_args(argv)
    build = ROOT / "build"
    version = a.version or app_version()
    data, man = bundle_bytes(app_files(build, a.sim), version, a.key)
    out = Path(a.out or build / ("mimiclaw-%s.bundle" % version))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    out.with_suffix(".manifest.json").write_bytes(man)
    print("%s: %d bytes, version %s, %s" % (out, len(data), version,
                                            "signed" if a.key else "UNSIGNED (no --key)"))


if __name__ == "__main__":
    main()
