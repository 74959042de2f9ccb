"""Charts in an OCI registry (`chart: oci://HOST[:PORT]/PATH/NAME`, a pinned `version`), read through
the OCI distribution API as `helm pull` reads them: the manifest of tag `version` (`+` written `_`, as
Helm tags it), then its chart layer (`application/vnd.cncf.helm.chart.content.v1.tar+gzip`), the
chart's `.tgz`.

The manifest's digest is what the tag means: it is recorded per (reference, version) in the chart
cache's digest record (`chart_repository.remember_digest`), and a later load finding another one under
the same tag is refused, as a changed archive under an HTTP repository's version is. The archive is the
layer, cached by the layer's digest and checked against it (`chart_repository.cached_archive`): the
same cache, the same files, whichever way a chart came.

A registry is spoken to over HTTPS, except on a loopback host (`localhost`, 127.0.0.0/8, `::1`), which
gets plain HTTP, as Docker treats loopback registries as insecure by default. Authentication answers
the registry's `WWW-Authenticate` challenge: `Basic` gets the entry's `credentials`; `Bearer` (the
token flow of Docker Hub, GHCR, Harbor…) asks the challenge's `realm` for a pull token of the
repository, with the credentials as basic auth only when that realm is on the registry's own origin
(otherwise anonymously: credentials go to the registry's own scheme, host and port and nowhere else),
and the token then goes with each request to the registry. All of it as unredirected headers, so a
blob the registry redirects to a storage host is fetched without them.

helm-python-sdk has Helm's registry client, but its `pull` ignores a username and password (0.2.2: only
`login`, which writes them into a credentials file, authenticates) and its `resolve` gives the
manifest's digest, not the layer's: docs/architecture.md ("Helm in a plan") says more.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
import urllib.error
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.plan.chart_repository import (
    MAX_CHART_BYTES,
    Credentials,
    cached_archive,
    http_get,
    refused_hint,
    remember_digest,
    same_origin,
)

OCI = "oci://"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
HELM_CONFIG = "application/vnd.cncf.helm.config.v1+json"
CHART_LAYERS = frozenset({"application/vnd.cncf.helm.chart.content.v1.tar+gzip", "application/tar+gzip"})
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
MAX_TOKEN_BYTES = 1024 * 1024
_REPOSITORY = re.compile(
    r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$"
)
_CHALLENGE_PARAMETER = re.compile(r'(\w+)="([^"]*)"')
_DIGEST = re.compile(r"^sha256:([0-9a-f]{64})$")


@dataclass(frozen=True)
class _Problem:
    message: str


@dataclass(frozen=True)
class Reference:
    """Where an `oci://` chart lives: the registry's base URL (`https://ghcr.io`) and the repository in
    it (`org/charts/web`)."""

    registry: str
    repository: str

    def manifest(self, tag: str) -> str:
        return f"{self.registry}/v2/{self.repository}/manifests/{urllib.parse.quote(tag)}"

    def blob(self, digest: str) -> str:
        return f"{self.registry}/v2/{self.repository}/blobs/{digest}"


def is_oci(chart: str) -> bool:
    return chart.startswith(OCI)


def parse_reference(chart: str) -> Reference | str:
    """The registry and repository of `oci://HOST[:PORT]/PATH/NAME`, or why it is not one."""
    parts = urllib.parse.urlsplit(chart)
    if parts.username is not None or parts.password is not None:
        return "an oci:// reference must not hold credentials (user:password@): give them in `credentials`"
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        return f"{chart!r} has a port that is not a number"
    repository = parts.path.strip("/")
    if not host or parts.query or parts.fragment:
        return f"{chart!r} is no oci://HOST/PATH/NAME reference"
    if ":" in repository or "@" in repository:
        return f"{chart!r} names a tag or digest: the chart's version goes in `version`"
    if not _REPOSITORY.match(repository):
        return f"{chart!r}: {repository!r} is no repository name (lowercase path components)"
    scheme = "http" if _loopback(host) else "https"
    netloc = f"[{host}]" if ":" in host else host
    return Reference(f"{scheme}://{netloc}{f':{port}' if port else ''}", repository)


def fetch_oci_chart(chart: str, version: str, credentials: Credentials | None = None) -> Path | str:
    """The cached archive of the chart `chart` (`oci://…`) at `version`, or why it cannot be had."""
    reference = parse_reference(chart)
    if isinstance(reference, str):
        return reference
    session = _Session(reference, credentials)
    tag = version.replace("+", "_")  # OCI tags have no `+`: Helm pushes `1.0.0+build` as `1.0.0_build`
    manifest = session.get(reference.manifest(tag), MAX_MANIFEST_BYTES, accept=OCI_MANIFEST)
    if isinstance(manifest, str):
        return f"cannot read the manifest of {chart} {version}: {manifest}"
    layer = _chart_layer(manifest, chart, version)
    if isinstance(layer, _Problem):
        return layer.message
    problem = remember_digest(f"{chart.rstrip('/')}@{version}", hashlib.sha256(manifest).hexdigest())
    if problem is not None:
        return problem
    location = reference.blob(f"sha256:{layer}")
    return cached_archive(
        layer,
        lambda: session.get(location, MAX_CHART_BYTES),
        f"{chart} {version}",
        location,
        "its manifest gives",
    )


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _chart_layer(manifest: bytes, chart: str, version: str) -> str | _Problem:
    """The sha256 (hex) of the manifest's chart layer, or why it has none."""
    try:
        data: Any = json.loads(manifest)
    except ValueError:
        return _Problem(f"the manifest of {chart} {version} is not JSON")
    config = data.get("config") if isinstance(data, dict) else None
    config_type = config.get("mediaType") if isinstance(config, dict) else None
    if config_type != HELM_CONFIG:
        return _Problem(
            f"{chart} {version} is not a Helm chart (its manifest's config is {config_type!r}, not {HELM_CONFIG})"
        )
    layers = data.get("layers")
    found = [
        layer.get("digest")
        for layer in (layers if isinstance(layers, list) else [])
        if isinstance(layer, dict) and layer.get("mediaType") in CHART_LAYERS
    ]
    digest = _DIGEST.match(str(found[0])) if len(found) == 1 else None
    if digest is None:
        return _Problem(
            f"the manifest of {chart} {version} has no single chart layer with a sha256 digest: refused"
        )
    return digest.group(1)


class _Session:
    """Requests to one registry repository, answering its authentication challenge once."""

    def __init__(self, reference: Reference, credentials: Credentials | None) -> None:
        self.reference = reference
        self.credentials = credentials
        self.authorization: str | None = None
        self.note = ""

    def get(self, url: str, limit: int, *, accept: str | None = None) -> bytes | str:
        got = http_get(url, limit, authorization=self.authorization, accept=accept)
        if isinstance(got, urllib.error.HTTPError) and got.code == 401 and self.authorization is None:
            answer = self._answer(got.headers.get("WWW-Authenticate", ""))
            if isinstance(answer, _Problem):
                return answer.message
            self.authorization = answer
            if answer is not None:
                got = http_get(url, limit, authorization=answer, accept=accept)
        if isinstance(got, urllib.error.HTTPError):
            return f"{url}: HTTP {got.code} {got.reason}{self._hint(got.code)}"
        return got

    def _hint(self, code: int) -> str:
        if code == 404:
            return " (no such repository or tag in the registry)"
        return self.note or refused_hint(code, self.credentials, "registry")

    def _answer(self, challenge: str) -> str | _Problem | None:
        """The Authorization header that answers `challenge` (None: nothing to answer with), or why the
        token service would not give one."""
        scheme = challenge.split(" ", 1)[0].lower()
        if scheme == "basic":
            return self.credentials.header() if self.credentials is not None else None
        if scheme != "bearer":
            return None
        parameters = dict(_CHALLENGE_PARAMETER.findall(challenge))
        realm = parameters.get("realm", "")
        query = {"scope": parameters.get("scope") or f"repository:{self.reference.repository}:pull"}
        if parameters.get("service"):
            query["service"] = parameters["service"]
        send = self.credentials is not None and same_origin(self.reference.registry, realm)
        if self.credentials is not None and not send:
            self.note = (
                f" (its token service {realm} is not on the registry's own origin, so the credentials "
                "were not sent to it)"
            )
        authorization = self.credentials.header() if send and self.credentials is not None else None
        separator = "&" if "?" in realm else "?"
        got = http_get(
            f"{realm}{separator}{urllib.parse.urlencode(query)}", MAX_TOKEN_BYTES, authorization=authorization
        )
        if isinstance(got, urllib.error.HTTPError):
            return _Problem(f"{realm}: HTTP {got.code} {got.reason}{self._hint(got.code)}")
        if isinstance(got, str):
            return _Problem(got)
        try:
            answer: Any = json.loads(got)
        except ValueError:
            answer = None
        token = (answer.get("token") or answer.get("access_token")) if isinstance(answer, dict) else None
        if not isinstance(token, str) or not token:
            return _Problem(f"{realm}: the token service answered no token")
        return f"Bearer {token}"
