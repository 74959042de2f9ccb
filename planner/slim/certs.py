"""The TLS certificates of a server that authenticates its clients.

kubectl (client-go's kubeconfig loader) sends a kubeconfig's credentials only to an `https` server,
so a server that authorizes by RBAC must speak TLS for kubectl to present its token at all. Each
cluster gets its own CA and a server certificate it signs for `127.0.0.1` and `localhost`
(ECDSA P-256, ten years): `ca.crt` goes into the kubeconfig as `certificate-authority-data`,
`server.crt` and `server.key` (mode 0600, in the owner's 0700 directory) to the server. They are made once per directory (the data
directory, or a running test cluster's work directory) and reused while they are there.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

VALID_FOR = datetime.timedelta(days=3650)


@dataclass(frozen=True)
class Certificates:
    ca: Path
    cert: Path
    key: Path


def ensure_certificates(directory: Path) -> Certificates:
    """The directory's CA and server certificate, made when missing."""
    found = Certificates(directory / "ca.crt", directory / "server.crt", directory / "server.key")
    if not (found.ca.exists() and found.cert.exists() and found.key.exists()):
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        _make(found)
    return found


def _make(paths: Certificates) -> None:
    ca_key, ca = new_ca("planner-embedded-ca")
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    key, server = issue(ca_key, ca, "planner-embedded", names=names, server=True)
    write_pem(paths.ca, ca)
    write_pem(paths.cert, server)
    write_pem(paths.key, key)


def new_ca(common_name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A self-signed CA: its key and certificate."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    ca = (
        _builder(ca_name, ca_name, ca_key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(*_usage(cert_sign=True)), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    return ca_key, ca


def issue(
    ca_key: ec.EllipticCurvePrivateKey,
    ca: x509.Certificate,
    common_name: str,
    *,
    organizations: tuple[str, ...] = (),
    names: list[x509.GeneralName] | None = None,
    server: bool = False,
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A key and a certificate the CA signs: a server's (for `names`) or a client's, whose common name
    and organizations a Kubernetes API server reads as the user and its groups."""
    now = datetime.datetime.now(datetime.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [
            *(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )
    usage = x509.oid.ExtendedKeyUsageOID.SERVER_AUTH if server else x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH
    builder = (
        _builder(subject, ca.subject, key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(*_usage(cert_sign=False)), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return key, builder.sign(ca_key, hashes.SHA256())


def write_pem(path: Path, item: x509.Certificate | ec.EllipticCurvePrivateKey) -> None:
    """A certificate or a private key (PKCS#8, unencrypted) as PEM, mode 0600."""
    pem = serialization.Encoding.PEM
    if isinstance(item, x509.Certificate):
        write_private(path, item.public_bytes(pem))
    else:
        write_private(
            path, item.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        )


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey, now: datetime.datetime
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALID_FOR)
    )


def _usage(*, cert_sign: bool) -> tuple[bool, ...]:
    """KeyUsage's nine flags: digital signature always; certificate and CRL signing for the CA."""
    return (True, False, False, False, False, cert_sign, cert_sign, False, False)


def write_private(path: Path, data: bytes) -> None:
    """Replace `path` with `data`, readable by its owner only from the first byte (a key, a token)."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.unlink(missing_ok=True)
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as stream:
        stream.write(data)
    partial.replace(path)


def tls_context(ca: Path | None) -> ssl.SSLContext | None:
    """A client context that trusts `ca` only (None for a plain-HTTP server)."""
    return _trusting(ca.read_text()) if ca is not None else None


@lru_cache(maxsize=32)
def _trusting(ca_pem: str) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=ca_pem)
