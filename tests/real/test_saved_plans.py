"""Saved plans against a real kube-apiserver: the real controllers' own motion (status writes, a rollout
restart) keeps a reviewed plan fresh, a `kubectl annotate` in between makes it stale and nothing is
written, and a plan made against another cluster (an embedded one) is refused there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from planner.slim.cluster import running_cluster
from tests import slimcluster
from tests.real.conftest import Runner, http, write_plan
from tests.realplane import RealCluster


def shop_plan(namespace: str, *, image: str = "nginx:1.27") -> str:
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: shop, namespace: {namespace}}}\n"
        "configMaps:\n  - {name: settings, data: {LOG_LEVEL: info}}\n"
        "workloads:\n"
        f"  - {{name: web, image: '{image}', port: 8080, expose: true}}\n"
    )


def get(cluster: RealCluster, path: str) -> Any:
    status, body = http(cluster, "GET", path)
    assert status == 200, body
    return body


def image_of(cluster: RealCluster, namespace: str) -> str:
    deployment = get(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    image: str = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    return image


@pytest.fixture
def reviewed(planner: Runner, namespace: str, tmp_path: Path) -> tuple[Path, Path]:
    """The shop applied (and rolled out) at nginx:1.27, then a saved plan that moves it to 1.28."""
    plan = write_plan(tmp_path, shop_plan(namespace))
    first = planner("apply", str(plan), "--timeout", "120s")
    assert first.returncode == 0, first.stdout + first.stderr
    write_plan(tmp_path, shop_plan(namespace, image="nginx:1.28"))
    saved = tmp_path / "shop.plan.json"
    made = planner("plan", str(plan), "--out", str(saved), "--detailed-exitcode")
    assert made.returncode == 2, made.stdout + made.stderr
    return plan, saved


def test_a_rollout_restart_by_the_real_controllers_keeps_a_saved_plan_fresh(
    planner: Runner, kubectl: Runner, cluster: RealCluster, namespace: str, reviewed: tuple[Path, Path]
) -> None:
    _, saved = reviewed
    restarted = kubectl("rollout", "restart", "deployment/web", "-n", namespace)
    assert restarted.returncode == 0, restarted.stderr
    settled = kubectl("rollout", "status", "deployment/web", "-n", namespace, "--timeout=120s")
    assert settled.returncode == 0, settled.stdout + settled.stderr
    applied = planner("apply", str(saved), "--timeout", "120s")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert image_of(cluster, namespace) == "nginx:1.28"


def test_kubectl_annotate_makes_a_saved_plan_stale_and_nothing_is_written(
    planner: Runner, kubectl: Runner, cluster: RealCluster, namespace: str, reviewed: tuple[Path, Path]
) -> None:
    _, saved = reviewed
    annotated = kubectl("annotate", "configmap/settings", "owner=someone", "-n", namespace)
    assert annotated.returncode == 0, annotated.stderr
    refused = planner("apply", str(saved), "--no-wait")
    assert refused.returncode == 1
    assert refused.stderr == (
        "error: plan is stale: objects moved since the plan was made; plan again:\n"
        f"  configmap/{namespace}/settings: changed\n"
    )
    assert image_of(cluster, namespace) == "nginx:1.27"


def test_a_saved_plan_is_refused_on_another_cluster_and_applied_on_its_own(
    planner: Runner, cluster: RealCluster, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, shop_plan(namespace))
    saved = tmp_path / "shop.plan.json"
    made = planner("plan", str(plan), "--out", str(saved))
    assert made.returncode == 0, made.stdout + made.stderr
    here = get(cluster, "/api/v1/namespaces/kube-system")["metadata"]["uid"]
    assert json.loads(saved.read_text())["cluster"] == {"uid": here, "server": cluster.url}

    with running_cluster() as other:
        refused = planner("apply", str(saved), env={"KUBECONFIG": str(other.kubeconfig)})
        written_there = slimcluster.http(other, "GET", f"/api/v1/namespaces/{namespace}").status
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert refused.stderr.startswith(
        f"error: {saved}: plan was made against cluster {here} at {cluster.url}; "
    )
    assert written_there == 404
    assert http(cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps/settings")[0] == 404
    applied = planner("apply", str(saved), "--no-wait")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert get(cluster, f"/api/v1/namespaces/{namespace}/configmaps/settings")["data"] == {
        "LOG_LEVEL": "info"
    }
