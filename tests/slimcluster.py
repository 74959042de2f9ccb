"""Fixtures and helpers for tests that drive the embedded cluster directly (not through planner's CLI).

`tests/e2e/cluster/` and `tests/conformance/` load these fixtures from their conftest: `cluster` starts
an in-memory server in a subprocess (planner.slim.cluster.running_cluster) once per module, so modules
run in parallel under pytest-xdist without sharing state; `namespace` gives each test its own namespace;
`core_v1`/`apps_v1`/… are official-client APIs configured from the server's kubeconfig; `kubectl` runs a
real kubectl (1.27 and 1.33) with a fresh cache dir.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import urllib.error
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from planner.slim.cluster import ClusterHandle, ClusterInfo, running_cluster
from planner.testing.slimadmin import urlopen

_counter = itertools.count()


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster() as handle:
        yield handle


@dataclass(frozen=True)
class Response:
    status: int
    body: Any
    headers: dict[str, str]
    warnings: tuple[str, ...] = ()  # every `Warning` header, in order


def http(
    cluster: ClusterHandle | ClusterInfo,
    method: str,
    path: str,
    body: Any = None,
    *,
    content_type: str = "application/json",
    headers: dict[str, str] | None = None,
    token: str | None = None,
) -> Response:
    """One raw request; JSON bodies in and out (a str body is sent verbatim). It carries the cluster's
    admin token unless `token` names another (`""`: none at all), over TLS trusting the cluster's CA."""
    data = None
    if body is not None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    all_headers = {"Accept": "application/json", **(headers or {})}
    if data is not None:
        all_headers["Content-Type"] = content_type
    caller = cluster if token is None else replace(cluster, token=token or None)
    try:
        with urlopen(caller, path, method=method, data=data, headers=all_headers) as reply:
            raw, status, message = reply.read(), reply.status, reply.headers
    except urllib.error.HTTPError as error:
        raw, status, message = error.read(), error.code, error.headers
    text = raw.decode()
    try:
        parsed: Any = json.loads(text) if text else None
    except ValueError:
        parsed = text
    return Response(status, parsed, dict(message), tuple(message.get_all("Warning") or ()))


@pytest.fixture
def namespace(cluster: ClusterHandle, request: pytest.FixtureRequest) -> str:
    name = f"t{os.getpid()}-{next(_counter)}"
    reply = http(cluster, "POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    assert reply.status == 201, reply.body
    return name


@pytest.fixture(scope="module")
def api_client(cluster: ClusterHandle) -> Iterator[client.ApiClient]:
    api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
    yield api
    api.close()


@pytest.fixture(scope="module")
def core_v1(api_client: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api_client)


@pytest.fixture(scope="module")
def apps_v1(api_client: client.ApiClient) -> client.AppsV1Api:
    return client.AppsV1Api(api_client)


@pytest.fixture(scope="module")
def batch_v1(api_client: client.ApiClient) -> client.BatchV1Api:
    return client.BatchV1Api(api_client)


def kubectl_binary(version: str) -> Path | None:
    found = shutil.which("kubectl")
    if not found:
        return None
    candidate = Path(os.path.realpath(found)).parent / f"kubectl.{version}"
    return candidate if candidate.exists() else None


@dataclass(frozen=True)
class KubectlRunner:
    """Runs one kubectl binary against the module's cluster with its own discovery cache."""

    binary: Path
    kubeconfig: Path
    cache: Path

    def command(self, *args: str) -> list[str]:
        return [str(self.binary), "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.cache), *args]

    def __call__(
        self, *args: str, stdin: str | None = None, timeout: float = 30, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            self.command(*args), input=stdin, capture_output=True, text=True, timeout=timeout
        )
        if check and result.returncode != 0:
            raise AssertionError(f"{' '.join(args)} failed ({result.returncode}): {result.stderr}")
        return result


Kubectl = KubectlRunner
KUBECTL_VERSIONS = ("1.27", "1.33")


@pytest.fixture(params=KUBECTL_VERSIONS, ids=[f"kubectl {v}" for v in KUBECTL_VERSIONS])
def kubectl(request: pytest.FixtureRequest, cluster: ClusterHandle, tmp_path: Path) -> Kubectl:
    binary = kubectl_binary(request.param)
    if binary is None:
        pytest.skip(f"kubectl.{request.param} is not installed beside kubectl")
    cache = tmp_path / "kube-cache"

    return KubectlRunner(binary, cluster.kubeconfig, cache)
