"""Curated root-CA bundle for the firmware (CPython; certifi + cryptography).

MicroPython has no built-in CA store, so the image ships /certs/roots.pem
(limits.CA_BUNDLE) and mimi.net.http verifies every HTTPS server against it.
The whole Mozilla store (~120 roots, ~200 KB) would cost flash and, once parsed
by mbedTLS, RAM on every TLS context; these are the roots the services the
firmware talks to chain to (checked 2025-2026; CDNs rotate CAs, hence a margin):

  Let's Encrypt            ISRG Root X1, X2   (openrouter.ai and other Cloudflare-fronted hosts)
  Google Trust Services    GTS Root R1, R3, R4 (+ R2 when certifi still has it)
                           (api.anthropic.com, api.openai.com, Cloudflare, Google)
  GlobalSign               Root CA - R3, R6, ECC R4, R5, Root R46, E46 (GTS cross-signs,
                           api.deepseek.com and other Asian-hosted OpenAI-compatible APIs)
  DigiCert                 Global Root G2, G3, TLS RSA4096 G5, TLS ECC P384 G5
                           (api.search.brave.com, many API hosts)
  Amazon                   Amazon Root CA 1-4, Starfield Services Root G2 (api.tavily.com, AWS)
  GoDaddy / Starfield      Go Daddy Root G2, Starfield Root G2 (api.telegram.org)
  Sectigo / USERTrust      USERTrust RSA + ECC, Sectigo Public Server Authentication R46, E46
  SSL.com                  RSA, ECC, TLS RSA/ECC 2022 (Cloudflare's other issuer)
  Microsoft                RSA + ECC Root 2017 (Azure-hosted OpenAI-compatible endpoints)

OPTIONAL roots (GlobalSign Root CA R1, DigiCert Global Root CA, Baltimore) are
added only while certifi still carries them. Usage: build(out_path) -> out_path.
"""
import datetime
import os
import sys
from pathlib import Path

REQUIRED = (
    "ISRG Root X1", "ISRG Root X2",
    "GTS Root R1", "GTS Root R3", "GTS Root R4",
    "GlobalSign Root CA - R3", "GlobalSign Root CA - R6", "GlobalSign ECC Root CA - R4",
    "GlobalSign ECC Root CA - R5", "GlobalSign Root R46", "GlobalSign Root E46",
    "DigiCert Global Root G2", "DigiCert Global Root G3",
    "DigiCert TLS RSA4096 Root G5", "DigiCert TLS ECC P384 Root G5",
    "Amazon Root CA 1", "Amazon Root CA 2", "Amazon Root CA 3", "Amazon Root CA 4",
    "Starfield Services Root Certificate Authority - G2",
    "Go Daddy Root Certificate Authority - G2", "Starfield Root Certificate Authority - G2",
    "USERTrust RSA Certification Authority", "USERTrust ECC Certification Authority",
    "Sectigo Public Server Authentication Root R46", "Sectigo Public Server Authentication Root E46",
    "SSL.com Root Certification Authority RSA", "SSL.com Root Certification Authority ECC",
    "SSL.com TLS RSA Root CA 2022", "SSL.com TLS ECC Root CA 2022",
    "Microsoft RSA Root Certificate Authority 2017", "Microsoft ECC Root Certificate Authority 2017",
)
OPTIONAL = ("GTS Root R2", "GlobalSign Root CA", "DigiCert Global Root CA",
            "Baltimore CyberTrust Root")


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
