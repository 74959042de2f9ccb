"""monitor.status: kubectl's pod READY/RESTARTS/STATUS, kubectl's short ages, and the status row."""

from __future__ import annotations

from typing import Any

import pytest

from planner.monitor.mapping import End, Observation
from planner.monitor.status import StatusRow, human_age, pod_summary, status_row


def running(ready: bool = True, restarts: int = 0) -> dict[str, Any]:
    return {"ready": ready, "restartCount": restarts, "state": {"running": {"startedAt": "t"}}}


def waiting(reason: str, restarts: int = 0) -> dict[str, Any]:
    return {"ready": False, "restartCount": restarts, "state": {"waiting": {"reason": reason}}}


def terminated(exit_code: int, reason: str = "", restarts: int = 0, signal: int = 0) -> dict[str, Any]:
    state: dict[str, Any] = {"exitCode": exit_code}
    if reason:
        state["reason"] = reason
    if signal:
        state["signal"] = signal
    return {"ready": False, "restartCount": restarts, "state": {"terminated": state}}


def pod(
    containers: list[dict[str, Any]],
    *,
    inits: list[dict[str, Any]] | None = None,
    phase: str = "Running",
    conditions: tuple[str, ...] = (),
    deleting: bool = False,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "p", "creationTimestamp": "2026-11-29T10:00:00Z"}
    if deleting:
        metadata["deletionTimestamp"] = "2026-11-29T10:05:00Z"
    spec: dict[str, Any] = {"containers": [{"name": f"c{i}"} for i in range(len(containers))]}
    status: dict[str, Any] = {
        "phase": phase,
        "containerStatuses": containers,
        "conditions": [{"type": c, "status": "True"} for c in conditions],
    }
    if inits is not None:
        spec["initContainers"] = [{"name": f"i{i}"} for i in range(len(inits))]
        status["initContainerStatuses"] = inits
    return {"metadata": metadata, "spec": spec, "status": status}


@pytest.mark.parametrize(
    ("live", "expected"),
    [
        (pod([running()], conditions=("Ready", "Initialized")), ("1/1", 0, "Running")),
        (pod([running(), running(ready=False)]), ("1/2", 0, "Running")),
        (pod([waiting("ContainerCreating")], phase="Pending"), ("0/1", 0, "ContainerCreating")),
        (pod([], phase="Pending"), ("0/0", 0, "Pending")),
        (pod([waiting("CrashLoopBackOff", restarts=4)]), ("0/1", 4, "CrashLoopBackOff")),
        (pod([waiting("ImagePullBackOff")], phase="Pending"), ("0/1", 0, "ImagePullBackOff")),
        (pod([terminated(0, "Completed")], phase="Succeeded"), ("0/1", 0, "Completed")),
        (pod([terminated(1, "Error")], phase="Failed"), ("0/1", 0, "Error")),
        (pod([terminated(2)], phase="Failed"), ("0/1", 0, "ExitCode:2")),
        (pod([terminated(137, signal=9)], phase="Failed"), ("0/1", 0, "Signal:9")),
        (
            pod([running(), terminated(0, "Completed")], conditions=("Ready",)),
            ("1/2", 0, "Running"),
        ),
        (pod([running(), terminated(0, "Completed")]), ("1/2", 0, "NotReady")),
        (
            pod(
                [waiting("PodInitializing")],
                inits=[terminated(0, "Completed"), running(False)],
                phase="Pending",
            ),
            ("0/1", 0, "Init:1/2"),
        ),
        (
            pod([waiting("PodInitializing")], inits=[waiting("PodInitializing"), waiting("PodInitializing")]),
            ("0/1", 0, "Init:0/2"),
        ),
        (
            pod(
                [waiting("PodInitializing")], inits=[waiting("CrashLoopBackOff", restarts=3)], phase="Pending"
            ),
            ("0/1", 3, "Init:CrashLoopBackOff"),
        ),
        (
            pod([waiting("PodInitializing")], inits=[terminated(1, "Error")], phase="Pending"),
            ("0/1", 0, "Init:Error"),
        ),
        (
            pod([waiting("PodInitializing")], inits=[terminated(3)], phase="Pending"),
            ("0/1", 0, "Init:ExitCode:3"),
        ),
        (
            pod([waiting("PodInitializing")], inits=[terminated(0, "Completed")], phase="Pending"),
            ("0/1", 0, "PodInitializing"),
        ),
        (
            pod(
                [running(restarts=2)],
                inits=[terminated(0, "Completed", restarts=5)],
                conditions=("Initialized",),
            ),
            ("1/1", 2, "Running"),
        ),
        (pod([running()], conditions=("Ready",), deleting=True), ("1/1", 0, "Terminating")),
    ],
    ids=[
        "a ready running container",
        "one of two containers ready",
        "a container being created",
        "a pending pod with no statuses yet shows its phase",
        "a crash loop shows its reason and restarts",
        "an image pull back-off",
        "a completed job pod",
        "a failed container with a reason",
        "a failed container without a reason shows its exit code",
        "a container killed by a signal",
        "a sidecar still running after the main container completed, pod Ready: Running",
        "the same without the Ready condition: NotReady",
        "the second of two init containers runs: Init:1/2",
        "no init container has finished: Init:0/2",
        "an init container in a crash loop",
        "an init container failed with a reason",
        "an init container failed without a reason",
        "init done, main container waiting: PodInitializing",
        "after initialization only the main containers' restarts count",
        "a pod being deleted is Terminating",
    ],
)
def test_pod_summary(live: dict[str, Any], expected: tuple[str, int, str]) -> None:
    summary = pod_summary(live)
    assert (f"{summary.ready}/{summary.total}", summary.restarts, summary.status) == expected


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (-5, "<invalid>"),
        (-0.5, "0s"),
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (200, "3m20s"),
        (599, "9m59s"),
        (600, "10m"),
        (179 * 60, "179m"),
        (3 * 3600, "3h"),
        (5 * 3600 + 120, "5h2m"),
        (30 * 3600, "30h"),
        (3 * 86400 + 4 * 3600, "3d4h"),
        (90 * 86400, "90d"),
        (3 * 365 * 86400 + 30 * 86400, "3y30d"),
        (9 * 365 * 86400, "9y"),
    ],
    ids=[
        "far in the future is invalid",
        "a clock just behind is 0s",
        "now",
        "under two minutes in seconds",
        "two minutes",
        "minutes and seconds under ten minutes",
        "just under ten minutes",
        "ten minutes, no seconds",
        "minutes under three hours",
        "three hours",
        "hours and minutes under eight hours",
        "hours under two days",
        "days and hours under eight days",
        "days under two years",
        "years and days under eight years",
        "years",
    ],
)
def test_human_age(seconds: float, expected: str) -> None:
    assert human_age(seconds) == expected


NOW = 1_795_000_000.0  # 2026-11-18T11:06:40Z


def test_status_row_of_a_running_deployment() -> None:
    own = {
        "kind": "Deployment",
        "metadata": {"creationTimestamp": "2026-11-18T11:01:40Z"},
        "spec": {"replicas": 1},
        "status": {"readyReplicas": 1},
    }
    seen = Observation(uid="d", started_uid="d", started_message="ready 1/1")
    live = pod([running(restarts=1)], conditions=("Ready",))
    row = status_row("k8s-shop|deployment|web", seen=seen, own=own, pod=live, now=NOW)
    assert row == StatusRow(
        runtime_id="k8s-shop|deployment|web",
        state="Started",
        ready="1/1",
        restarts=1,
        status="Running",
        age="5m",
        message="ready 1/1",
    )


@pytest.mark.parametrize(
    ("spec", "status", "expected"),
    [
        ({"replicas": 2}, {"readyReplicas": 1, "replicas": 2}, "1/2"),
        ({"replicas": 3}, {}, "0/3"),
        ({"replicas": 0}, {}, "0/0"),
        ({}, {"readyReplicas": 1}, "1/1"),
    ],
    ids=["one of two replicas ready", "none ready yet", "scaled to zero", "replicas unset means one"],
)
def test_a_deployments_ready_counts_its_replicas_not_its_newest_pods_containers(
    spec: dict[str, int], status: dict[str, int], expected: str
) -> None:
    own = {"kind": "Deployment", "metadata": {}, "spec": spec, "status": status}
    live = pod([running()], conditions=("Ready",))  # the newest pod alone would say 1/1
    row = status_row("k8s-shop|deployment|web", seen=Observation(), own=own, pod=live, now=NOW)
    assert row.ready == expected


def test_status_row_of_a_finished_job_and_of_a_missing_one() -> None:
    finished = Observation(uid="j", started_uid="j", end=End(type="ContainerExited", message="0", uid="j"))
    row = status_row("k8s-shop|job|etl", seen=finished, own=None, pod=None, now=NOW)
    assert (row.state, row.ready, row.status, row.age, row.message) == ("Exited", None, None, "-", "0")
    gone = Observation(end=End(type="ContainerDeleted", message="job shop/x is gone"))
    missing = status_row("k8s-shop|job|x", seen=gone, own=None, pod=None, now=NOW)
    assert (missing.state, missing.message) == ("Deleted", "job shop/x is gone")


def test_a_deleted_job_held_for_its_run_record_says_so_and_how_to_let_it_go() -> None:
    failed = Observation(
        uid="j", started_uid="j", end=End(type="ContainerFailed", message="backoff limit", uid="j")
    )
    meta = {"name": "etl", "namespace": "shop", "creationTimestamp": "2026-05-01T09:00:00Z"}
    held = {
        "kind": "Job",
        "metadata": meta | {"deletionTimestamp": "x", "finalizers": ["planner.dev/run-record"]},
    }
    released = {
        "kind": "Job",
        "metadata": meta | {"deletionTimestamp": "x", "finalizers": ["foregroundDeletion"]},
    }

    row = status_row("k8s-shop|job|etl", seen=failed, own=held, pod=None, now=NOW)
    other = status_row("k8s-shop|job|etl", seen=failed, own=released, pod=None, now=NOW)

    assert row.message == (
        "backoff limit; deleted, kept until its outcome is recorded (finalizer planner.dev/run-record): run "
        "`planner monitor --all -n shop --until-done` or apply its plan"
    )
    assert other.message == "backoff limit"


def test_a_statefulsets_ready_is_its_ready_replicas_and_an_unfinished_rollout_says_so() -> None:
    status = {"observedGeneration": 1, "replicas": 2, "readyReplicas": 1, "updatedReplicas": 1}
    own = {"kind": "StatefulSet", "metadata": {"generation": 1}, "spec": {"replicas": 2}, "status": status}
    live = pod([running()], conditions=("Ready",))
    row = status_row("k8s-shop|statefulset|db", seen=Observation(), own=own, pod=live, now=NOW)
    assert (row.ready, row.message) == ("1/2", "rollout not finished: ready 1/2")
    stopped = {**own, "spec": {"replicas": 0}, "status": {"observedGeneration": 1, "replicas": 0}}
    row = status_row("k8s-shop|statefulset|db", seen=Observation(), own=stopped, pod=None, now=NOW)
    assert (row.ready, row.message) == ("0/0", "")
