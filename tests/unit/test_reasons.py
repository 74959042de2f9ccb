"""reasons: why an object is not ready yet, over hand-built objects, pods and Events shaped as a real
kubelet and scheduler write them."""

from __future__ import annotations

from typing import Any

import pytest

from planner.wait.reasons import Reason, pods_of, selects, why_not_gone, why_not_ready

SCHEDULING = (
    "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/1 nodes "
    "are available: 1 Preemption is not helpful for scheduling."
)
PULL = 'Failed to pull image "web:nope": rpc error: code = NotFound desc = web:nope: not found'


def deployment(replicas: int = 2) -> dict[str, Any]:
    return {
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop", "uid": "d1"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}}},
        "status": {"replicas": replicas},
    }


def job(**status: Any) -> dict[str, Any]:
    return {
        "kind": "Job",
        "metadata": {"name": "migrate", "namespace": "shop", "uid": "j1"},
        "spec": {"backoffLimit": 6, "selector": {"matchLabels": {"controller-uid": "j1"}}},
        "status": status,
    }


def pod(
    name: str,
    *,
    uid: str | None = None,
    phase: str = "Running",
    scheduled: bool = True,
    ready: bool = False,
    containers: list[dict[str, Any]] | None = None,
    init: list[dict[str, Any]] | None = None,
    deleting: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    conditions: list[dict[str, Any]] = [
        {"type": "PodScheduled", "status": "True"}
        if scheduled
        else {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": SCHEDULING}
    ]
    if scheduled:
        conditions.append({"type": "Ready", "status": "True" if ready else "False"})
    metadata: dict[str, Any] = {"name": name, "namespace": "shop", "uid": uid or f"uid-{name}"}
    if deleting:
        metadata["deletionTimestamp"] = "2027-01-15T08:00:00Z"
    status: dict[str, Any] = {"phase": phase, "conditions": conditions, **extra}
    if containers is not None:
        status["containerStatuses"] = containers
    if init is not None:
        status["initContainerStatuses"] = init
    return {"kind": "Pod", "metadata": metadata, "status": status}


def waiting(
    why: str, message: str = "", *, name: str = "web", restarts: int = 0, last: dict[str, Any] | None = None
) -> dict[str, Any]:
    state: dict[str, Any] = {"reason": why} | ({"message": message} if message else {})
    container: dict[str, Any] = {
        "name": name,
        "ready": False,
        "restartCount": restarts,
        "state": {"waiting": state},
    }
    if last:
        container["lastState"] = {"terminated": last}
    return container


def running(name: str = "web", *, ready: bool = False) -> dict[str, Any]:
    return {"name": name, "ready": ready, "restartCount": 0, "state": {"running": {"startedAt": "x"}}}


def event(
    about: dict[str, Any],
    reason: str,
    message: str,
    *,
    at: str = "2027-01-15T08:00:00Z",
    rv: str = "10",
    **extra: Any,
) -> dict[str, Any]:
    metadata = about["metadata"]
    return {
        "kind": "Event",
        "metadata": {"name": f"{metadata['name']}.{rv}", "namespace": "shop", "resourceVersion": rv},
        "involvedObject": {"kind": about["kind"], "name": metadata["name"], "uid": metadata.get("uid")},
        "reason": reason,
        "message": message,
        "type": extra.pop("type", "Warning"),
        "lastTimestamp": at,
        **extra,
    }


UNSCHEDULED = [pod("web-a", scheduled=False, phase="Pending"), pod("web-b", scheduled=False, phase="Pending")]
PULLING = pod(
    "web-a", phase="Pending", containers=[waiting("ImagePullBackOff", 'Back-off pulling image "web:nope"')]
)
PULL_EVENTS = [
    event(PULLING, "Failed", PULL, at="2027-01-15T08:00:01Z", rv="11"),
    event(PULLING, "Failed", "Error: ErrImagePull", at="2027-01-15T08:00:01Z", rv="12"),
    event(PULLING, "Failed", "Error: ImagePullBackOff", at="2027-01-15T08:00:05Z", rv="13"),
]
CRASHING = pod(
    "web-a",
    containers=[
        waiting("CrashLoopBackOff", "back-off 40s", restarts=3, last={"exitCode": 1, "reason": "Error"})
    ],
)
CREATING = pod("web-a", phase="Pending", containers=[waiting("ContainerCreating")])
NOT_READY = pod("web-a", containers=[running()])


@pytest.mark.parametrize(
    ("obj", "pods", "events", "expected"),
    [
        pytest.param(
            deployment(),
            UNSCHEDULED,
            [event(UNSCHEDULED[0], "FailedScheduling", SCHEDULING)],
            Reason(
                text="0/2 pods scheduled: 0/1 nodes are available: 1 node(s) didn't match Pod's node "
                "affinity/selector",
                problem=True,
            ),
            id="pods the scheduler cannot place: how many are scheduled, and its message without the preemption note",
        ),
        pytest.param(
            deployment(1),
            [PULLING],
            PULL_EVENTS,
            Reason(text=f"ImagePullBackOff: {PULL}", problem=True),
            id="an image that cannot be pulled: the kubelet's pull failure, not its Error: echoes",
        ),
        pytest.param(
            deployment(1),
            [PULLING],
            [],
            Reason(text='ImagePullBackOff: Back-off pulling image "web:nope"', problem=True),
            id="an image pull back-off without Events: the waiting message",
        ),
        pytest.param(
            deployment(1),
            [pod("web-a", phase="Pending", containers=[waiting("ErrImagePull", "rpc error: not found")])],
            [],
            Reason(text="ImagePullBackOff: rpc error: not found", problem=True),
            id="ErrImagePull, which the kubelet alternates with ImagePullBackOff, is named as one obstacle",
        ),
        pytest.param(
            deployment(),
            [PULLING, pod("web-b", ready=True, containers=[running(ready=True)])],
            PULL_EVENTS,
            Reason(text=f"ImagePullBackOff (1/2 pods): {PULL}", problem=True),
            id="one pod of two failing: how many share the obstacle",
        ),
        pytest.param(
            deployment(1),
            [CRASHING],
            [],
            Reason(text="CrashLoopBackOff (3 restarts): container web exited with code 1", problem=True),
            id="a crash loop: its restarts and how the last run ended",
        ),
        pytest.param(
            deployment(1),
            [
                pod(
                    "web-a",
                    containers=[
                        waiting("CrashLoopBackOff", restarts=1, last={"exitCode": 137, "reason": "OOMKilled"})
                    ],
                )
            ],
            [],
            Reason(
                text="CrashLoopBackOff (1 restart): container web exited with code 137 (OOMKilled)",
                problem=True,
            ),
            id="a crash loop killed for memory: the termination reason too",
        ),
        pytest.param(
            deployment(1),
            [
                pod(
                    "web-a",
                    phase="Pending",
                    init=[
                        waiting(
                            "CrashLoopBackOff",
                            name="setup",
                            restarts=2,
                            last={"exitCode": 3, "reason": "Error"},
                        )
                    ],
                    containers=[waiting("PodInitializing")],
                )
            ],
            [],
            Reason(
                text="CrashLoopBackOff (2 restarts): init container setup exited with code 3", problem=True
            ),
            id="a failing init container before the main ones",
        ),
        pytest.param(
            deployment(1),
            [
                pod(
                    "web-a",
                    phase="Pending",
                    containers=[waiting("CreateContainerConfigError", 'secret "db" not found')],
                )
            ],
            [],
            Reason(text='CreateContainerConfigError: secret "db" not found', problem=True),
            id="a container whose environment names a missing Secret",
        ),
        pytest.param(
            deployment(1),
            [CREATING],
            [
                event(
                    CREATING,
                    "FailedMount",
                    'MountVolume.SetUp failed for volume "config" : configmap "web-config" not found',
                )
            ],
            Reason(
                text='ContainerCreating: MountVolume.SetUp failed for volume "config" : configmap "web-config" '
                "not found",
                problem=True,
            ),
            id="a volume that cannot be mounted keeps the container in creation",
        ),
        pytest.param(
            deployment(1),
            [CREATING],
            [],
            Reason(text="0/1 pods ready: ContainerCreating", problem=False),
            id="a container being created, nothing wrong: a step under way",
        ),
        pytest.param(
            deployment(1),
            [NOT_READY],
            [event(NOT_READY, "Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503")],
            Reason(
                text="0/1 pods ready: Readiness probe failed: HTTP probe failed with statuscode: 503",
                problem=True,
            ),
            id="a failing readiness probe",
        ),
        pytest.param(
            deployment(1),
            [NOT_READY],
            [],
            Reason(text="0/1 pods ready: container web running, not ready", problem=False),
            id="running but not ready, no probe failure seen: a step under way",
        ),
        pytest.param(
            deployment(),
            [pod("web-a", ready=True, containers=[running(ready=True)])],
            [],
            None,
            id="every pod ready: nothing holds it up (the rollout counts say the rest)",
        ),
        pytest.param(deployment(), [], [], None, id="no pods yet: nothing known"),
        pytest.param(
            deployment(1),
            [pod("web-old", scheduled=False, phase="Pending", deleting=True), NOT_READY],
            [],
            Reason(text="0/1 pods ready: container web running, not ready", problem=False),
            id="a pod being deleted does not count",
        ),
        pytest.param(
            deployment(1),
            [NOT_READY],
            [event(pod("web-a", uid="an-earlier-pod"), "Unhealthy", "Readiness probe failed")],
            Reason(text="0/1 pods ready: container web running, not ready", problem=False),
            id="Events about an earlier pod of the same name do not count",
        ),
        pytest.param(
            job(failed=2, active=0),
            [
                pod(
                    "migrate-a",
                    phase="Failed",
                    containers=[
                        {"name": "main", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}
                    ],
                    startTime="2027-01-15T08:00:00Z",
                ),
                pod(
                    "migrate-b",
                    phase="Failed",
                    containers=[
                        {"name": "main", "state": {"terminated": {"exitCode": 2, "reason": "Error"}}}
                    ],
                    startTime="2027-01-15T08:00:20Z",
                ),
            ],
            [],
            Reason(text="2 failed pods (backoffLimit 6): container main exited with code 2", problem=True),
            id="a Job retrying after failed pods: how many, and how the newest ended",
        ),
        pytest.param(
            job(failed=1, active=1),
            [PULLING],
            PULL_EVENTS,
            Reason(text=f"ImagePullBackOff: {PULL}", problem=True),
            id="a Job whose running pod has a problem: that problem first",
        ),
        pytest.param(
            job(failed=1, active=1),
            [CREATING],
            [],
            Reason(text="1 failed pod (backoffLimit 6)", problem=True),
            id="a Job whose new pod is being created after a failure: the failure",
        ),
        pytest.param(
            pod("alice", scheduled=False, phase="Pending"),
            [],
            [],
            Reason(
                text="0/1 pods scheduled: 0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector",
                problem=True,
            ),
            id="a Pod waited on itself: the condition's message without an Event",
        ),
    ],
)
def test_why_a_workload_is_not_ready(
    obj: dict[str, Any], pods: list[dict[str, Any]], events: list[dict[str, Any]], expected: Reason | None
) -> None:
    assert why_not_ready(obj, pods=pods, events=events) == expected


def claim() -> dict[str, Any]:
    return {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "shop", "uid": "c1"},
        "status": {"phase": "Pending"},
    }


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        pytest.param(
            [
                event(
                    claim(),
                    "WaitForFirstConsumer",
                    "waiting for first consumer to be created before binding",
                    type="Normal",
                )
            ],
            Reason(
                text="PVC unbound: waiting for first consumer to be created before binding", problem=False
            ),
            id="waiting for its first consumer",
        ),
        pytest.param(
            [event(claim(), "ProvisioningFailed", 'storageclass.storage.k8s.io "fast" not found')],
            Reason(text='PVC unbound: storageclass.storage.k8s.io "fast" not found', problem=True),
            id="a class that cannot provision it",
        ),
        pytest.param([], None, id="no Events yet"),
    ],
)
def test_why_a_claim_is_not_bound(events: list[dict[str, Any]], expected: Reason | None) -> None:
    assert why_not_ready(claim(), events=events) == expected


def test_a_bound_claim_and_kinds_without_pods_have_no_reason() -> None:
    bound = claim() | {"status": {"phase": "Bound"}}
    service = {"kind": "Service", "metadata": {"name": "web-svc"}}
    assert why_not_ready(bound) is None
    assert why_not_ready(service) is None


def test_an_object_being_deleted_waits_for_its_finalizers() -> None:
    deleting = claim()
    deleting["metadata"] |= {"deletionTimestamp": "x", "finalizers": ["kubernetes.io/pvc-protection"]}
    assert why_not_gone(deleting) == Reason(
        text="waiting for finalizers: kubernetes.io/pvc-protection", problem=False
    )
    assert why_not_gone(claim()) is None


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ({"matchLabels": {"app": "web"}}, {"app": "web", "x": "y"}, True),
        ({"matchLabels": {"app": "web"}}, {"app": "api"}, False),
        (
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]},
            {"tier": "b"},
            True,
        ),
        ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["a"]}]}, {"tier": "a"}, False),
        ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, {}, False),
        ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, {}, True),
        ({}, {"app": "web"}, False),
    ],
    ids=[
        "matchLabels all present",
        "matchLabels differ",
        "In",
        "NotIn",
        "Exists without the key",
        "DoesNotExist",
        "an empty selector selects nothing",
    ],
)
def test_label_selectors(selector: dict[str, Any], labels: dict[str, str], expected: bool) -> None:
    assert selects(selector, labels) is expected


def test_a_workloads_pods_are_those_its_selector_selects_in_its_namespace() -> None:
    mine = pod("web-a") | {"metadata": {"name": "web-a", "namespace": "shop", "labels": {"app": "web"}}}
    elsewhere = {"kind": "Pod", "metadata": {"name": "web-b", "namespace": "other", "labels": {"app": "web"}}}
    other = {"kind": "Pod", "metadata": {"name": "api-a", "namespace": "shop", "labels": {"app": "api"}}}
    assert pods_of(deployment(), [mine, elsewhere, other]) == [mine]
