"""What kube-apiserver answers a request without credentials, or with a token it does not know: the
answers the embedded cluster is held to (the same values, asserted against it by
tests/e2e/test_cluster_cli.py and tests/conformance/test_kubectl.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from planner.slim.cluster import ClusterHandle
from planner.testing.controlplane import write_kubeconfig
from tests.conformance.test_kubectl import REFUSED
from tests.e2e.test_cluster_cli import UNAUTHORIZED, forbidden
from tests.realplane import RealCluster
from tests.slimcluster import http


def test_no_token_and_a_wrong_token_are_refused_as_the_embedded_cluster_refuses_them(
    cluster: RealCluster, tmp_path: Path
) -> None:
    anonymous = ClusterHandle(cluster.url, cluster.kubeconfig, 0, 0, None, cluster.ca)
    wrong = ClusterHandle(cluster.url, cluster.kubeconfig, 0, 0, "not-the-token", cluster.ca)
    assert http(anonymous, "GET", "/api/v1/namespaces/default/secrets").body == forbidden(
        'secrets is forbidden: User "system:anonymous" cannot list resource "secrets" in API group "" '
        'in the namespace "default"',
        {"kind": "secrets"},
    )
    assert http(anonymous, "PUT", "/slim/faults", {}).body == forbidden(
        'forbidden: User "system:anonymous" cannot put path "/slim/faults"', {}
    )
    for path in ("/api/v1/secrets", "/slim/faults", "/version", "/healthz"):
        assert (http(wrong, "GET", path).status, http(wrong, "GET", path).body) == (401, UNAUTHORIZED)
    assert http(anonymous, "GET", "/version").status == 200
    for token, last_line in REFUSED.items():
        kubeconfig = tmp_path / f"kubeconfig-{token}"
        write_kubeconfig(kubeconfig, cluster.url, cluster.ca, {"token": token} if token else {})
        command = ["kubectl", f"--kubeconfig={kubeconfig}", f"--cache-dir={tmp_path / 'cache'}", "version"]
        result = subprocess.run(command, input="", capture_output=True, text=True, timeout=60)
        assert (result.returncode, result.stderr.splitlines()[-1]) == (1, last_line)
