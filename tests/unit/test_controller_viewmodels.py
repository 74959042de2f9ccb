"""controller.viewmodels and controller.objecthealth: the controller's view models from hand-written outcomes, plans
and watch-cache objects."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from planner.app.reconciling import PlanOutcome
from planner.changeset import Change, ChangeSet
from planner.controller.objecthealth import ObjectHealth, object_tree
from planner.controller.viewmodels import Known, addressed_plan, plan_path, plan_view
from planner.monitor.pool_members import cached_pool_counts
from planner.objects import ObjectRef

READY = {"conditions": [{"type": "Ready", "status": "True"}]}


def pod(name: str, labels: dict[str, str], *, ready: bool, phase: str = "Running") -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase, "conditions": [{"type": "Ready", "status": str(ready)}]}
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "shop", "labels": labels},
        "status": status,
    }


def claim(name: str, phase: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    metadata = {"name": name, "namespace": "shop", "labels": labels or {}}
    return {"kind": "PersistentVolumeClaim", "metadata": metadata, "status": {"phase": phase}}


def outcome(result: str, **fields: Any) -> PlanOutcome:
    return PlanOutcome(file="shop.yaml", plan="shop", namespace="shop", result=result, **fields)  # type: ignore[arg-type]


def rendered(kind: str, name: str, owner: str | None = None, **fields: Any) -> dict[str, Any]:
    labels = {"gobrave-workload": owner} if owner else {}
    return {"kind": kind, "metadata": {"name": name, "namespace": "shop", "labels": labels}, **fields}


MANIFESTS = [
    rendered("Secret", "db-password", data={"password": "aHVudGVyMg=="}),
    rendered("Deployment", "web", "web", spec={"selector": {"matchLabels": {"app": "web"}}}),
    rendered("Service", "web-svc", "web"),
    rendered(
        "StatefulSet",
        "db",
        "db",
        spec={
            "selector": {"matchLabels": {"app": "db"}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}}],
        },
    ),
    rendered("PersistentVolumeClaim", "cache"),
]
PODS = [
    pod("web-7d9-abcde", {"app": "web"}, ready=True),
    pod("web-7d9-fghij", {"app": "web"}, ready=False, phase="Pending"),
    pod("db-0", {"app": "db"}, ready=True),
    pod("other-0", {"app": "other"}, ready=True),
]
CLAIMS = [claim("data-db-0", "Bound"), claim("cache", "Pending")]


def test_the_tree_groups_objects_by_workload_and_nests_pods_and_claims_with_their_health() -> None:
    web_pods = (
        ObjectHealth(kind="Pod", name="web-7d9-abcde", status="Current", message="Running"),
        ObjectHealth(kind="Pod", name="web-7d9-fghij", status="InProgress", message="Pending, not Ready"),
    )
    db = ObjectHealth(
        kind="StatefulSet",
        name="db",
        status="Current",
        message="1/1 pods ready",
        children=(
            ObjectHealth(kind="Pod", name="db-0", status="Current", message="Running"),
            ObjectHealth(kind="PersistentVolumeClaim", name="data-db-0", status="Current", message="Bound"),
        ),
    )
    tree = object_tree(MANIFESTS, outcome("applied"), CLAIMS, PODS)
    assert tree == (
        ObjectHealth(kind="Secret", name="db-password", status="Current"),
        ObjectHealth(
            kind="workload",
            name="web",
            status="InProgress",
            children=(
                ObjectHealth(
                    kind="Deployment",
                    name="web",
                    status="InProgress",
                    message="1/2 pods ready",
                    children=web_pods,
                ),
                ObjectHealth(kind="Service", name="web-svc", status="Current"),
            ),
        ),
        ObjectHealth(kind="workload", name="db", status="Current", children=(db,)),
        ObjectHealth(kind="PersistentVolumeClaim", name="cache", status="InProgress", message="Pending"),
    )
    assert "aHVudGVyMg==" not in repr(tree) and "hunter2" not in repr(tree)


def test_a_sandbox_groups_its_pod_and_claims_and_is_as_healthy_as_the_worst() -> None:
    manifests = [
        rendered("Pod", "alice", "alice"),
        rendered("PersistentVolumeClaim", "alice-workspace", "alice"),
        rendered("PersistentVolumeClaim", "alice-rootfs-g1", "alice"),
    ]
    claims = [claim("alice-workspace", "Bound"), claim("alice-rootfs-g1", "Lost")]
    pods = [pod("alice", {}, ready=True)]
    (alice,) = object_tree(manifests, outcome("unchanged"), claims, pods, sandboxes=frozenset({"alice"}))
    assert alice == ObjectHealth(
        kind="sandbox",
        name="alice",
        status="Failed",
        children=(
            ObjectHealth(kind="Pod", name="alice", status="Current", message="Running"),
            ObjectHealth(
                kind="PersistentVolumeClaim", name="alice-workspace", status="Current", message="Bound"
            ),
            ObjectHealth(
                kind="PersistentVolumeClaim", name="alice-rootfs-g1", status="Failed", message="Lost"
            ),
        ),
    )


def test_objects_without_a_cached_state_are_unknown_until_a_reconcile_converges() -> None:
    secret = MANIFESTS[:1]
    assert object_tree(secret, None, [], [])[0].status == "Unknown"
    assert object_tree(secret, outcome("failed", message="boom"), [], [])[0].status == "Unknown"
    assert object_tree(
        [{"kind": "Pod", "metadata": {"name": "gone", "namespace": "shop"}}], None, [], []
    ) == (ObjectHealth(kind="Pod", name="gone", status="NotFound", message="not in the watch cache"),)


def test_a_plan_file_is_ready_from_its_last_outcome_and_unknown_before_it() -> None:
    known = Known(source="plans/shop.yaml", name="shop", namespace="shop")
    before = plan_view(known, [], [])
    assert (before.ready, before.reason, before.last_reconcile, before.generation) == (
        "Unknown",
        "NotReconciledYet",
        None,
        None,
    )
    finished = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    applied = outcome("applied", message="applied", generation=4, finished=finished.timestamp())
    after = plan_view(Known(source="plans/shop.yaml", name="shop", namespace="shop", outcome=applied), [], [])
    assert (after.ready, after.reason, after.message, after.generation, after.last_reconcile) == (
        "True",
        "ReconciliationSucceeded",
        "applied",
        4,
        finished,
    )
    failed = plan_view(
        Known(source="s", name="shop", namespace="shop", outcome=outcome("failed", message="x")), [], []
    )
    assert (failed.ready, failed.reason, failed.message) == ("False", "ReconciliationFailed", "x")
    broken = plan_view(
        Known(source="plans/bad.yaml", name="bad.yaml", namespace="", problem="bad.yaml:3:1: no"), [], []
    )
    assert (broken.ready, broken.reason, broken.message) == ("False", "LoadFailed", "bad.yaml:3:1: no")


def test_a_plan_object_shows_the_verdict_in_its_status() -> None:
    status = {
        "conditions": [
            {"type": "Ready", "status": "False", "reason": "DependencyNotReady", "message": "waiting"}
        ],
        "inventory": {"driftFound": 2, "driftCorrected": 1},
        "lastAppliedGeneration": 7,
    }
    plan = {"kind": "Plan", "metadata": {"name": "shop", "namespace": "shop"}, "status": status}
    view = plan_view(
        Known(source="plan/shop -n shop", name="shop", namespace="shop", plan_object=plan), [], []
    )
    assert (view.ready, view.reason, view.message, view.generation) == (
        "False",
        "DependencyNotReady",
        "waiting",
        7,
    )
    assert (view.drift_found, view.drift_corrected, view.drifted) == (2, 1, True)


def test_pool_counts_from_the_caches() -> None:
    def member(name: str, claimed: str) -> dict[str, Any]:
        labels = {"planner.dev/pool": "dev", "planner.dev/claimed": claimed, "gobrave-workload": name}
        return claim(f"{name}-workspace", "Bound", labels)

    claims = [member("dev-a", "false"), member("dev-b", "false"), member("dev-c", "true")]
    pods = [
        pod("dev-a", {"gobrave-workload": "dev-a"}, ready=True),
        pod("dev-b", {"gobrave-workload": "dev-b"}, ready=False),
    ]
    assert cached_pool_counts(claims, pods) == {("shop", "dev"): (1, 2, 1)}


def test_plan_paths_round_trip_and_other_paths_address_no_plan() -> None:
    assert plan_path("shop", "web stack") == "/plans/shop/web%20stack"
    assert addressed_plan("/plans/shop/web%20stack") == ("shop", "web stack")
    for other in ("/plans/shop", "/plans/shop/", "/plans/a/b/c", "/other/a/b", "/"):
        assert addressed_plan(other) is None


def test_a_finished_job_is_complete_and_one_past_its_backoff_limit_failed() -> None:
    """A Succeeded pod is no pod "ready": a Job is complete once its pods succeeded, running while a
    failed pod is retried, failed once more pods failed than its backoffLimit allows."""

    def job(name: str, **spec: Any) -> dict[str, Any]:
        return rendered("Job", name, name, spec=spec)

    def job_pod(name: str, job_name: str, phase: str) -> dict[str, Any]:
        return pod(name, {"job-name": job_name}, ready=False, phase=phase)

    manifests = [job("migrate"), job("seed", backoffLimit=1), job("batch", completions=2), job("later")]
    pods = [
        job_pod("migrate-a", "migrate", "Failed"),
        job_pod("migrate-b", "migrate", "Succeeded"),
        job_pod("seed-a", "seed", "Failed"),
        job_pod("seed-b", "seed", "Failed"),
        job_pod("batch-a", "batch", "Succeeded"),
        job_pod("batch-b", "batch", "Running"),
    ]
    jobs = [group.children[0] for group in object_tree(manifests, outcome("applied"), [], pods)]
    assert [(j.name, j.status, j.message) for j in jobs] == [
        ("migrate", "Current", "Complete 1/1, 1 failed"),
        ("seed", "Failed", "Failed: 2 pods failed (backoffLimit 1)"),
        ("batch", "InProgress", "Running: 1/2 succeeded"),
        ("later", "InProgress", "no pods"),
    ]
    assert [(p.name, p.status, p.message) for p in jobs[0].children] == [
        ("migrate-a", "Failed", "Failed"),
        ("migrate-b", "Current", "Succeeded"),
    ]


def drifted(count: int) -> ChangeSet:
    """A changeset of `count` drifted Deployments and one pending ConfigMap."""
    changes = [
        Change(
            ref=ObjectRef(group="apps", kind="Deployment", namespace="shop", name=f"web-{n}"),
            action="update",
            desired={},
            live={},
            drift=True,
        )
        for n in range(count)
    ]
    pending = Change(
        ref=ObjectRef(group="", kind="ConfigMap", namespace="shop", name="settings"),
        action="update",
        desired={},
        live={},
    )
    return ChangeSet(plan="shop", namespace="shop", changes=(*changes, pending))


def test_the_last_drift_stays_in_view_after_reconciles_that_find_none() -> None:
    """Drift is what the last reconcile that found any found and corrected, and when: a correction is
    not wiped out by the reconciles after it, and drift a failed reconcile left is not hidden."""
    at = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    corrected = outcome("applied", changeset=drifted(2), finished=at.timestamp())
    quiet = outcome("unchanged", changeset=drifted(0), finished=at.timestamp() + 60)
    failed = outcome("failed", changeset=drifted(1), finished=at.timestamp() + 120)

    def drift(**fields: Any) -> tuple[int, int, datetime | None, bool, bool]:
        view = plan_view(Known(source="s", name="shop", namespace="shop", **fields), [], [])
        return view.drift_found, view.drift_corrected, view.drift_at, view.drifted, view.corrected

    assert drift() == (0, 0, None, False, False)
    assert drift(outcome=quiet) == (0, 0, None, False, False)
    assert drift(outcome=corrected, applied=corrected) == (2, 2, at, False, True)
    assert drift(outcome=quiet, applied=corrected) == (2, 2, at, False, True)
    later = datetime(2026, 12, 1, 12, 2, tzinfo=UTC)
    assert drift(outcome=failed, applied=corrected) == (1, 0, later, True, False)


def test_a_plan_object_whose_first_apply_failed_shows_the_generation_the_cluster_is_at() -> None:
    """No generation applied yet (its first failed): the list shows the one recorded, as the Plan's
    own page does (issue 39, item 11), not an empty cell."""
    status = {"conditions": [{"type": "Ready", "status": "False", "reason": "ReconciliationFailed"}]}
    plan = {"kind": "Plan", "metadata": {"name": "shop", "namespace": "shop"}, "status": status}
    failed = outcome("failed", message="timed out", generation=1)
    view = plan_view(
        Known(source="plan/shop -n shop", name="shop", namespace="shop", plan_object=plan, outcome=failed),
        [],
        [],
    )
    assert (view.ready, view.generation) == ("False", 1)
