"""ApplySet interoperability with real kubectl (KEP-3659): kubectl's own ApplySet support computes the
same parent id for a plan's name and namespace as planner writes, and kubectl's part-of selector lists
exactly planner's members — the top-level rendered objects, sandbox Pods and PVCs included, never the
ReplicaSets and pods controllers make from templates.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.e2e.conftest import Runner, http, write_plan

ID_LABEL = "applyset.kubernetes.io/id"
PART_OF = "applyset.kubernetes.io/part-of"
EVERY_KIND = "deployments,replicasets,jobs,pods,services,configmaps,secrets,persistentvolumeclaims"


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.2, simulate=True) as handle:
        yield handle


def shop_plan(namespace: str) -> str:
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: shop, namespace: {namespace}}}\n"
        "configMaps:\n  - {name: settings, data: {LOG_LEVEL: info}}\n"
        "workloads:\n"
        "  - {name: web, image: 'nginx:1.27', port: 8080, expose: true, replicas: 2}\n"
        "  - {name: migrate, kind: job, image: 'busybox:1.36'}\n"
        "sandboxes:\n"
        "  - {name: box, image: 'ghcr.io/acme/devbox:1', rootfs: {size: 1Gi}, workspace: {size: 1Gi}}\n"
    )


def parent_id(cluster: ClusterHandle, namespace: str) -> str:
    status, parent = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/secrets/shop")
    assert status == 200, parent
    label: str = parent["metadata"]["labels"][ID_LABEL]
    return label


def test_kubectl_and_planner_give_a_plans_parent_the_same_applyset_id(
    planner: Runner, kubectl: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    config_map = tmp_path / "scratch.yaml"
    config_map.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: scratch}\ndata: {a: '1'}\n")
    applied = kubectl(
        "apply",
        "--server-side",
        "--prune",
        "--applyset=secret/shop",
        "-n",
        namespace,
        "-f",
        str(config_map),
        env={"KUBECTL_APPLYSET": "true"},
    )
    assert applied.returncode == 0, applied.stderr
    kubectls = parent_id(cluster, namespace)
    assert kubectls.startswith("applyset-") and kubectls.endswith("-v1")
    removed = kubectl("delete", "-n", namespace, "secret/shop", "configmap/scratch")
    assert removed.returncode == 0, removed.stderr
    plan = write_plan(tmp_path, shop_plan(namespace))
    done = planner("apply", str(plan), "--no-wait")
    assert done.returncode == 0, done.stdout + done.stderr
    assert parent_id(cluster, namespace) == kubectls


def _listed(kubectl: Runner, selector: str) -> set[str]:
    listed = kubectl("get", EVERY_KIND, "-A", "-l", selector, "-o", "json")
    assert listed.returncode == 0, listed.stderr
    return {f"{i['kind']}/{i['metadata']['name']}" for i in json.loads(listed.stdout)["items"]}


def test_kubectls_part_of_selector_lists_exactly_planners_members(
    planner: Runner, kubectl: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, shop_plan(namespace))
    done = planner("apply", str(plan), "--timeout", "60s")
    assert done.returncode == 0, done.stdout + done.stderr
    pods: set[str] = set()
    deadline = time.monotonic() + 30
    while len({p for p in pods if p.startswith("Pod/")}) < 3 and time.monotonic() < deadline:
        pods = _listed(kubectl, "app in (web,migrate)")  # what the controllers made from templates
        time.sleep(0.2)
    assert len({p for p in pods if p.startswith("Pod/")}) >= 3  # two of web's, one of migrate's
    assert {p.split("-")[0] for p in pods if p.startswith("ReplicaSet/")} == {"ReplicaSet/web"}
    members = _listed(kubectl, f"{PART_OF}={parent_id(cluster, namespace)}")
    assert members == {
        "ConfigMap/settings",
        "Deployment/web",
        "Service/web-svc",
        "Job/migrate",
        "Pod/box",
        "PersistentVolumeClaim/box-rootfs-g1",
        "PersistentVolumeClaim/box-workspace",
    }
