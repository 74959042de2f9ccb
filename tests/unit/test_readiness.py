"""readiness: one verdict per kind and condition, over hand-built objects and the golden controller-written
ones recorded from a real kube-apiserver v1.28.7."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from planner.wait.readiness import Readiness, ReadinessContext, readiness
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


def deployment(
    *, replicas: int | None = 3, generation: int = 1, replicas_status: int | None = None, **status: Any
) -> dict[str, Any]:
    """A Deployment; `replicas_status` is `status.replicas` (pods of every revision)."""
    spec = {} if replicas is None else {"replicas": replicas}
    status.setdefault("observedGeneration", generation)
    if replicas_status is not None:
        status["replicas"] = replicas_status
    return {
        "kind": "Deployment",
        "metadata": {"name": "web", "generation": generation},
        "spec": spec,
        "status": status,
    }


def stateful_set(
    *,
    replicas: int = 3,
    generation: int = 1,
    strategy: str = "RollingUpdate",
    partition: int | None = None,
    **status: Any,
) -> dict[str, Any]:
    update: dict[str, Any] = {"type": strategy}
    if partition is not None:
        update["rollingUpdate"] = {"partition": partition}
    status.setdefault("observedGeneration", generation)
    if status["observedGeneration"] is None:
        del status["observedGeneration"]
    return {
        "kind": "StatefulSet",
        "metadata": {"name": "db", "generation": generation},
        "spec": {"replicas": replicas, "updateStrategy": update},
        "status": status,
    }


def daemon_set(*, generation: int = 1, strategy: str = "RollingUpdate", **status: Any) -> dict[str, Any]:
    status.setdefault("observedGeneration", generation)
    return {
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "generation": generation},
        "spec": {"updateStrategy": {"type": strategy}},
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
        in_progress("available 0/1"),
        id="golden: a deployment whose updated pod is not yet available is InProgress with that count",
    ),
    pytest.param(
        golden("deployment_get_immediately"),
        in_progress("generation 1 not yet observed (observed none)"),
        id="golden: a deployment before its controller ran has no observedGeneration: kubectl waits",
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
    # Deployment: kubectl rollout status, branch for branch
    pytest.param(
        deployment(observedGeneration=0, updatedReplicas=3, readyReplicas=3, availableReplicas=3),
        in_progress("generation 1 not yet observed (observed 0)"),
        id="kubectl: generation > observedGeneration -> waiting for the spec update to be observed",
    ),
    pytest.param(
        deployment(
            replicas=1,
            replicas_status=None,
            updatedReplicas=1,
            readyReplicas=1,
            availableReplicas=1,
            conditions=[condition("Progressing", "True", "ProgressDeadlineExceeded")],
        ),
        failed("progress deadline exceeded: ProgressDeadlineExceeded"),
        id="kubectl: a Progressing condition with reason ProgressDeadlineExceeded fails, whatever its status",
    ),
    pytest.param(
        deployment(replicas=1, replicas_status=2, updatedReplicas=1, readyReplicas=1, availableReplicas=1),
        in_progress("1 old replica pending termination"),
        id="kubectl: a failed one-replica update (the old pod still serving) is not ready",
    ),
    pytest.param(
        deployment(replicas=2, replicas_status=3, updatedReplicas=2, readyReplicas=2, availableReplicas=2),
        in_progress("1 old replica pending termination"),
        id="kubectl: status.replicas > updatedReplicas -> old replicas pending termination",
    ),
    pytest.param(
        deployment(replicas=3, replicas_status=5, updatedReplicas=3, readyReplicas=3, availableReplicas=3),
        in_progress("2 old replicas pending termination"),
        id="kubectl: old replicas are counted",
    ),
    pytest.param(
        deployment(replicas=3, replicas_status=4, updatedReplicas=2, readyReplicas=3, availableReplicas=3),
        in_progress("updated 2/3"),
        id="kubectl: updatedReplicas < spec.replicas is checked before the old replicas",
    ),
    pytest.param(
        deployment(replicas=2, replicas_status=2, updatedReplicas=2, readyReplicas=2, availableReplicas=1),
        in_progress("available 1/2"),
        id="kubectl: availableReplicas < updatedReplicas -> waiting for updated replicas to be available",
    ),
    pytest.param(
        deployment(replicas=2, replicas_status=2, updatedReplicas=2, readyReplicas=2, availableReplicas=2),
        current("ready 2/2"),
        id="kubectl: every branch passed -> successfully rolled out",
    ),
    pytest.param(
        deployment(replicas=1, replicas_status=1, updatedReplicas=2, readyReplicas=2, availableReplicas=2),
        current("ready 1/1"),
        id="kubectl: more updated replicas than wanted (a scale-down under way) is rolled out",
    ),
    # StatefulSet: kubectl rollout status, branch for branch
    pytest.param(
        stateful_set(generation=2, observedGeneration=1, readyReplicas=3, updatedReplicas=3),
        in_progress("generation 2 not yet observed (observed 1)"),
        id="kubectl sts: generation > observedGeneration -> waiting",
    ),
    pytest.param(
        stateful_set(observedGeneration=None, readyReplicas=3, updatedReplicas=3),
        in_progress("generation 1 not yet observed (observed none)"),
        id="kubectl sts: observedGeneration 0 (unset) -> waiting",
    ),
    pytest.param(
        stateful_set(readyReplicas=2, updatedReplicas=3),
        in_progress("ready 2/3"),
        id="kubectl sts: readyReplicas < spec.replicas -> waiting for pods to be ready",
    ),
    pytest.param(
        stateful_set(partition=1, readyReplicas=3, updatedReplicas=1),
        in_progress("updated 1/2 (partition 1)"),
        id="kubectl sts: updatedReplicas < replicas - partition -> waiting for the partitioned roll out",
    ),
    pytest.param(
        stateful_set(partition=1, readyReplicas=3, updatedReplicas=2),
        current("ready 3/3"),
        id="kubectl sts: the pods above the partition updated -> partitioned roll out complete",
    ),
    pytest.param(
        stateful_set(
            partition=0, readyReplicas=3, updatedReplicas=3, currentRevision="a", updateRevision="b"
        ),
        current("ready 3/3"),
        id="kubectl sts: with rollingUpdate set, the revisions are not compared",
    ),
    pytest.param(
        stateful_set(readyReplicas=3, updatedReplicas=2, currentRevision="db-1", updateRevision="db-2"),
        in_progress("updated 2/3 to revision db-2"),
        id="kubectl sts: without rollingUpdate, updateRevision != currentRevision -> waiting",
    ),
    pytest.param(
        stateful_set(readyReplicas=3, updatedReplicas=3, currentRevision="db-2", updateRevision="db-2"),
        current("ready 3/3"),
        id="kubectl sts: without rollingUpdate, equal revisions -> rolling update complete",
    ),
    pytest.param(
        stateful_set(strategy="OnDelete", readyReplicas=3, currentRevision="db-1", updateRevision="db-2"),
        current("ready 3/3 (OnDelete: pods update when deleted)"),
        id="OnDelete (kubectl will not judge it): ready when every replica is ready",
    ),
    pytest.param(
        stateful_set(strategy="OnDelete", readyReplicas=1),
        in_progress("ready 1/3"),
        id="OnDelete: not ready while a replica is not",
    ),
    # DaemonSet: kubectl rollout status, branch for branch
    pytest.param(
        daemon_set(generation=3, observedGeneration=2, desiredNumberScheduled=2),
        in_progress("generation 3 not yet observed (observed 2)"),
        id="kubectl ds: generation > observedGeneration -> waiting",
    ),
    pytest.param(
        daemon_set(desiredNumberScheduled=2, updatedNumberScheduled=1, numberAvailable=2),
        in_progress("updated 1/2"),
        id="kubectl ds: updatedNumberScheduled < desiredNumberScheduled -> waiting",
    ),
    pytest.param(
        daemon_set(desiredNumberScheduled=2, updatedNumberScheduled=2, numberAvailable=1),
        in_progress("available 1/2"),
        id="kubectl ds: numberAvailable < desiredNumberScheduled -> waiting",
    ),
    pytest.param(
        daemon_set(desiredNumberScheduled=2, updatedNumberScheduled=2, numberAvailable=2),
        current("ready 2/2"),
        id="kubectl ds: every branch passed -> successfully rolled out",
    ),
    pytest.param(
        daemon_set(
            strategy="OnDelete", desiredNumberScheduled=2, updatedNumberScheduled=0, numberAvailable=2
        ),
        current("ready 2/2"),
        id="OnDelete ds: updated pods are not required, available ones are",
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
    pytest.param(
        pod(
            phase="Pending",
            conditions=[
                condition(
                    "PodScheduled",
                    "False",
                    "Unschedulable",
                    "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims.",
                    seconds_ago(40),
                )
            ],
        ),
        in_progress(
            "unschedulable for 40s: Unschedulable: 0/2 nodes are available: pod has unbound immediate"
            " PersistentVolumeClaims."
        ),
        id="a pod waiting for its claims to bind stays InProgress past the grace",
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
