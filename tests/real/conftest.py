"""Fixtures for the real tier: the CLI against kube-apiserver v1.28.7 with its controller-manager and
scheduler, and simulated nodes (tests/realplane.py starts one for the whole run).

Each test gets a fresh namespace (deleted after it) and the e2e tier's `planner(...)`/`kubectl(...)`
runners, as the admin; `http(...)` is a raw request as the admin (client certificate), `token_for(...)`
a ServiceAccount's token from TokenRequest. Assertions go through kubectl or raw HTTP, never through planner's reader.
"""

from __future__ import annotations

import itertools
import json
import os
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from planner.testing.controlplane import write_kubeconfig
from tests.e2e.conftest import Runner, home, kubectl, planner
from tests.realplane import RealCluster, shared_cluster

_names = itertools.count()


@pytest.fixture(scope="session")
def cluster() -> RealCluster:
    return shared_cluster()


def admin_context(cluster: RealCluster) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(cluster.ca))
    pki = cluster.kubeconfig.parent
    context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    return context


def http(
    cluster: RealCluster, method: str, path: str, body: Any = None, *, token: str | None = None
) -> tuple[int, Any]:
    """One raw JSON request, as the admin (or with `token`): (status, parsed body)."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Accept": "application/json", "Content-Type": "application/json"}
    context = ssl.create_default_context(cafile=str(cluster.ca)) if token else admin_context(cluster)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(cluster.url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as reply:
            text = reply.read().decode()
            return reply.status, json.loads(text) if text else None
    except urllib.error.HTTPError as exc:
        text = exc.read().decode()
        return exc.code, json.loads(text) if text.startswith("{") else text


def eventually(check: Callable[[], Any], *, timeout: float = 60.0, what: str = "") -> Any:
    """Poll `check` until it returns something truthy; that value (the tier's clocks are real)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout:g} s: {what or check}")
        time.sleep(0.25)


@pytest.fixture
def namespace(cluster: RealCluster) -> Iterator[str]:
    name = f"r{os.getpid()}-{next(_names)}"
    status, body = http(cluster, "POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    assert status == 201, body
    # The controller-manager makes the namespace's default ServiceAccount a moment later; pods need it.
    eventually(
        lambda: http(cluster, "GET", f"/api/v1/namespaces/{name}/serviceaccounts/default")[0] == 200,
        what="the default ServiceAccount",
    )
    yield name
    http(cluster, "DELETE", f"/api/v1/namespaces/{name}")


# The e2e tier's runners serve here too: they need only `cluster.kubeconfig`.
__all__ = ["Runner", "home", "kubectl", "planner"]


def token_for(cluster: RealCluster, namespace: str, account: str, seconds: int = 3600) -> str:
    """A token for the ServiceAccount from the TokenRequest API."""
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": seconds},
    }
    status, body = http(
        cluster, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token", request
    )
    assert status == 201, body
    token: str = body["status"]["token"]
    return token


def token_kubeconfig(cluster: RealCluster, namespace: str, account: str, path: Path) -> Path:
    """A kubeconfig that authenticates as the ServiceAccount, with a token from TokenRequest."""
    write_kubeconfig(path, cluster.url, cluster.ca, {"token": token_for(cluster, namespace, account)})
    return path


def write_plan(directory: Path, text: str, name: str = "plan.yaml") -> Path:
    path = directory / name
    path.write_text(text)
    return path
