"""validate → plan → apply → prune against a real kube-apiserver, and the ApplySet parent planner writes
read by kubectl's own ApplySet support (KEP-3659): `kubectl apply --prune --applyset` accepts it,
computes the same id and prunes planner's members as its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.real.conftest import Runner, http, write_plan
from tests.realplane import RealCluster

ID_LABEL = "applyset.kubernetes.io/id"
PART_OF = "applyset.kubernetes.io/part-of"


def shop(namespace: str, *, api: bool = True) -> str:
    text = (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: shop, namespace: {namespace}}}\n"
        "configMaps:\n  - {name: settings, data: {LOG_LEVEL: info}}\n"
        "workloads:\n"
        "  - {name: web, image: 'nginx:1.27', port: 8080, expose: true, replicas: 2, volumes: [{configMap: settings, mountPath: /etc/app}]}\n"
        "  - {name: migrate, kind: job, image: 'busybox:1.36'}\n"
    )
    if api:
        text += "  - {name: api, image: 'nginx:1.27', port: 8080, expose: true}\n"
    return text


def exists(cluster: RealCluster, path: str) -> bool:
    return http(cluster, "GET", path)[0] == 200


def test_validate_plan_apply_then_prune_and_a_second_plan_is_empty(
    planner: Runner, kubectl: Runner, cluster: RealCluster, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, shop(namespace))
    validated = planner("validate", str(plan))
    assert validated.returncode == 0, validated.stdout + validated.stderr
    planned = planner("plan", str(plan), "--detailed-exitcode")
    assert planned.returncode == 2, planned.stdout + planned.stderr

    applied = planner("apply", str(plan), "--timeout", "120s")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    rollout = kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=5s")
    assert rollout.returncode == 0, rollout.stdout + rollout.stderr
    job = kubectl("get", "job/migrate", "-n", namespace, "-o", "jsonpath={.status.succeeded}")
    assert job.stdout == "1", job.stdout + job.stderr
    again = planner("plan", str(plan), "--detailed-exitcode")
    assert again.returncode == 0, again.stdout + again.stderr

    write_plan(tmp_path, shop(namespace, api=False))
    pruned = planner("apply", str(plan), "--timeout", "120s")
    assert pruned.returncode == 0, pruned.stdout + pruned.stderr
    apps, core = f"/apis/apps/v1/namespaces/{namespace}", f"/api/v1/namespaces/{namespace}"
    assert not exists(cluster, f"{apps}/deployments/api")
    assert not exists(cluster, f"{core}/services/api-svc")
    assert exists(cluster, f"{apps}/deployments/web") and exists(cluster, f"{core}/services/web-svc")
    final = planner("plan", str(plan), "--detailed-exitcode")
    assert final.returncode == 0, final.stdout + final.stderr


def test_kubectl_computes_the_same_applyset_id_and_lists_exactly_planners_members(
    planner: Runner, kubectl: Runner, cluster: RealCluster, namespace: str, tmp_path: Path
) -> None:
    scratch = tmp_path / "scratch.yaml"
    scratch.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: scratch}\ndata: {a: '1'}\n")
    by_kubectl = kubectl(
        "apply",
        "--server-side",
        "--prune",
        "--applyset=secret/shop",
        "-n",
        namespace,
        "-f",
        str(scratch),
        env={"KUBECTL_APPLYSET": "true"},
    )
    assert by_kubectl.returncode == 0, by_kubectl.stdout + by_kubectl.stderr
    kubectls = parent(cluster, namespace)["metadata"]["labels"][ID_LABEL]
    removed = kubectl("delete", "-n", namespace, "secret/shop", "configmap/scratch")
    assert removed.returncode == 0, removed.stderr

    plan = write_plan(tmp_path, shop(namespace))
    applied = planner("apply", str(plan), "--no-wait")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    applyset = parent(cluster, namespace)["metadata"]["labels"][ID_LABEL]
    assert applyset == kubectls
    members = kubectl(
        "get", "deploy,svc,cm,job", "-n", namespace, "-l", f"{PART_OF}={applyset}", "-o", "name"
    )
    assert sorted(members.stdout.split()) == [
        "configmap/settings",
        "deployment.apps/api",
        "deployment.apps/web",
        "job.batch/migrate",
        "service/api-svc",
        "service/web-svc",
    ], members.stderr

    # kubectl reads the parent as an ApplySet and leaves another tool's set alone.
    taken = kubectl(
        "apply",
        "--server-side",
        "--prune",
        "--applyset=secret/shop",
        "-n",
        namespace,
        "-f",
        str(scratch),
        env={"KUBECTL_APPLYSET": "true"},
    )
    assert taken.returncode == 1
    assert 'is managed by tooling "planner" instead of "kubectl"' in taken.stderr, taken.stderr
    assert kubectl("get", "configmap/scratch", "-n", namespace).returncode == 1  # nothing written


def parent(cluster: RealCluster, namespace: str) -> dict[str, Any]:
    status, body = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/secrets/shop")
    assert status == 200, body
    found: dict[str, Any] = body
    return found
