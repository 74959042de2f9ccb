"""Real kpt against the embedded cluster: `kpt live install-resource-group` installs the ResourceGroup
CRD, `kpt pkg init` and `kpt live init` make a package of a ConfigMap and a Deployment, `kpt live
apply --reconcile-timeout` applies it and waits until both are Current, with the inventory recorded in
a ResourceGroup (checked with kubectl), `kpt live status` reads it back and `kpt live destroy` removes
it all."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from planner.slim.cluster import ClusterHandle
from tests.simulated import simulated_cluster_fixture
from tests.slimcluster import KubectlRunner, http

cluster = simulated_cluster_fixture()

PACKAGE = """apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: NAMESPACE}
data: {mode: fast}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: NAMESPACE}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx:1.25}]
"""


@pytest.fixture
def kpt(cluster: ClusterHandle, tmp_path: Path) -> Callable[..., str]:
    """Runs kpt against the module's cluster in `tmp_path`; its stdout and stderr, asserting success."""
    binary = shutil.which("kpt")
    if binary is None:
        pytest.skip("kpt is not on PATH")
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}

    def run(*args: str) -> str:
        result = subprocess.run(
            [binary, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180
        )
        assert result.returncode == 0, f"kpt {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
        return result.stdout + result.stderr

    return run


def test_kpt_live_applies_waits_and_destroys_a_package(
    kpt: Callable[..., str], cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    kubectl_path = shutil.which("kubectl")
    assert kubectl_path is not None
    kubectl = KubectlRunner(Path(kubectl_path), cluster.kubeconfig, tmp_path / "kube-cache")
    installed = kpt("live", "install-resource-group")
    assert "installing inventory ResourceGroup CRD...success" in installed
    kubectl("wait", "--for", "condition=Established", "crd/resourcegroups.kpt.dev", "--timeout=20s")

    package = tmp_path / "pkg"
    package.mkdir()
    (package / "app.yaml").write_text(PACKAGE.replace("NAMESPACE", namespace))
    kpt("pkg", "init", "pkg")
    kpt("live", "init", "pkg", "--namespace", namespace, "--name", "inventory")

    applied = kpt("live", "apply", "pkg", "--reconcile-timeout=2m")
    assert "apply result: 2 attempted, 2 successful, 0 skipped, 0 failed" in applied
    assert "reconcile result: 2 attempted, 2 successful, 0 skipped, 0 failed, 0 timed out" in applied

    deployment = json.loads(kubectl("get", "deployment", "web", "-n", namespace, "-o", "json").stdout)
    assert deployment["status"]["readyReplicas"] == 2
    config = kubectl("get", "configmap", "settings", "-n", namespace, "-o", "jsonpath={.data.mode}").stdout
    assert config == "fast"
    inventory = json.loads(
        kubectl("get", "resourcegroups.kpt.dev", "inventory", "-n", namespace, "-o", "json").stdout
    )
    assert "cli-utils.sigs.k8s.io/inventory-id" in inventory["metadata"]["labels"]
    assert sorted((r["group"], r["kind"], r["name"]) for r in inventory["spec"]["resources"]) == [
        ("", "ConfigMap", "settings"),
        ("apps", "Deployment", "web"),
    ]
    statuses = {r["kind"]: r for r in inventory["status"]["resourceStatuses"]}
    assert {kind: (s["actuation"], s["reconcile"]) for kind, s in statuses.items()} == {
        "ConfigMap": ("Succeeded", "Succeeded"),
        "Deployment": ("Succeeded", "Succeeded"),
    }
    status = kpt("live", "status", "pkg")
    assert f"deployment.apps/{namespace}/web is Current" in status
    assert f"configmap/{namespace}/settings is Current" in status

    destroyed = kpt("live", "destroy", "pkg")
    assert "delete result: 2 attempted, 2 successful, 0 skipped, 0 failed" in destroyed
    for path in (
        f"/api/v1/namespaces/{namespace}/configmaps/settings",
        f"/apis/kpt.dev/v1alpha1/namespaces/{namespace}/resourcegroups/inventory",
    ):
        assert http(cluster, "GET", path).status == 404
