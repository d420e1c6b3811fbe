"""tools/cabundle.py: the curated root bundle the image ships at /certs/roots.pem."""
import subprocess
import sys
import warnings
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes

import cabundle

ROOT = Path(__file__).resolve().parents[2]


def test_bundle_holds_every_listed_root(tmp_path):
    out = cabundle.build(tmp_path / "roots.pem")
    data = Path(out).read_bytes()
    assert data and len(data) < 64 * 1024
    with warnings.catch_warnings():  # GoDaddy/Starfield G2 roots have serial 0 (Telegram needs them)
        warnings.simplefilter("ignore")
        certs = x509.load_pem_x509_certificates(data)  # every block parses
    assert len(certs) == data.count(b"-----BEGIN CERTIFICATE-----")
    present = set()
    for cert in certs:
        present.update(cabundle.names(cert))
        assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    missing = [n for n in cabundle.REQUIRED if n not in present]
    assert not missing, missing
    assert len({c.fingerprint(hashes.SHA256()) for c in certs}) == len(certs)


def test_missing_root_is_an_error():
    try:
        cabundle.select([])
    except RuntimeError as e:
        assert "ISRG Root X1" in str(e)
    else:
        raise AssertionError("empty store accepted")


def test_mbedtls_loads_every_root(tmp_path):
    """MicroPython's mbedTLS must parse each root (curves, key sizes) of the bundle."""
    out = cabundle.build(tmp_path / "roots.pem")
    n = Path(out).read_bytes().count(b"-----BEGIN CERTIFICATE-----")
    script = ("import sys, tls\nsys.path[:] = [%r, '.frozen']\nfrom mimi.net import tlsroots as roots\n"
              "ctx = tls.SSLContext(tls.PROTOCOL_TLS_CLIENT)\nn, skipped = roots.load(ctx, %r)\n"
              "print('loaded', n, 'skipped', skipped)\n"
              % (str(ROOT / "lib"), str(out)))
    mp = Path(sys.executable).parent / "micropython"
    r = subprocess.run([str(mp), "-c", script], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "loaded %d skipped []" % n, r.stdout


def test_image_builder_uses_it(tmp_path):
    import mkimage

    path = mkimage.default_ca_bundle(tmp_path)
    assert path and Path(path).read_bytes().startswith(b"# MimiClaw root CAs")
