"""Claims, a StatefulSet and an autoscaler against a real kube-apiserver: what `planner render` writes is
accepted with strict field validation, the apply binds the claims and starts `db-0`, `db-1` on their own
PVCs, a scale of the autoscaled workload is no drift, stop/start keep the StatefulSet's claims, and
removing it — by `planner delete` or from the plan — deletes them only with --allow-data-loss."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_stateful import check_delete_keeps_the_claims_unless_allowed
from tests.real.conftest import Runner, eventually, write_plan
from tests.realplane import RealCluster


def plan_text(namespace: str, *, db: bool = True) -> str:
    text = (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: data, namespace: {namespace}}}\n"
        "volumeClaims:\n  - {name: uploads, size: 1Gi, storageClass: standard}\n"
        "workloads:\n"
        "  - name: web\n    image: 'nginx:1.27'\n    cpu: 100m\n    replicas: 1\n"
        "    autoscale: {min: 1, max: 4, cpuUtilization: 60}\n"
        "    volumes: [{name: files, persistentVolumeClaim: uploads, mountPath: /srv}]\n"
    )
    return text + (
        "  - name: db\n    kind: statefulset\n    image: 'postgres:16'\n    port: 5432\n    replicas: 2\n"
        "    podManagementPolicy: Parallel\n    updateStrategy: {type: RollingUpdate, partition: 0}\n"
        "    volumes: [{name: data, claim: {size: 1Gi, storageClass: standard}, mountPath: /data}]\n"
        if db
        else ""
    )


def claim_names(kubectl: Runner, namespace: str) -> list[str]:
    claims = json.loads(kubectl("get", "pvc", "-n", namespace, "-o", "json").stdout)["items"]
    return sorted(c["metadata"]["name"] for c in claims)


def test_claims_a_statefulset_and_an_hpa_on_a_real_api_server(
    planner: Runner, kubectl: Runner, cluster: RealCluster, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, plan_text(namespace))
    rendered = planner("render", str(plan))
    assert rendered.returncode == 0, rendered.stderr
    dry = kubectl(
        "apply", "--dry-run=server", "--validate=strict", "--server-side", "-f", "-", stdin=rendered.stdout
    )
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "horizontalpodautoscaler.autoscaling/web serverside-applied (server dry run)" in dry.stdout

    applied = planner("apply", str(plan), "--timeout", "180s")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    rollout = kubectl("rollout", "status", "-n", namespace, "statefulset/db", "--timeout=5s")
    assert rollout.returncode == 0, rollout.stdout + rollout.stderr
    claims = json.loads(kubectl("get", "pvc", "-n", namespace, "-o", "json").stdout)["items"]
    assert sorted((c["metadata"]["name"], c["status"]["phase"]) for c in claims) == [
        ("data-db-0", "Bound"),
        ("data-db-1", "Bound"),
        ("uploads", "Bound"),
    ]

    scaled = kubectl("scale", "-n", namespace, "deployment/web", "--replicas=3")
    assert scaled.returncode == 0, scaled.stderr
    # The autoscaler's replicas are no drift; once the scale-up is out, nothing is left to do.
    rolled = kubectl("rollout", "status", "-n", namespace, "deployment/web", "--timeout=60s")
    assert rolled.returncode == 0, rolled.stdout + rolled.stderr
    again = planner("plan", str(plan), "--detailed-exitcode")
    assert again.returncode == 0, again.stdout + again.stderr

    rid = f"k8s-{namespace}|statefulset|db"
    assert planner("stop", rid).returncode == 0
    replicas = kubectl("get", "-n", namespace, "statefulset/db", "-o", "jsonpath={.spec.replicas}")
    assert replicas.stdout == "0"
    assert planner("start", rid).returncode == 0
    eventually(
        lambda: (
            kubectl("get", "-n", namespace, "statefulset/db", "-o", "jsonpath={.status.readyReplicas}").stdout
            == "2"
        ),
        timeout=120,
        what="db back to 2 ready replicas",
    )

    check_delete_keeps_the_claims_unless_allowed(planner, kubectl, namespace, plan, timeout="180s")

    # Removed from the plan, the StatefulSet's claims stay unless --allow-data-loss, which deletes them
    # once the set and its pods are gone; the plan claim stays.
    write_plan(tmp_path, plan_text(namespace, db=False))
    shown = planner("plan", str(plan))
    assert "its PVCs data-db-0, data-db-1 are kept" in shown.stdout, shown.stdout + shown.stderr
    removed = planner("apply", str(plan), "--allow-data-loss", "--timeout", "180s")
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert claim_names(kubectl, namespace) == ["uploads"]
