"""readiness: one verdict per kind and condition, over hand-built objects and the golden controller-written
ones recorded from a real kube-apiserver v1.28.7."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from planner.readiness import Readiness, ReadinessContext, readiness
from tests.paths import GOLDEN

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z
CONTEXT = ReadinessContext(
    now=NOW,
    binding_modes={"standard": "Immediate", "wait": "WaitForFirstConsumer"},
    default_storage_class=None,
)


def golden(name: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((GOLDEN / f"{name}.json").read_text())["response_body"]
    return body


def seconds_ago(seconds: float) -> str:
    return datetime.fromtimestamp(NOW - seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def deployment(*, replicas: int | None = 3, generation: int = 1, **status: Any) -> dict[str, Any]:
    spec = {} if replicas is None else {"replicas": replicas}
    status.setdefault("observedGeneration", generation)
    return {
        "kind": "Deployment",
        "metadata": {"name": "web", "generation": generation},
        "spec": spec,
        "status": status,
    }


def job(*, completions: int | None = None, **status: Any) -> dict[str, Any]:
    spec = {} if completions is None else {"completions": completions}
    return {"kind": "Job", "metadata": {"name": "migrate", "generation": 1}, "spec": spec, "status": status}


def pod(*, containers: int = 1, **status: Any) -> dict[str, Any]:
    spec = {"containers": [{"name": f"c{i}", "image": "x"} for i in range(containers)]}
    return {"kind": "Pod", "metadata": {"name": "alice"}, "spec": spec, "status": status}


def pvc(phase: str, storage_class: str | None = None) -> dict[str, Any]:
    spec = {} if storage_class is None else {"storageClassName": storage_class}
    return {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data"},
        "spec": spec,
        "status": {"phase": phase},
    }


def condition(kind: str, status: str, reason: str = "", message: str = "", since: str = "") -> dict[str, str]:
    found = {"type": kind, "status": status, "reason": reason, "message": message}
    if since:
        found["lastTransitionTime"] = since
    return {key: value for key, value in found.items() if value}


def waiting(name: str, reason: str, message: str = "") -> dict[str, Any]:
    state = {"reason": reason, **({"message": message} if message else {})}
    return {"name": name, "ready": False, "state": {"waiting": state}}


def current(message: str) -> Readiness:
    return Readiness(status="Current", message=message)


def in_progress(message: str) -> Readiness:
    return Readiness(status="InProgress", message=message)


def failed(message: str) -> Readiness:
    return Readiness(status="Failed", message=message)


DEADLINE = condition(
    "Progressing", "False", "ProgressDeadlineExceeded", 'ReplicaSet "web-1" has timed out progressing.'
)
QUOTA = condition("ReplicaFailure", "True", "FailedCreate", "exceeded quota")

CASES = [
    # generic checks
    pytest.param(None, Readiness(status="NotFound", message="not found"), id="an absent object is NotFound"),
    pytest.param(
        {
            **deployment(updatedReplicas=3, readyReplicas=3, availableReplicas=3),
            "metadata": {"name": "web", "generation": 1, "deletionTimestamp": "2026-11-29T10:30:42Z"},
        },
        Readiness(status="Terminating", message="terminating"),
        id="anything with a deletionTimestamp is Terminating, even when its counts are complete",
    ),
    pytest.param(
        deployment(
            generation=2, observedGeneration=1, updatedReplicas=3, readyReplicas=3, availableReplicas=3
        ),
        in_progress("generation 2 not yet observed (observed 1)"),
        id="a controller that has not observed the latest generation means InProgress, whatever the counts",
    ),
    # Deployment
    pytest.param(
        golden("deployment_get_after_controller"),
        in_progress("ready 0/1"),
        id="golden: a deployment whose pod is not yet ready is InProgress with its ready count",
    ),
    pytest.param(
        golden("deployment_get_immediately"),
        in_progress("updated 0/1"),
        id="golden: a deployment before its controller ran has no updated replicas yet",
    ),
    pytest.param(
        deployment(updatedReplicas=3, readyReplicas=3, availableReplicas=3),
        current("ready 3/3"),
        id="a deployment with updated, ready and available all equal to spec replicas is Current",
    ),
    pytest.param(
        deployment(replicas=None, updatedReplicas=1, readyReplicas=1, availableReplicas=1),
        current("ready 1/1"),
        id="a deployment without spec replicas wants one",
    ),
    pytest.param(
        deployment(replicas=0),
        current("ready 0/0"),
        id="a deployment scaled to zero is Current",
    ),
    pytest.param(
        deployment(updatedReplicas=1, readyReplicas=3, availableReplicas=3),
        in_progress("updated 1/3"),
        id="a rollout half done is InProgress on its updated count",
    ),
    pytest.param(
        deployment(updatedReplicas=3, readyReplicas=3, availableReplicas=2),
        in_progress("available 2/3"),
        id="ready but not yet available for minReadySeconds is InProgress",
    ),
    pytest.param(
        deployment(updatedReplicas=1, readyReplicas=0, conditions=[DEADLINE]),
        failed(
            "progress deadline exceeded: ProgressDeadlineExceeded: "
            'ReplicaSet "web-1" has timed out progressing.'
        ),
        id="a deployment past its progress deadline is Failed",
    ),
    pytest.param(
        deployment(conditions=[QUOTA]),
        failed("replica failure: FailedCreate: exceeded quota"),
        id="a deployment whose replica set cannot create pods is Failed",
    ),
    # Job
    pytest.param(
        golden("job_get_after_controller"),
        in_progress("complete 0/1"),
        id="golden: a started job with an active pod is InProgress, not Current as kstatus says",
    ),
    pytest.param(
        job(succeeded=1, conditions=[condition("Complete", "True")]),
        current("complete 1/1"),
        id="a job with Complete=True is Current",
    ),
    pytest.param(
        job(completions=3, succeeded=1, active=2),
        in_progress("complete 1/3"),
        id="a job with some completions done is InProgress with its count",
    ),
    pytest.param(
        job(
            failed=3,
            conditions=[
                condition(
                    "Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit"
                )
            ],
        ),
        failed("failed (complete 0/1): BackoffLimitExceeded: Job has reached the specified backoff limit"),
        id="a job with Failed=True is Failed with its reason",
    ),
    # Pod
    pytest.param(
        golden("pod_get"),
        in_progress("ready 0/2"),
        id="golden: a pending pod is InProgress with its ready containers counted",
    ),
    pytest.param(
        pod(
            phase="Running",
            containerStatuses=[{"name": "c0", "ready": True}],
            conditions=[condition("Ready", "True")],
        ),
        current("ready 1/1"),
        id="a running pod with Ready=True is Current",
    ),
    pytest.param(pod(phase="Succeeded"), current("succeeded"), id="a succeeded pod is Current"),
    pytest.param(
        pod(phase="Failed", reason="Evicted"),
        failed("pod failed: Evicted"),
        id="a failed pod is Failed, not Current as kstatus says",
    ),
    pytest.param(
        pod(
            phase="Running", containerStatuses=[waiting("c0", "CrashLoopBackOff", "back-off 5m0s restarting")]
        ),
        failed("container c0: CrashLoopBackOff: back-off 5m0s restarting"),
        id="a container in CrashLoopBackOff fails the pod",
    ),
    pytest.param(
        pod(phase="Pending", containerStatuses=[waiting("c0", "ImagePullBackOff")]),
        failed("container c0: ImagePullBackOff"),
        id="a container in ImagePullBackOff fails the pod",
    ),
    pytest.param(
        pod(phase="Pending", initContainerStatuses=[waiting("init", "ErrImagePull", "not found")]),
        failed("container init: ErrImagePull: not found"),
        id="an init container that cannot pull its image fails the pod",
    ),
    pytest.param(
        pod(phase="Pending", containerStatuses=[waiting("c0", "ContainerCreating")]),
        in_progress("ready 0/1"),
        id="a container still being created is InProgress",
    ),
    pytest.param(
        pod(
            phase="Pending",
            conditions=[
                condition(
                    "PodScheduled", "False", "Unschedulable", "0/1 nodes are available", seconds_ago(10)
                )
            ],
        ),
        in_progress("unschedulable for 10s: Unschedulable: 0/1 nodes are available"),
        id="a pod unschedulable for 10 s is still InProgress",
    ),
    pytest.param(
        pod(
            phase="Pending",
            conditions=[
                condition(
                    "PodScheduled", "False", "Unschedulable", "0/1 nodes are available", seconds_ago(15)
                )
            ],
        ),
        failed("unschedulable for 15s: Unschedulable: 0/1 nodes are available"),
        id="a pod unschedulable for 15 s is Failed",
    ),
    # PersistentVolumeClaim
    pytest.param(pvc("Bound", "standard"), current("Bound"), id="a bound PVC is Current"),
    pytest.param(
        pvc("Pending", "standard"),
        in_progress("Pending"),
        id="a pending PVC in an Immediate class is InProgress",
    ),
    pytest.param(
        pvc("Pending", "wait"),
        current("waiting for first consumer"),
        id="a pending PVC in a WaitForFirstConsumer class is Current, so its pod is not deadlocked",
    ),
    pytest.param(
        pvc("Lost", "standard"),
        failed("Lost: the bound volume no longer exists"),
        id="a lost PVC is Failed",
    ),
    pytest.param(
        golden("pvc_get"),
        in_progress("Pending"),
        id="golden: a pending PVC without a class and no default class known is InProgress",
    ),
    # others
    pytest.param(
        {"kind": "ConfigMap", "metadata": {"name": "web-config"}, "data": {}},
        current("exists"),
        id="a kind without a rule and without a Ready condition is Current once it exists",
    ),
    pytest.param(
        {
            "kind": "Widget",
            "metadata": {"name": "w"},
            "status": {"conditions": [condition("Ready", "False", "Waiting", "db")]},
        },
        in_progress("not ready: Waiting: db"),
        id="a kind without a rule follows its Ready=False condition",
    ),
    pytest.param(
        {"kind": "Widget", "metadata": {"name": "w"}, "status": {"conditions": [condition("Ready", "True")]}},
        current("Ready"),
        id="a kind without a rule follows its Ready=True condition",
    ),
]


@pytest.mark.parametrize(("obj", "expected"), CASES)
def test_readiness(obj: dict[str, Any] | None, expected: Readiness) -> None:
    assert readiness(obj, CONTEXT) == expected


def test_a_pvc_without_a_class_uses_the_default_class_binding_mode() -> None:
    context = ReadinessContext(
        now=NOW, binding_modes={"wait": "WaitForFirstConsumer"}, default_storage_class="wait"
    )
    assert readiness(pvc("Pending"), context) == current("waiting for first consumer")


def test_a_pending_pvc_whose_class_could_not_be_read_says_why_it_may_be_waiting() -> None:
    context = ReadinessContext(now=NOW, storage_classes_unread="cannot list storageclasses: forbidden")
    assert readiness(pvc("Pending"), context) == Readiness(
        status="InProgress",
        message="Pending (cannot list storageclasses: forbidden: is it waiting for its first consumer?)",
    )
    assert readiness(pvc("Bound"), context) == current("Bound")
