"""How many requests a first apply of N objects costs (issue #45, "requests at the floor"), counted in
the embedded cluster's request log, by verb and resource: a running controller's first reconcile of a
Plan object of 10 Deployments, with the simulation's deployment controller writing status meanwhile
(which used to move the create's managedFields entry and fail its guarded patch), and a first
`planner apply --no-wait` of 10 Deployments. Counts, never times: a renewal of the run lock's Lease
(every 10 s) is the one request that depends on how long a run takes, and is left out.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import SlimAdmin
from tests.e2e.conftest import Runner, http
from tests.e2e.test_controller import Start, controllers
from tests.simulated import eventually

__all__ = ["controllers"]  # the fixture, shared with test_controller

DEPLOYMENTS = 10


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(simulate=True) as handle:
        yield handle


def plan_object(namespace: str, workloads: int) -> dict[str, Any]:
    return {
        "apiVersion": "planner.dev/v1",
        "kind": "Plan",
        "metadata": {"name": "fleet", "namespace": namespace},
        "workloads": [{"name": f"w{w:02d}", "image": "nginx:1.27"} for w in range(workloads)],
    }


def plan_file(namespace: str, workloads: int) -> str:
    lines = ["apiVersion: planner.dev/v1", "kind: Plan", f"metadata: {{name: fleet, namespace: {namespace}}}"]
    lines += ["workloads:", *(f"  - {{name: w{w:02d}, image: nginx:1.27}}" for w in range(workloads))]
    return "\n".join(lines) + "\n"


def ready(cluster: ClusterHandle, namespace: str) -> bool:
    """Ready at generation 1 and its Event there (the reconcile's last request)."""
    status, plan = http(cluster, "GET", f"/apis/planner.dev/v1/namespaces/{namespace}/plans/fleet")
    conditions = (plan.get("status") or {}).get("conditions") or [] if status == 200 else []
    if not any(
        c["type"] == "Ready" and c["status"] == "True" and c["observedGeneration"] == 1 for c in conditions
    ):
        return False
    _, events = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/events")
    return any(e["involvedObject"].get("name") == "fleet" for e in events["items"])


def counted(requests: list[dict[str, Any]], *, leave_out: set[tuple[str, str]]) -> Counter[str]:
    """`verb resource[/subresource] code` of each request, but watches, Lease renewals and `leave_out`
    (the test's own requests, by verb and resource)."""
    return Counter(
        f"{r['verb']} {r['resource']}{'/' + r['subresource'] if r.get('subresource') else ''} {r['code']}"
        for r in requests
        if r["verb"] != "watch"
        and (r["verb"], r["resource"]) != ("update", "leases")
        and (r["verb"], r["resource"]) not in leave_out
    )


def install_crd(planner: Runner, kubectl: Runner) -> None:
    crd = planner("crd")
    assert crd.returncode == 0, crd.stderr
    assert kubectl("apply", "-f", "-", stdin=crd.stdout).returncode == 0
    established = kubectl("wait", "--for=condition=Established", "crd/plans.planner.dev", "--timeout=30s")
    assert established.returncode == 0, established.stderr


def make_plan(cluster: ClusterHandle, namespace: str, workloads: int) -> None:
    status, body = http(
        cluster,
        "POST",
        f"/apis/planner.dev/v1/namespaces/{namespace}/plans",
        plan_object(namespace, workloads),
    )
    assert status == 201, body


def test_a_controllers_first_reconcile_of_a_plan_of_ten_deployments_costs_one_request_per_object_and_eleven(
    controllers: Start, planner: Runner, kubectl: Runner, cluster: ClusterHandle, namespace: str
) -> None:
    install_crd(planner, kubectl)
    warm = f"{namespace}-warm"
    assert http(cluster, "POST", "/api/v1/namespaces", {"metadata": {"name": warm}})[0] == 201
    controllers("--interval", "1h")
    make_plan(cluster, warm, 1)  # its informers started and synced: what follows is the Plan's own
    eventually(lambda: ready(cluster, warm), timeout=120)
    admin = SlimAdmin.of(cluster)
    admin.clear_requests()
    make_plan(cluster, namespace, DEPLOYMENTS)
    eventually(lambda: ready(cluster, namespace), timeout=120)

    made = counted(admin.requests(), leave_out={("create", "plans"), ("get", "plans"), ("list", "events")})
    assert made == {
        f"patch deployments {201}": DEPLOYMENTS,  # each a create-only server-side apply, none patched again
        "get secrets 404": 1,  # the plan's read of its parent: none yet
        "list deployments 200": 1,  # the plan's read of its members
        "create leases 201": 1,  # the run lock, in the Plan's own namespace (so not listed first)
        "delete leases 200": 1,
        "create secrets 201": 2,  # the parent, before any member; the generation record (number 1: the
        # parent named none, so no records are listed unless that name is taken)
        "update secrets 200": 1,  # the parent settled and naming the generation, in one write
        "patch plans 200": 1,  # the finalizer
        "patch plans/status 200": 2,  # Reconciling, then Ready
        "create events 201": 1,
    }, json.dumps(admin.requests(), indent=1)


def test_a_first_apply_no_wait_of_ten_deployments_costs_one_request_per_object_and_eight(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    plan = tmp_path / "fleet.yaml"
    plan.write_text(plan_file(namespace, DEPLOYMENTS))
    admin = SlimAdmin.of(cluster)
    admin.clear_requests()  # this module's tests run one after another on its cluster, never at once
    applied = planner("apply", str(plan), "--no-wait")
    assert applied.returncode == 0, applied.stdout + applied.stderr

    made = counted(admin.requests(), leave_out=set())
    assert made == {
        f"patch deployments {201}": DEPLOYMENTS,
        "get secrets 404": 1,
        "list deployments 200": 1,
        "list namespaces 200": 1,  # before taking the run lock, whose Lease lives there
        "create leases 201": 1,
        "delete leases 200": 1,
        "create secrets 201": 2,
        "update secrets 200": 1,
    }, json.dumps(admin.requests(), indent=1)
