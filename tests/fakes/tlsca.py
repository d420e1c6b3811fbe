"""Throw-away certificates for loopback TLS tests (CPython, `cryptography`).

make(dirpath) writes, and returns as a dict of str paths:
  ca          test root CA (PEM)            ca_der   the same root, DER
  cert, key   server cert for localhost + 127.0.0.1, signed by the test CA
  other_ca    an unrelated root CA (PEM) that signed nothing the servers use
  wrong_cert, wrong_key   cert for wrong.example (signed by the test CA)
EC P-256 keys: quick to make and spoken by MicroPython's mbedTLS.
"""
import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _name(cn):
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "MimiClaw tests"),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _builder(subject, issuer, pub):
    now = datetime.datetime.now(datetime.timezone.utc)
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
            .public_key(pub).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30)))


def make_ca(cn):
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (_builder(_name(cn), _name(cn), key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                           critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return cert, key


def make_leaf(ca_cert, ca_key, hostnames, ips=()):
    key = ec.generate_private_key(ec.SECP256R1())
    san = [x509.DNSName(h) for h in hostnames] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    cert = (_builder(_name(hostnames[0]), ca_cert.subject, key.public_key())
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName(san), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    return cert, key


def _pem(cert):
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def make(dirpath):
    d = Path(dirpath)
    d.mkdir(parents=True, exist_ok=True)
    ca, ca_key = make_ca("MimiClaw Test Root CA")
    other, _ = make_ca("Unrelated Test Root CA")
    cert, key = make_leaf(ca, ca_key, ["localhost"], ["127.0.0.1"])
    wrong, wrong_key = make_leaf(ca, ca_key, ["wrong.example"])
    files = {
        "ca": _pem(ca),
        "ca_der": ca.public_bytes(serialization.Encoding.DER),
        "cert": _pem(cert),
        "key": _key_pem(key),
        "other_ca": _pem(other),
        "wrong_cert": _pem(wrong),
        "wrong_key": _key_pem(wrong_key),
    }
    out = {}
    for name, data in files.items():
        p = d / (name + (".der" if name.endswith("_der") else ".pem"))
        p.write_bytes(data)
        out[name] = str(p)
    return out
