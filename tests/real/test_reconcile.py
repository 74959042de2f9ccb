"""`planner reconcile --check` against a real kube-apiserver: a ConfigMap deleted and a Deployment
scaled with kubectl are drift, a ConfigMap the plan gained is pending; the check writes none of it and
exits 2, a reconcile then converges, and a second check exits 0.
"""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_reconcile import records, write
from tests.real.conftest import Runner, http
from tests.realplane import RealCluster


def plan_text(namespace: str, *, extra: str = "") -> str:
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: shop, namespace: {namespace}}}\n"
        f"configMaps:\n  - {{name: settings, data: {{MODE: fast}}}}\n{extra}"
        "workloads:\n"
        "  - {name: web, image: 'nginx:1.27', replicas: 2}\n"
    )


def test_check_names_drift_and_pending_changes_writes_nothing_and_exits_2(
    cluster: RealCluster, planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    plan = write(tmp_path / "plans" / "shop.yaml", plan_text(namespace))
    applied = planner("reconcile", str(plan.parent))
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert kubectl("-n", namespace, "delete", "configmap", "settings").returncode == 0
    assert kubectl("-n", namespace, "scale", "deployment", "web", "--replicas=5").returncode == 0
    write(plan, plan_text(namespace, extra="  - {name: extra, data: {A: b}}\n"))

    checked = planner("reconcile", str(plan.parent), "--check", "-o", "json")

    assert checked.returncode == 2, checked.stdout + checked.stderr
    (line,), summary = records(checked)
    assert (line["result"], line["drift"], line["pending"]) == ("changes", 2, 1)
    assert [(c["object"], c["actions"], c["cause"], c["reason"]) for c in line["changes"]] == [
        (f"configmap/{namespace}/extra", ["create"], "pending", ""),
        (f"configmap/{namespace}/settings", ["create"], "drift", "deleted outside the plan"),
        (f"deployment/{namespace}/web", ["update"], "drift", "changed outside the plan by kubectl"),
    ]
    assert (summary["drift"], summary["pending"], summary["exit_code"]) == (2, 1, 2)
    core = f"/api/v1/namespaces/{namespace}/configmaps"
    assert http(cluster, "GET", f"{core}/extra")[0] == 404
    assert http(cluster, "GET", f"{core}/settings")[0] == 404
    replicas = kubectl("get", "deploy/web", "-n", namespace, "-o", "jsonpath={.spec.replicas}")
    assert replicas.stdout == "5", replicas.stderr

    fixed = planner("reconcile", str(plan.parent))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    replicas = kubectl("get", "deploy/web", "-n", namespace, "-o", "jsonpath={.spec.replicas}")
    assert replicas.stdout == "2", replicas.stderr
    assert http(cluster, "GET", f"{core}/extra")[0] == 200
    again = planner("reconcile", str(plan.parent), "--check")
    assert again.returncode == 0, again.stdout + again.stderr
