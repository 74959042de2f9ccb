"""A real OCI registry for the chart tests, beside the Git servers of tests/gitservers.py: Debian's
`docker-registry` (the CNCF distribution registry, 2.8) on a free loopback port, its storage in the
test's directory, optionally behind htpasswd basic auth (bcrypt lines made by apache2-utils'
`htpasswd`); and a push of a chart archive as `helm push` makes it, through the OCI distribution API:
a blob upload each of the config and the chart, then the manifest under the version's tag.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

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
        self._request("PUT", f"/v2/{repository}/manifests/{version}", manifest, OCI_MANIFEST)
        return f"sha256:{hashlib.sha256(manifest).hexdigest()}"

    def _blob(self, repository: str, data: bytes, media_type: str) -> dict[str, object]:
        digest = f"sha256:{hashlib.sha256(data).hexdigest()}"
        started = self._request("POST", f"/v2/{repository}/blobs/uploads/", b"", "application/octet-stream")
        location = urllib.parse.urljoin(f"http://{self.host}/", started["Location"])
        separator = "&" if "?" in location else "?"
        self._request("PUT", f"{location}{separator}digest={digest}", data, "application/octet-stream")
        return {"mediaType": media_type, "digest": digest, "size": len(data)}

    def _request(self, method: str, path: str, body: bytes, content_type: str) -> dict[str, str]:
        """One request to the registry (as its user); the response's headers."""
        url = path if path.startswith("http") else f"http://{self.host}{path}"
        request = urllib.request.Request(
            url, data=body, method=method, headers={"Content-Type": content_type}
        )
        if self.user is not None:
            token = base64.b64encode(":".join(self.user).encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status in (201, 202), (method, url, response.status)
            return dict(response.headers)


@contextmanager
def oci_registry(root: Path, *, user: tuple[str, str] | None = None) -> Iterator[Registry]:
    """docker-registry serving `root/data` on 127.0.0.1:PORT (plain HTTP, as a loopback registry is
    spoken to), behind basic auth for `user` (name, password) when given."""
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
    (root / "config.yml").write_text(
        "version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: false\n"
        f"storage:\n  filesystem:\n    rootdirectory: {root / 'data'}\n"
        f"http:\n  addr: 127.0.0.1:{port}\n{auth}"
    )
    process = started_server([str(DOCKER_REGISTRY), "serve", str(root / "config.yml")], log, port, root)
    try:
        yield Registry(f"127.0.0.1:{port}", log, user)
    finally:
        stopped_server(process)
