"""A real OCI registry for the chart tests, beside the Git servers of tests/gitservers.py: Debian's
`docker-registry` (the CNCF distribution registry, 2.8) on a free loopback port, its storage in the
test's directory, optionally behind htpasswd basic auth (bcrypt lines made by apache2-utils'
`htpasswd`); and a push of a chart archive as `helm push` makes it, through the OCI distribution API:
a blob upload each of the config and the chart, then the manifest under the version's tag.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import http.server
import json
import secrets
import shutil
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID

from tests.gitservers import free_port, started_server, stopped_server

DOCKER_REGISTRY = Path(shutil.which("docker-registry") or "/usr/bin/docker-registry")
HELM_CONFIG = "application/vnd.cncf.helm.config.v1+json"
HELM_CHART = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"


@dataclass
class Registry:
    """A running registry at `host` (`127.0.0.1:PORT`), pushed to as `user` when it has one; `log` holds
    its access log."""

    host: str
    log: Path
    user: tuple[str, str] | None = None
    tokens: TokenService | None = None

    @property
    def port(self) -> int:
        return int(self.host.rsplit(":", 1)[1])

    def reference(self, repository: str) -> str:
        return f"oci://{self.host}/{repository}"

    def push_chart(self, repository: str, version: str, archive: bytes) -> str:
        """`archive` (a chart's .tgz) pushed as `repository:version`, as `helm push` does; the manifest's
        digest (`sha256:…`)."""
        name = repository.rsplit("/", 1)[-1]
        config = json.dumps({"apiVersion": "v2", "name": name, "version": version}).encode()
        manifest = json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": OCI_MANIFEST,
                "config": self._blob(repository, config, HELM_CONFIG),
                "layers": [self._blob(repository, archive, HELM_CHART)],
                "annotations": {
                    "org.opencontainers.image.title": name,
                    "org.opencontainers.image.version": version,
                },
            }
        ).encode()
        self._request(repository, "PUT", f"/v2/{repository}/manifests/{version}", manifest, OCI_MANIFEST)
        return f"sha256:{hashlib.sha256(manifest).hexdigest()}"

    def _blob(self, repository: str, data: bytes, media_type: str) -> dict[str, object]:
        digest = f"sha256:{hashlib.sha256(data).hexdigest()}"
        started = self._request(
            repository, "POST", f"/v2/{repository}/blobs/uploads/", b"", "application/octet-stream"
        )
        location = urllib.parse.urljoin(f"http://{self.host}/", started["Location"])
        separator = "&" if "?" in location else "?"
        self._request(
            repository, "PUT", f"{location}{separator}digest={digest}", data, "application/octet-stream"
        )
        return {"mediaType": media_type, "digest": digest, "size": len(data)}

    def _request(
        self, repository: str, method: str, path: str, body: bytes, content_type: str
    ) -> dict[str, str]:
        """One request about `repository` to the registry (as its user); the response's headers."""
        url = path if path.startswith("http") else f"http://{self.host}{path}"
        request = urllib.request.Request(
            url, data=body, method=method, headers={"Content-Type": content_type}
        )
        if self.tokens is not None:
            request.add_header("Authorization", f"Bearer {self.tokens.token(repository, ['pull', 'push'])}")
        elif self.user is not None:
            token = base64.b64encode(":".join(self.user).encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status in (201, 202), (method, url, response.status)
            return dict(response.headers)


@contextmanager
def oci_registry(
    root: Path,
    *,
    user: tuple[str, str] | None = None,
    tokens: TokenService | None = None,
    realm: str | None = None,
) -> Iterator[Registry]:
    """docker-registry serving `root/data` on 127.0.0.1:PORT (plain HTTP, as a loopback registry is
    spoken to), behind basic auth for `user` (name, password) when given, or trusting the bearer tokens
    of `tokens` (its challenge names `realm`, by default that service's own URL)."""
    if not DOCKER_REGISTRY.exists():
        pytest.skip("docker-registry missing (.ci/run installs Debian's docker-registry package)")
    root.mkdir(parents=True, exist_ok=True)
    port, log = free_port(), root / "registry.log"
    auth = ""
    if user is not None:
        htpasswd = shutil.which("htpasswd")
        if htpasswd is None:
            pytest.skip("htpasswd missing (.ci/run installs apache2-utils)")
        made = subprocess.run([htpasswd, "-nbB", *user], capture_output=True, text=True, check=True)
        (root / "htpasswd").write_text(made.stdout)
        auth = f"auth:\n  htpasswd:\n    realm: charts\n    path: {root / 'htpasswd'}\n"
    if tokens is not None:
        auth = (
            f"auth:\n  token:\n    realm: {realm or tokens.realm}\n    service: {tokens.service}\n"
            f"    issuer: {tokens.issuer}\n    rootcertbundle: {tokens.certificate}\n"
        )
    (root / "config.yml").write_text(
        "version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: false\n"
        f"storage:\n  filesystem:\n    rootdirectory: {root / 'data'}\n"
        f"http:\n  addr: 127.0.0.1:{port}\n{auth}"
    )
    process = started_server([str(DOCKER_REGISTRY), "serve", str(root / "config.yml")], log, port, root)
    try:
        yield Registry(f"127.0.0.1:{port}", log, user, tokens)
    finally:
        stopped_server(process)


@dataclass
class TokenService:
    """A Docker-style token service (the `realm` of a registry's Bearer challenge) on a free loopback
    port: it grants pull of any repository under `public/` to anyone, and pull and push of any other to
    `user` alone (basic auth), as JWTs signed by a key whose self-signed certificate the registry
    trusts (`certificate`). `authorizations` holds the Authorization header of every request (None:
    none was sent)."""

    realm: str
    certificate: Path
    user: tuple[str, str]
    key: rsa.RSAPrivateKey
    authorizations: list[str | None]
    service: str = "planner-tests-registry"
    issuer: str = "planner-tests-token-service"

    @property
    def port(self) -> int:
        return int(urllib.parse.urlsplit(self.realm).port or 0)

    def token(self, repository: str, actions: list[str]) -> str:
        """A JWT granting `actions` on `repository`, as the registry verifies it (x5c: the cert)."""
        now = int(time.time())
        claims = {
            "iss": self.issuer, "sub": self.user[0], "aud": self.service, "exp": now + 600, "nbf": now - 60,
            "iat": now, "jti": secrets.token_hex(8),
            "access": [{"type": "repository", "name": repository, "actions": actions}],
        }  # fmt: skip
        der = x509.load_pem_x509_certificate(self.certificate.read_bytes()).public_bytes(
            serialization.Encoding.DER
        )
        header = {"typ": "JWT", "alg": "RS256", "x5c": [base64.b64encode(der).decode()]}
        signing_input = f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
        signature = self.key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{signing_input}.{_b64url(signature)}"

    def answer(self, query: dict[str, list[str]], authorization: str | None) -> tuple[int, dict[str, str]]:
        self.authorizations.append(authorization)
        scope = (query.get("scope") or [""])[0].split(":")
        repository = scope[1] if len(scope) == 3 else ""
        if repository.startswith("public/"):
            return 200, {"token": self.token(repository, ["pull"])}
        basic = "Basic " + base64.b64encode(":".join(self.user).encode()).decode()
        if authorization != basic:
            return 401, {"details": "authentication required"}
        return 200, {"token": self.token(repository, ["pull", "push"])}


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _self_signed(key: rsa.RSAPrivateKey, name: str) -> bytes:
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return certificate.public_bytes(serialization.Encoding.PEM)


@contextmanager
def token_service(root: Path, *, user: tuple[str, str]) -> Iterator[TokenService]:
    """A `TokenService` serving `/token` on 127.0.0.1:PORT from a thread of this process."""
    root.mkdir(parents=True, exist_ok=True)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    (root / "token.crt").write_bytes(_self_signed(key, "planner-tests-token-service"))
    service: list[TokenService] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urllib.parse.urlsplit(self.path)
            status, body = service[0].answer(
                urllib.parse.parse_qs(parts.query), self.headers.get("Authorization")
            )
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    service.append(
        TokenService(f"http://127.0.0.1:{server.server_port}/token", root / "token.crt", user, key, [])
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield service[0]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@contextmanager
def same_origin_proxy(root: Path, routes: dict[str, int], port: int) -> Iterator[str]:
    """lighttpd on 127.0.0.1:`port` passing each URL prefix of `routes` to its loopback port (a
    registry's `/v2/` and its token service's `/token` behind one origin, as GHCR serves them); its
    URL."""
    lighttpd = shutil.which("lighttpd") or "/usr/sbin/lighttpd"
    if not Path(lighttpd).exists():
        pytest.skip("lighttpd missing (.ci/run installs it)")
    root.mkdir(parents=True, exist_ok=True)
    proxied = "\n".join(
        f'$HTTP["url"] =~ "^{prefix}" {{ proxy.server = ("" => (("host" => "127.0.0.1", "port" => {to}))) }}'
        for prefix, to in routes.items()
    )
    (root / "lighttpd.conf").write_text(
        f'server.modules = ("mod_proxy")\nserver.document-root = "{root}"\nserver.bind = "127.0.0.1"\n'
        f'server.port = {port}\nserver.errorlog = "{root / "error.log"}"\n{proxied}\n'
    )
    process = started_server(
        [lighttpd, "-D", "-f", str(root / "lighttpd.conf")], root / "out.log", port, root
    )
    try:
        yield f"127.0.0.1:{port}"
    finally:
        stopped_server(process)
