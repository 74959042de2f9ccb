"""Claims, StatefulSets and autoscaling end to end: one CLI apply of a database StatefulSet and a web
Deployment that mounts a plan claim and autoscales, then what may and may not happen to their data
(a StatefulSet's claims go only with --allow-data-loss, whether `planner delete` or prune removes it;
prune deletes them once the set is gone), checked through kubectl and the server's watch history (never
planner's own reader)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.e2e.conftest import Runner, current_rv, events_since, write_plan


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.1, simulate=True) as handle:
        yield handle


CLAIMS = "volumeClaims:\n  - {name: uploads, size: 1Gi}\n"
WEB = """\
  - name: web
    image: ghcr.io/acme/web:1
    cpu: 100m
    replicas: 1
    autoscale: {min: 1, max: 3, cpuUtilization: 50}
    podAnnotations: {sim.planner.dev/cpu-utilization: "200"}
    volumes:
      - {name: files, persistentVolumeClaim: uploads, mountPath: /srv/files}
"""
DB = """\
  - name: db
    kind: statefulset
    image: ghcr.io/acme/postgres:16
    port: 5432
    replicas: 2
    volumes:
      - {name: data, claim: {size: 1Gi}, mountPath: /var/lib/postgresql/data}
"""


def plan_text(namespace: str, *, claims: str = CLAIMS, workloads: str = WEB + DB) -> str:
    header = f"apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {{name: data, namespace: {namespace}}}\n"
    return header + claims + "workloads:\n" + workloads


def wait_for(check: Callable[[], Any], *, timeout: float = 60.0, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def get(kubectl: Runner, namespace: str, *what: str) -> Any:
    result = kubectl("get", "-n", namespace, *what, "-o", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def names(kubectl: Runner, namespace: str, kind: str) -> list[str]:
    return sorted(item["metadata"]["name"] for item in get(kubectl, namespace, kind)["items"])


def claim_uids(kubectl: Runner, namespace: str) -> dict[str, str]:
    return {c["metadata"]["name"]: c["metadata"]["uid"] for c in get(kubectl, namespace, "pvc")["items"]}


def check_delete_keeps_the_claims_unless_allowed(
    planner: Runner, kubectl: Runner, namespace: str, plan: Path, *, timeout: str
) -> None:
    """`planner delete` of the applied StatefulSet `db` keeps its claims and says so; applied again, the
    set is deleted with --allow-data-loss, which takes its claims too (the plan claim `uploads` stays);
    then the plan is applied afresh (waiting at most `timeout`). Shared with the real tier."""
    rid = f"k8s-{namespace}|statefulset|db"
    kept = claim_uids(kubectl, namespace)
    deleted = planner("delete", rid)
    assert deleted.returncode == 0, deleted.stderr
    assert "PVCs kept (data-db-0, data-db-1; --allow-data-loss deletes them)" in deleted.stdout, (
        deleted.stdout
    )
    assert kubectl("get", "-n", namespace, "statefulset", "db").returncode != 0
    assert claim_uids(kubectl, namespace) == kept
    again = planner("apply", str(plan), "--no-wait")
    assert again.returncode == 0, again.stdout + again.stderr
    dropped = planner("delete", rid, "--allow-data-loss")
    assert dropped.returncode == 0, dropped.stderr
    assert "and PVCs data-db-0, data-db-1" in dropped.stdout, dropped.stdout
    wait_for(
        lambda: sorted(claim_uids(kubectl, namespace)) == ["uploads"],
        timeout=120,
        what="data-db-0, data-db-1 to go",
    )
    assert claim_uids(kubectl, namespace)["uploads"] == kept["uploads"]
    reapplied = planner("apply", str(plan), "--timeout", timeout)
    assert reapplied.returncode == 0, reapplied.stdout + reapplied.stderr


def first_rv(events: list[dict[str, Any]], matches: Callable[[dict[str, Any]], bool]) -> int:
    return min(int(e["object"]["metadata"]["resourceVersion"]) for e in events if matches(e["object"]))


def test_claims_a_statefulset_and_an_autoscaled_deployment_apply_and_keep_their_data(
    cluster: ClusterHandle, namespace: str, planner: Runner, kubectl: Runner, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, plan_text(namespace))
    before = current_rv(cluster)
    applied = planner("apply", str(plan), "--timeout", "2m")
    assert applied.returncode == 0, applied.stdout + applied.stderr

    # The claim was Bound before the pod that mounts it was created (one resourceVersion counter).
    claims = events_since(cluster, f"/api/v1/namespaces/{namespace}/persistentvolumeclaims", before)
    pods = events_since(cluster, f"/api/v1/namespaces/{namespace}/pods", before)
    bound = first_rv(
        claims, lambda o: o["metadata"]["name"] == "uploads" and o.get("status", {}).get("phase") == "Bound"
    )
    web_pod = first_rv(pods, lambda o: o["metadata"]["name"].startswith("web-"))
    assert bound < web_pod

    # The StatefulSet's pods are Ready, each with its own Bound claim; its headless Service exists.
    ready = get(kubectl, namespace, "pods", "db-0", "db-1")["items"]
    assert [next(c["status"] for c in p["status"]["conditions"] if c["type"] == "Ready") for p in ready] == [
        "True",
        "True",
    ]
    assert names(kubectl, namespace, "pvc") == ["data-db-0", "data-db-1", "uploads"]
    assert {c["status"]["phase"] for c in get(kubectl, namespace, "pvc")["items"]} == {"Bound"}
    assert get(kubectl, namespace, "service", "db")["spec"]["clusterIP"] == "None"

    # The HPA scales web up; that is never drift.
    wait_for(
        lambda: get(kubectl, namespace, "deployment", "web")["spec"]["replicas"] == 3,
        what="the HPA to scale web",
    )
    again = planner("plan", str(plan), "--detailed-exitcode")
    assert again.returncode == 0, again.stdout + again.stderr

    # stop scales the StatefulSet to 0 and keeps its claims; start brings back the plan's 2.
    rid = f"k8s-{namespace}|statefulset|db"
    stopped = planner("stop", rid)
    assert stopped.returncode == 0, stopped.stderr
    assert get(kubectl, namespace, "statefulset", "db")["spec"]["replicas"] == 0
    wait_for(
        lambda: not names(kubectl, namespace, "pods") or "db-0" not in names(kubectl, namespace, "pods"),
        what="db-0 to go",
    )
    started = planner("start", rid)
    assert started.returncode == 0, started.stderr
    assert get(kubectl, namespace, "statefulset", "db")["spec"]["replicas"] == 2
    status = wait_for(
        lambda: (out := planner("status", rid).stdout) and " 2/2 " in out and out, what="status READY 2/2"
    )
    assert "Started" in status

    check_delete_keeps_the_claims_unless_allowed(planner, kubectl, namespace, plan, timeout="2m")

    # Removing the claim is refused without --allow-data-loss; nothing is deleted.
    write_plan(tmp_path, plan_text(namespace, claims="", workloads=DB))
    refused = planner("apply", str(plan), "--no-wait")
    assert refused.returncode != 0
    assert "persistentvolumeclaim" in refused.stderr and "--allow-data-loss" in refused.stderr
    assert names(kubectl, namespace, "pvc") == ["data-db-0", "data-db-1", "uploads"]

    # Removing the StatefulSet: without --allow-data-loss the plan keeps its claims and says so; with it
    # they are deleted once the set is gone.
    write_plan(tmp_path, plan_text(namespace, workloads=WEB))
    shown = planner("plan", str(plan))
    assert "its PVCs data-db-0, data-db-1 are kept" in shown.stdout, shown.stdout
    before = current_rv(cluster)
    removed = planner("apply", str(plan), "--allow-data-loss", "--timeout", "2m")
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert kubectl("get", "-n", namespace, "statefulset", "db").returncode != 0
    assert names(kubectl, namespace, "pvc") == ["uploads"]
    sets = events_since(cluster, f"/apis/apps/v1/namespaces/{namespace}/statefulsets", before)
    claims = events_since(cluster, f"/api/v1/namespaces/{namespace}/persistentvolumeclaims", before)
    set_gone = max(int(e["object"]["metadata"]["resourceVersion"]) for e in sets if e["type"] == "DELETED")
    deleting = [e for e in claims if e["type"] == "DELETED" or "deletionTimestamp" in e["object"]["metadata"]]
    assert {e["object"]["metadata"]["name"] for e in deleting} == {"data-db-0", "data-db-1"}
    assert set_gone < min(int(e["object"]["metadata"]["resourceVersion"]) for e in deleting)

    # delete takes the workload's own autoscaler with it (one of its name another tool made stays, as
    # tests/e2e/test_cronjob_ingress.py checks).
    deleted = planner("delete", f"k8s-{namespace}|deployment|web")
    assert deleted.returncode == 0, deleted.stderr
    assert "deleted horizontalpodautoscaler web, service web-svc (if any)" in deleted.stdout, deleted.stdout
    gone = kubectl("get", "-n", namespace, "hpa", "web")
    assert gone.returncode != 0 and "NotFound" in gone.stderr
