"""Curated root-CA bundle for the firmware (CPython; certifi + cryptography).

MicroPython has no built-in CA store, so the image ships /certs/roots.pem
(limits.CA_BUNDLE) and mimi.net.tls verifies every HTTPS server against it. Every
root costs C heap once parsed (one shared TLS context, mimi/net/tls.py), so the set is
what the default endpoints chain to, no more; a user with another server adds its
root with the `ca_file` setting (a PEM/DER file on the flash, outside /spiffs).

Which endpoint needs which root (the issuing CAs seen on those hosts, 2024-2026; CDNs
rotate between their CAs, hence all of a CDN's roots):

  endpoint                                   issued by (CDN)                 roots
  api.anthropic.com                          Google Trust Services WE1/WR1   GTS Root R4, R1
  api.openai.com                             Google Trust Services (Cloudflare)  GTS Root R4, R1
  openrouter.ai, api.groq.com,               Cloudflare edge: Google Trust   GTS Root R1, R4,
    api.together.xyz, api.mistral.ai           Services, Let's Encrypt,      ISRG Root X1, X2,
                                               SSL.com                       SSL.com RSA, ECC
  generativelanguage.googleapis.com          Google Trust Services WR2       GTS Root R1
  api.telegram.org                           Go Daddy Secure CA - G2         Go Daddy Root G2
  api.tavily.com                             Amazon (AWS certificates)       Amazon Root CA 1, 3
                                                                             (+ Starfield Services
                                                                             G2, their cross-signer)
  api.search.brave.com                       Let's Encrypt / DigiCert        ISRG Root X1, X2,
                                                                             DigiCert G2
  open.feishu.cn, open.larksuite.com         GlobalSign OV / DigiCert        GlobalSign R3, R6,
                                             (GeoTrust, RapidSSL)            DigiCert G2, G3
  api.deepseek.com                           GlobalSign / DigiCert           GlobalSign R3,
                                                                             DigiCert G2
  other hosted OpenAI-compatible APIs        Sectigo (USERTrust)             USERTrust RSA

GTS roots are cross-signed by "GlobalSign Root CA" and some servers still send that
chain; it and "DigiCert Global Root CA" (both retiring) are added only while certifi
still carries them (OPTIONAL). Usage: build(out_path) -> out_path.
"""
import datetime
import os
import sys
from pathlib import Path

REQUIRED = (
    "GTS Root R1", "GTS Root R4",
    "ISRG Root X1", "ISRG Root X2",
    "SSL.com Root Certification Authority RSA", "SSL.com Root Certification Authority ECC",
    "Go Daddy Root Certificate Authority - G2",
    "Amazon Root CA 1", "Amazon Root CA 3", "Starfield Services Root Certificate Authority - G2",
    "GlobalSign Root CA - R3", "GlobalSign Root CA - R6",
    "DigiCert Global Root G2", "DigiCert Global Root G3",
    "USERTrust RSA Certification Authority",
)
OPTIONAL = ("GlobalSign Root CA", "DigiCert Global Root CA")


def names(cert):
    """The subject CN and OU values a root is known by (GlobalSign's CN is just 'GlobalSign')."""
    from cryptography.x509.oid import NameOID

    out = []
    for oid in (NameOID.COMMON_NAME, NameOID.ORGANIZATIONAL_UNIT_NAME):
        out += [a.value for a in cert.subject.get_attributes_for_oid(oid)]
    return out


def select(certs, now=None):
    """[(name, cert)] of the wanted, unexpired roots in `certs`, in REQUIRED order;
    RuntimeError naming any REQUIRED root that is missing."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    found = {}
    for cert in certs:
        if cert.not_valid_after_utc <= now:
            continue
        for n in names(cert):
            if n in REQUIRED or n in OPTIONAL:
                found.setdefault(n, cert)
    missing = [n for n in REQUIRED if n not in found]
    if missing:
        raise RuntimeError("CA bundle: roots missing from certifi (update tools/cabundle.py): %s"
                           % ", ".join(missing))
    out, seen = [], set()
    for n in REQUIRED + OPTIONAL:
        if n in found and id(found[n]) not in seen:
            seen.add(id(found[n]))
            out.append((n, found[n]))
    return out


def build(out_path):
    import warnings

    import certifi
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    with warnings.catch_warnings():  # a few unrelated Mozilla roots have odd serials
        warnings.simplefilter("ignore")
        certs = x509.load_pem_x509_certificates(Path(certifi.where()).read_bytes())
    parts = ["# MimiClaw root CAs, curated from certifi %s by tools/cabundle.py\n"
             % certifi.__version__]
    for name, cert in select(certs):
        parts.append("\n# %s\n" % name)
        parts.append(cert.public_bytes(serialization.Encoding.PEM).decode())
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name("%s.%d.tmp" % (out.name, os.getpid()))  # other builds may read it now
    tmp.write_text("".join(parts))
    os.replace(tmp, out)
    return out


if __name__ == "__main__":
    print(build(sys.argv[1] if len(sys.argv) > 1 else "build/roots.pem"))
