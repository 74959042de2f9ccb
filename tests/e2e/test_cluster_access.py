"""Reaching the cluster the user named, and saying in one line why not.

Each case runs the CLI as a user does (a subprocess) and checks the exit code and that stderr is the one
line the user needs: the kubeconfig or context that is wrong, or the server and the cause. No traceback.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from planner.slim.cluster import ClusterHandle, kubeconfig_document, running_cluster
from tests.paths import REPO
from tests.slimcluster import http

WEB_STACK = "plans/web-stack.yaml"


def run(*args: str, home: Path, kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home)}
    if kubeconfig is not None:
        env["KUBECONFIG"] = str(kubeconfig)
    command = [sys.executable, "-m", "planner", *args]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=60)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def write_kubeconfig(path: Path, url: str, token: str | None = None, ca: Path | None = None) -> Path:
    path.write_text(json.dumps(kubeconfig_document(url, token, ca)))
    return path


@pytest.fixture(scope="module")
def guarded() -> Iterator[ClusterHandle]:
    with running_cluster(token="the-right-token") as handle:
        yield handle


def test_a_context_the_kubeconfig_lacks_is_named_with_the_contexts_it_has(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", f"http://127.0.0.1:{free_port()}")
    result = run("plan", "--context", "prod", WEB_STACK, home=tmp_path, kubeconfig=kubeconfig)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f'error: context "prod" not found in {kubeconfig} (contexts: planner-embedded)'
    ]


@pytest.mark.parametrize("command", ["plan", "apply", "status", "render"])
def test_a_kubeconfig_that_does_not_exist_is_an_error_not_a_fallback(tmp_path: Path, command: str) -> None:
    missing = tmp_path / "nowhere" / "kubeconfig"
    result = run(command, WEB_STACK, home=tmp_path, kubeconfig=missing)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"error: kubeconfig {missing}: no such file"]


@pytest.mark.parametrize("command", ["plan", "apply", "status"])
def test_a_cluster_that_is_down_is_one_line_naming_the_server_and_the_cause(
    tmp_path: Path, command: str
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", url)
    result = run(command, WEB_STACK, home=tmp_path, kubeconfig=kubeconfig)
    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    assert line.startswith("error: ")
    assert line.endswith(f"cannot reach {url}: connection refused")


def test_rejected_credentials_name_the_server_the_user_and_the_request(
    guarded: ClusterHandle, tmp_path: Path
) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", guarded.url, "a-wrong-token", guarded.ca)
    result = run("plan", WEB_STACK, home=tmp_path, kubeconfig=kubeconfig)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"error: unauthorized: {guarded.url} rejected the credentials of kubeconfig user planner-embedded "
        "(trying to get secrets/shop in namespace shop)"
    ]
    assert "a-wrong-token" not in result.stderr + result.stdout


def test_the_right_credentials_reach_the_guarded_cluster(guarded: ClusterHandle, tmp_path: Path) -> None:
    result = run("plan", WEB_STACK, home=tmp_path, kubeconfig=guarded.kubeconfig)
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module")
def with_rbac() -> Iterator[ClusterHandle]:
    with running_cluster(rbac=True) as handle:
        yield handle


def admin_request(cluster: ClusterHandle, path: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = http(cluster, "POST", path, body)
    assert reply.status == 201, reply.body
    answer: dict[str, Any] = reply.body
    return answer


def test_a_token_bound_to_a_too_small_role_is_one_forbidden_line(
    with_rbac: ClusterHandle, tmp_path: Path
) -> None:
    """A plan run as a ServiceAccount whose Role lets it read only ConfigMaps stops at its first read of
    anything else, naming the server's refusal, the server and the kubeconfig user."""
    rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/shop"
    small = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}
    binding = {
        "metadata": {"name": "planner"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "small"},
        "subjects": [{"kind": "ServiceAccount", "name": "planner", "namespace": "ci"}],
    }
    for path, body in [
        ("/api/v1/namespaces", {"metadata": {"name": "ci"}}),
        ("/api/v1/namespaces", {"metadata": {"name": "shop"}}),
        ("/api/v1/namespaces/ci/serviceaccounts", {"metadata": {"name": "planner"}}),
        (f"{rbac}/roles", {"metadata": {"name": "small"}, "rules": [small]}),
        (f"{rbac}/rolebindings", binding),
    ]:
        admin_request(with_rbac, path, body)
    token = admin_request(with_rbac, "/api/v1/namespaces/ci/serviceaccounts/planner/token", {})["status"][
        "token"
    ]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps(kubeconfig_document(with_rbac.url, token, with_rbac.ca)))
    result = run("plan", WEB_STACK, home=tmp_path, kubeconfig=kubeconfig)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        'error: forbidden: secrets "shop" is forbidden: User "system:serviceaccount:ci:planner" cannot get '
        f'resource "secrets" in API group "" in the namespace "shop" ({with_rbac.url}, as kubeconfig user '
        "planner-embedded)"
    ]
    assert token not in result.stderr + result.stdout


def test_a_server_certificate_the_kubeconfig_does_not_trust_is_one_line_naming_tls(
    with_rbac: ClusterHandle, tmp_path: Path
) -> None:
    """The kubeconfig names the TLS server but not its CA: the handshake fails, retried no more than a
    refused connection, and the one line says so, with the verifier's reason."""
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", with_rbac.url, token=with_rbac.token)
    result = run("plan", WEB_STACK, home=tmp_path, kubeconfig=kubeconfig)
    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    assert line == (
        f"error: cannot reach {with_rbac.url}: TLS handshake failed: certificate verify failed: "
        "unable to get local issuer certificate"
    )
