"""monitor.mapping: every row of issue 9's event table, over hand-built objects."""

from __future__ import annotations

import json
from typing import Any

import pytest

from planner.monitor.mapping import (
    SandboxObjects,
    managed_runtime_id,
    recorded_pod,
    rootfs_claim,
    sandbox_observation,
    workload_observation,
)
from planner.objects import Manifest
from planner.workloads import deployment as deployment_kind
from planner.workloads import job as job_kind
from planner.workloads.kind import Look
from planner.workloads.observation import End, Observation


def job_observation(live: Manifest | None, **looked: Any) -> Observation:
    """A Job's look as the monitor takes it: through its kind, with its run record and pods."""
    return workload_observation(job_kind.observe, live, describe="job", **looked)


def deployment_observation(live: Manifest | None) -> Observation:
    return deployment_kind.KIND.observe(live, Look(describe="deployment"))


def job(**status: Any) -> dict[str, Any]:
    return {"kind": "Job", "metadata": {"name": "batch", "uid": "job-uid"}, "status": status}


def failed_condition(message: str) -> dict[str, Any]:
    return {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": message}


TEN = 1795946400.0  # 2026-11-29T10:00:00Z: a Job's startTime is when it started, replayed or not


@pytest.mark.parametrize(
    ("live", "expected"),
    [
        (job(), Observation(uid="job-uid", started_message="active 0, succeeded 0")),
        (
            job(active=1),
            Observation(uid="job-uid", started_uid="job-uid", started_message="active 1, succeeded 0"),
        ),
        (
            job(startTime="2026-11-29T10:00:00Z"),
            Observation(
                uid="job-uid", started_uid="job-uid", started_message="active 0, succeeded 0", started_at=TEN
            ),
        ),
        (
            job(startTime="2026-11-29T10:00:00Z", succeeded=1),
            Observation(
                uid="job-uid",
                started_uid="job-uid",
                started_message="active 0, succeeded 1",
                started_at=TEN,
                end=End(type="ContainerExited", message="0", uid="job-uid"),
            ),
        ),
        (
            job(startTime="2026-11-29T10:00:00Z", active=1, failed=1),
            Observation(
                uid="job-uid", started_uid="job-uid", started_message="active 1, succeeded 0", started_at=TEN
            ),
        ),
        (
            job(
                startTime="2026-11-29T10:00:00Z",
                failed=3,
                conditions=[failed_condition("Job has reached the specified backoff limit")],
            ),
            Observation(
                uid="job-uid",
                started_uid="job-uid",
                started_message="active 0, succeeded 0",
                started_at=TEN,
                end=End(
                    type="ContainerFailed",
                    message="Job has reached the specified backoff limit",
                    uid="job-uid",
                ),
            ),
        ),
        (None, Observation(end=End(type="ContainerDeleted", message="job is gone"))),
    ],
    ids=[
        "a job nobody has started yet proves nothing",
        "an active pod means the job started",
        "a start time means the job started",
        "a succeeded pod means the job exited 0",
        "a failed pod while the job still retries is not a failure (deviation from the seed)",
        "the Failed condition fails the job with the condition's message",
        "a job that is gone was deleted",
    ],
)
def test_job_rows(live: dict[str, Any] | None, expected: Observation) -> None:
    assert job_observation(live) == expected


def deployment(
    *, wanted: int = 1, conditions: list[dict[str, Any]] | None = None, **status: Any
) -> dict[str, Any]:
    return {
        "kind": "Deployment",
        "metadata": {"name": "web", "uid": "dep-uid"},
        "spec": {"replicas": wanted},
        "status": status | ({"conditions": conditions} if conditions else {}),
    }


DEADLINE = {
    "type": "Progressing",
    "status": "False",
    "reason": "ProgressDeadlineExceeded",
    "message": 'ReplicaSet "web-7d9" has timed out progressing.',
}
REPLICA_FAILURE = {
    "type": "ReplicaFailure",
    "status": "True",
    "reason": "FailedCreate",
    "message": 'pods "web-7d9-" is forbidden: exceeded quota',
}


@pytest.mark.parametrize(
    ("live", "expected"),
    [
        (deployment(wanted=1, replicas=0), Observation(uid="dep-uid", started_message="ready 0/1")),
        (
            deployment(wanted=2, readyReplicas=1, replicas=2),
            Observation(uid="dep-uid", started_uid="dep-uid", started_message="ready 1/2"),
        ),
        (
            deployment(conditions=[DEADLINE]),
            Observation(
                uid="dep-uid",
                started_message="ready 0/1",
                end=End(
                    type="ContainerFailed",
                    message='ReplicaSet "web-7d9" has timed out progressing.',
                    uid="dep-uid",
                ),
            ),
        ),
        (
            deployment(conditions=[REPLICA_FAILURE]),
            Observation(
                uid="dep-uid",
                started_message="ready 0/1",
                end=End(
                    type="ContainerFailed",
                    message='pods "web-7d9-" is forbidden: exceeded quota',
                    uid="dep-uid",
                ),
            ),
        ),
        (
            deployment(wanted=0),
            Observation(
                uid="dep-uid",
                started_message="ready 0/0",
                end=End(type="ContainerExited", message="0", uid="dep-uid"),
            ),
        ),
        (
            deployment(wanted=0, readyReplicas=1, replicas=1),
            Observation(uid="dep-uid", started_message="ready 1/0"),
        ),
        (None, Observation(end=End(type="ContainerDeleted", message="deployment is gone"))),
    ],
    ids=[
        "a deployment with no ready replica has not started",
        "one ready replica means started",
        "progress deadline exceeded fails it with the condition's message",
        "a replica failure fails it with the condition's message",
        "spec.replicas 0 and status.replicas 0 is an exit with 0",
        "scaled to 0 while a pod still runs is stopping: neither started nor exited",
        "a deployment that is gone was deleted",
    ],
)
def test_deployment_rows(live: dict[str, Any] | None, expected: Observation) -> None:
    assert deployment_observation(live) == expected


def pod(*, ready: bool = True, phase: str = "Running", **status: Any) -> dict[str, Any]:
    condition = {"type": "Ready", "status": "True" if ready else "False"}
    return {
        "kind": "Pod",
        "metadata": {"name": "box", "uid": "pod-uid"},
        "spec": {
            "nodeName": "node-1",
            "volumes": [{"name": "rootfs", "persistentVolumeClaim": {"claimName": "box-rootfs-g2"}}],
        },
        "status": {"phase": phase, "conditions": [condition], **status},
    }


def terminating(obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "deletionTimestamp": "2026-12-02T08:58:16Z"}}


def claim(name: str, *, state: str | None = None, phase: str = "Bound") -> dict[str, Any]:
    annotations = {"planner.dev/sandbox-state": state} if state else {}
    return {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "uid": f"{name}-uid", "annotations": annotations},
        "status": {"phase": phase},
    }


RUNNING = claim("box-workspace", state="running")
PAUSED = claim("box-workspace", state="paused")
ROOTFS = claim("box-rootfs-g2")


@pytest.mark.parametrize(
    ("objects", "expected"),
    [
        (
            SandboxObjects(pod=pod(), workspace=RUNNING, rootfs=ROOTFS),
            Observation(
                uid="box-workspace-uid", started_uid="pod-uid", started_message="pod Ready on node-1"
            ),
        ),
        (
            SandboxObjects(pod=pod(ready=False, phase="Pending"), workspace=RUNNING, rootfs=ROOTFS),
            Observation(uid="box-workspace-uid", started_message="pod Ready on node-1"),
        ),
        (
            SandboxObjects(pod=None, workspace=PAUSED, rootfs=ROOTFS),
            Observation(uid="box-workspace-uid", end=End(type="ContainerExited", message="paused")),
        ),
        (
            SandboxObjects(pod=terminating(pod()), workspace=PAUSED, rootfs=ROOTFS),
            Observation(uid="box-workspace-uid", end=End(type="ContainerExited", message="paused")),
        ),
        (
            SandboxObjects(pod=terminating(pod()), workspace=RUNNING, rootfs=ROOTFS),
            Observation(
                uid="box-workspace-uid", started_uid="pod-uid", started_message="pod Ready on node-1"
            ),
        ),
        (
            SandboxObjects(pod=None, workspace=RUNNING, rootfs=None),
            Observation(uid="box-workspace-uid"),
        ),
        (
            SandboxObjects(
                pod=pod(ready=False, phase="Failed", reason="Evicted", message="The node was low on memory."),
                workspace=RUNNING,
                rootfs=ROOTFS,
            ),
            Observation(
                uid="box-workspace-uid",
                started_message="pod Ready on node-1",
                end=End(type="ContainerFailed", message="The node was low on memory.", uid="pod-uid"),
            ),
        ),
        (
            SandboxObjects(pod=pod(), workspace=RUNNING, rootfs=claim("box-rootfs-g2", phase="Lost")),
            Observation(
                uid="box-workspace-uid",
                started_uid="pod-uid",
                started_message="pod Ready on node-1",
                end=End(
                    type="ContainerFailed",
                    message="PersistentVolumeClaim box-rootfs-g2 is Lost",
                    uid="box-rootfs-g2-uid",
                ),
            ),
        ),
        (
            SandboxObjects(pod=None, workspace=None, rootfs=None),
            Observation(end=End(type="ContainerDeleted", message="sandbox is gone")),
        ),
        (
            SandboxObjects(pod=None, workspace=None, rootfs=ROOTFS),
            Observation(),
        ),
    ],
    ids=[
        "a Ready pod means the sandbox started",
        "a pod not yet Ready proves nothing",
        "pod gone and state paused is an exit with 'paused'",
        "a paused sandbox's pod still Ready in its grace period is going: the exit, not a start",
        "a running sandbox's terminating pod (a rebase's) is still its start until it goes",
        "pod gone while state running is a rebase: nothing",
        "a Failed pod fails the sandbox with the pod's message",
        "a Lost PVC fails the sandbox",
        "pod and PVCs gone means deleted",
        "pod and workspace gone but the rootfs PVC still there is not deleted yet",
    ],
)
def test_sandbox_rows(objects: SandboxObjects, expected: Observation) -> None:
    assert sandbox_observation(objects) == expected


def labelled(
    kind: str, name: str, workload: str, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    metadata = {
        "name": name,
        "namespace": "shop",
        "labels": {"gobrave-workload": workload},
        "annotations": annotations or {},
    }
    return {"kind": kind, "metadata": metadata}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (labelled("Deployment", "web", "web"), "k8s-shop|deployment|web"),
        (labelled("Job", "etl", "etl", {"planner.dev/runtime-id": "k3s-shop|job|etl"}), "k3s-shop|job|etl"),
        (labelled("PersistentVolumeClaim", "box-workspace", "box"), "k8s-shop|sandbox|box"),
        (labelled("PersistentVolumeClaim", "box-rootfs-g1", "box"), None),
        (labelled("Pod", "web-7d9-abcde", "web"), None),
        ({"kind": "Deployment", "metadata": {"name": "other", "namespace": "shop"}}, None),
    ],
    ids=[
        "a labelled deployment without annotation gets a k8s runtime ID",
        "the runtime-id annotation wins (k3s)",
        "a sandbox is found by its workspace PVC",
        "a rootfs PVC is not a second sandbox",
        "pods are not workloads",
        "an unlabelled deployment is not managed",
    ],
)
def test_managed_runtime_ids(obj: dict[str, Any], expected: str | None) -> None:
    found = managed_runtime_id(obj)
    assert (str(found) if found else None) == expected


def test_recorded_pod_names_the_rootfs_claim() -> None:
    workspace = claim("box-workspace", state="paused")
    workspace["metadata"]["annotations"]["planner.dev/pod-spec"] = json.dumps(pod())
    assert rootfs_claim(recorded_pod(workspace)) == "box-rootfs-g2"


def failed_pod(exit_code: int, created: str) -> dict[str, Any]:
    terminated = {"terminated": {"exitCode": exit_code, "reason": "Error"}}
    return {
        "kind": "Pod",
        "metadata": {"name": f"batch-{exit_code}", "creationTimestamp": created},
        "status": {"phase": "Failed", "containerStatuses": [{"name": "main", "state": terminated}]},
    }


def test_a_failed_job_ends_with_the_exit_code_of_its_newest_failed_pod() -> None:
    failed = job(failed=2, conditions=[failed_condition("Job has reached the specified backoff limit")])
    pods = [failed_pod(1, "2026-11-29T10:00:00Z"), failed_pod(3, "2026-11-29T10:00:20Z")]
    seen = job_observation(failed, pods=lambda: pods)
    assert seen.end == End(
        type="ContainerFailed",
        message="Job has reached the specified backoff limit",
        uid="job-uid",
        exit_code=3,
    )


def test_a_failed_job_whose_pods_are_gone_ends_without_an_exit_code() -> None:
    failed = job(failed=1, conditions=[failed_condition("Job has reached the specified backoff limit")])
    assert job_observation(failed).end == End(
        type="ContainerFailed", message="Job has reached the specified backoff limit", uid="job-uid"
    )


def test_a_job_still_running_never_reads_its_pods() -> None:
    def unread() -> list[dict[str, Any]]:
        raise AssertionError("a running Job's pods were read")

    assert job_observation(job(active=1), pods=unread).end is None
