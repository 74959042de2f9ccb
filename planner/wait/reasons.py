"""Why an object is not ready yet, in words a person can act on: a pure function of the object, its
pods and the Events about them.

`readiness` says *whether* an object is ready and counts what is missing (`ready 0/2`); this module says
*why not* (`0/2 pods scheduled: 0/1 nodes are available: 1 node(s) didn't match Pod's node
affinity/selector`, `ImagePullBackOff: Failed to pull image "web:nope": not found`, `CrashLoopBackOff
(3 restarts): container web exited with code 1`). A Deployment's or Job's own status never says that:
its pods' statuses and the Events the scheduler and the kubelet write about them do. `planner.waiting`
gathers those from the Pod and Event informers (`planner.wait.evidence`) and asks here, so every case is a
table test over hand-built objects.

A `Reason` is a `problem` when something is wrong and will not pass by waiting (a back-off, an
unschedulable pod, a failing probe, failed Job pods, a claim that cannot be provisioned); otherwise it
is a step still under way (pods being created, not ready yet), worth saying only once a wait has lasted.
For a Deployment or Job the worst pod speaks for all of them, with how many pods share its state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from planner.kinds import JOB, PERSISTENT_VOLUME_CLAIM, POD
from planner.objects import Manifest, labels_of, metadata_of

IMAGE_PULL_REASONS = ("ImagePullBackOff", "ErrImagePull", "ErrImageNeverPull", "InvalidImageName")
CONFIG_REASONS = ("CreateContainerConfigError", "CreateContainerError", "RunContainerError")
MOUNT_EVENTS = frozenset({"FailedMount", "FailedAttachVolume"})
PREEMPTION_TAIL = " preemption:"


@dataclass(frozen=True, kw_only=True)
class Reason:
    text: str
    problem: bool


@dataclass(frozen=True, kw_only=True)
class _PodState:
    """One pod's obstacle: `rank` orders obstacles by how much they explain (0 first); `label` is what
    pods sharing it are counted under, `detail` the words after it."""

    rank: int
    label: str
    detail: str = ""
    problem: bool = True
    restarts: int = 0


# --- reading objects and Events ----------------------------------------------------------------------


def _status(obj: Manifest) -> Mapping[str, Any]:
    return obj.get("status") or {}


def _condition(obj: Manifest, kind: str) -> Mapping[str, Any] | None:
    return next((c for c in _status(obj).get("conditions") or [] if c.get("type") == kind), None)


def _uid(obj: Manifest) -> str:
    return str(metadata_of(obj).get("uid") or "")


def _version(event: Manifest) -> int:
    text = str(metadata_of(event).get("resourceVersion") or "")
    return int(text) if text.isdigit() else 0


def _when(event: Manifest) -> tuple[str, int]:
    """Events in the order they last happened: the last timestamp, then the resourceVersion (a repeat
    in the same second writes a newer one)."""
    stamp = (
        event.get("lastTimestamp") or event.get("eventTime") or metadata_of(event).get("creationTimestamp")
    )
    return (str(stamp or ""), _version(event))


def _about(event: Manifest, obj: Manifest) -> bool:
    involved = event.get("involvedObject") or {}
    if involved.get("uid") and _uid(obj):
        return bool(involved.get("uid") == _uid(obj))
    return bool(
        involved.get("kind") == obj.get("kind") and involved.get("name") == metadata_of(obj).get("name")
    )


def latest_event(
    events: Iterable[Manifest],
    obj: Manifest,
    *,
    reasons: Iterable[str],
    keep: Callable[[str], bool] | None = None,
) -> Manifest | None:
    """The most recent Event about `obj` with one of `reasons` (and whose message `keep` accepts)."""
    wanted = frozenset(reasons)
    found = [
        e
        for e in events
        if e.get("reason") in wanted
        and _about(e, obj)
        and (keep is None or keep(str(e.get("message") or "")))
    ]
    return max(found, key=_when, default=None)


def _scheduling_message(text: str) -> str:
    """The scheduler's message without its preemption postscript or final full stop."""
    head, _, _ = text.partition(PREEMPTION_TAIL)
    return head.strip().rstrip(".")


def selects(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Whether a label selector (matchLabels and matchExpressions) selects these labels; an empty or
    missing selector selects nothing, as for a workload's pods."""
    if not selector:
        return False
    match = selector.get("matchLabels") or {}
    if any(labels.get(key) != value for key, value in match.items()):
        return False
    return all(_matches(expression, labels) for expression in selector.get("matchExpressions") or [])


def _matches(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = str(expression.get("key")), expression.get("operator")
    values = expression.get("values") or []
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    return operator == "DoesNotExist" and key not in labels


def selects_pods(workload: Manifest) -> bool:
    """Whether the object selects pods with a label selector (a Deployment, StatefulSet, DaemonSet,
    ReplicaSet, Job), not with a Service's plain labels."""
    selector = (workload.get("spec") or {}).get("selector")
    return isinstance(selector, Mapping) and bool(selector.keys() & {"matchLabels", "matchExpressions"})


def pods_of(workload: Manifest, pods: Iterable[Manifest]) -> list[Manifest]:
    """The pods a Deployment's or Job's selector selects in its namespace."""
    namespace = metadata_of(workload).get("namespace")
    selector = (workload.get("spec") or {}).get("selector")
    return [
        pod
        for pod in pods
        if metadata_of(pod).get("namespace") == namespace and selects(selector, labels_of(pod))
    ]


# --- one pod ----------------------------------------------------------------------------------------


def _containers(pod: Manifest) -> list[tuple[str, Mapping[str, Any]]]:
    """(`init container x` or `container x`, its status), init containers first."""
    status = _status(pod)
    return [
        *((f"init container {c.get('name')}", c) for c in status.get("initContainerStatuses") or []),
        *((f"container {c.get('name')}", c) for c in status.get("containerStatuses") or []),
    ]


def _exited(name: str, terminated: Mapping[str, Any]) -> str:
    code = terminated.get("exitCode")
    reason = terminated.get("reason")
    how = f"{name} exited with code {code}"
    return f"{how} ({reason})" if reason and reason not in ("Error", "Completed") else how


def _pull_message(pod: Manifest, events: Sequence[Manifest], waiting: Mapping[str, Any]) -> str:
    """The pull failure as the kubelet's Failed Event tells it; its `Error: ErrImagePull` echoes and
    the waiting message (`Back-off pulling image …`) only when nothing better was said."""
    event = latest_event(events, pod, reasons=("Failed",), keep=lambda text: not text.startswith("Error: "))
    return str(event.get("message") if event else waiting.get("message") or "")


def _waiting_state(pod: Manifest, events: Sequence[Manifest]) -> _PodState | None:
    for name, container in _containers(pod):
        waiting = (container.get("state") or {}).get("waiting") or {}
        reason = str(waiting.get("reason") or "")
        restarts = int(container.get("restartCount") or 0)
        if reason in IMAGE_PULL_REASONS:
            # the kubelet alternates ErrImagePull and ImagePullBackOff: one obstacle, one name
            label = "ImagePullBackOff" if reason == "ErrImagePull" else reason
            return _PodState(rank=1, label=label, detail=_pull_message(pod, events, waiting))
        if reason == "CrashLoopBackOff":
            last = (container.get("lastState") or {}).get("terminated") or {}
            detail = _exited(name, last) if last else str(waiting.get("message") or "")
            return _PodState(rank=2, label=reason, detail=detail, restarts=restarts)
        if reason in CONFIG_REASONS:
            return _PodState(rank=3, label=reason, detail=str(waiting.get("message") or ""))
    return None


def _pod_state(pod: Manifest, events: Sequence[Manifest]) -> _PodState | None:
    """What keeps one pod from being ready, or None when it is ready."""
    scheduled = _condition(pod, "PodScheduled")
    if scheduled is not None and scheduled.get("status") == "False":
        event = latest_event(events, pod, reasons=("FailedScheduling",))
        message = str((event or scheduled).get("message") or scheduled.get("reason") or "")
        return _PodState(rank=0, label="unschedulable", detail=_scheduling_message(message))
    state = _waiting_state(pod, events)
    if state is not None:
        return state
    ready = _condition(pod, "Ready")
    if ready is not None and ready.get("status") == "True":
        return None
    mount = latest_event(events, pod, reasons=MOUNT_EVENTS)
    if _waiting_in(pod, "ContainerCreating") and mount is not None:
        return _PodState(rank=4, label="ContainerCreating", detail=str(mount.get("message") or ""))
    unhealthy = latest_event(events, pod, reasons=("Unhealthy",))
    if unhealthy is not None:
        return _PodState(rank=5, label="not ready", detail=str(unhealthy.get("message") or ""))
    return _PodState(rank=6, label="not ready", detail=_step(pod), problem=False)


def _waiting_in(pod: Manifest, reason: str) -> bool:
    return any(
        ((c.get("state") or {}).get("waiting") or {}).get("reason") == reason for _, c in _containers(pod)
    )


def _step(pod: Manifest) -> str:
    """Where a pod that is fine so far stands: its first waiting container's reason, else which
    containers run without being ready, else its phase."""
    for _, container in _containers(pod):
        reason = ((container.get("state") or {}).get("waiting") or {}).get("reason")
        if reason:
            return str(reason)
    running = [
        name for name, c in _containers(pod) if (c.get("state") or {}).get("running") and not c.get("ready")
    ]
    if running:
        return f"{', '.join(running)} running, not ready"
    return str(_status(pod).get("phase") or "Pending")


# --- pods together ----------------------------------------------------------------------------------


def _live(pods: Iterable[Manifest]) -> list[Manifest]:
    """Pods that count: not being deleted, not finished."""
    return [
        p
        for p in pods
        if not metadata_of(p).get("deletionTimestamp")
        and _status(p).get("phase") not in ("Succeeded", "Failed")
    ]


def _is_ready(pod: Manifest) -> bool:
    ready = _condition(pod, "Ready")
    return ready is not None and ready.get("status") == "True"


def _is_scheduled(pod: Manifest) -> bool:
    scheduled = _condition(pod, "PodScheduled")
    return scheduled is not None and scheduled.get("status") == "True"


def _pods_reason(pods: Sequence[Manifest], events: Sequence[Manifest]) -> Reason | None:
    live = _live(pods)
    states = [state for pod in live if (state := _pod_state(pod, events)) is not None]
    if not states:
        return None
    worst = min(states, key=lambda s: s.rank)
    sharing = [s for s in states if s.rank == worst.rank and s.label == worst.label]
    total = len(live)
    if worst.rank == 0:
        scheduled = sum(1 for pod in live if _is_scheduled(pod))
        return Reason(text=f"{scheduled}/{total} pods scheduled: {worst.detail}", problem=True)
    if worst.label == "not ready":
        ready = sum(1 for pod in live if _is_ready(pod))
        return Reason(text=_joined(f"{ready}/{total} pods ready", worst.detail), problem=worst.problem)
    qualifiers = [f"{len(sharing)}/{total} pods"] if total > 1 else []
    restarts = max(s.restarts for s in sharing)
    if worst.label == "CrashLoopBackOff":
        qualifiers.append(f"{restarts} restart{'' if restarts == 1 else 's'}")
    label = f"{worst.label} ({', '.join(qualifiers)})" if qualifiers else worst.label
    return Reason(text=_joined(label, worst.detail), problem=worst.problem)


def _joined(head: str, detail: str) -> str:
    return f"{head}: {detail}" if detail else head


# --- per kind ---------------------------------------------------------------------------------------


def _failed_pods(job: Manifest, pods: Sequence[Manifest]) -> Reason | None:
    failed = int(_status(job).get("failed") or 0)
    if failed == 0:
        return None
    limit = (job.get("spec") or {}).get("backoffLimit")
    head = f"{failed} failed pod{'' if failed == 1 else 's'}"
    head += f" (backoffLimit {limit})" if limit is not None else ""
    gone = [p for p in pods if _status(p).get("phase") == "Failed"]
    newest = max(gone, key=lambda p: str(_status(p).get("startTime") or ""), default=None)
    exits = [
        _exited(name, terminated)
        for name, container in (_containers(newest) if newest else [])
        if (terminated := (container.get("state") or {}).get("terminated") or {})
        and terminated.get("exitCode")
    ]
    return Reason(text=_joined(head, exits[0] if exits else ""), problem=True)


def _claim_reason(claim: Manifest, events: Sequence[Manifest]) -> Reason | None:
    if _status(claim).get("phase") not in (None, "Pending"):
        return None
    reasons = ("ProvisioningFailed", "WaitForFirstConsumer", "ExternalProvisioning", "Provisioning")
    event = latest_event(events, claim, reasons=reasons)
    if event is None:
        return None
    return Reason(text=f"PVC unbound: {event.get('message')}", problem=event.get("type") == "Warning")


def why_not_ready(
    obj: Manifest, *, pods: Sequence[Manifest] = (), events: Sequence[Manifest] = ()
) -> Reason | None:
    """Why `obj` is not ready, from its pods (a Deployment's or Job's, selected by `pods_of`) and the
    Events about it and them; None when nothing is known to hold it up."""
    kind = obj.get("kind")
    if kind == POD.kind:
        return _pods_reason([obj], events)
    if kind == JOB.kind:
        live = _pods_reason(pods, events)
        if live is not None and live.problem:
            return live
        return _failed_pods(obj, pods) or live
    if selects_pods(obj):  # a Deployment, StatefulSet, DaemonSet
        return _pods_reason(pods, events)
    if kind == PERSISTENT_VOLUME_CLAIM.kind:
        return _claim_reason(obj, events)
    return None


def why_not_gone(obj: Manifest) -> Reason | None:
    """Why an object being deleted is still there: the finalizers it waits for."""
    metadata = metadata_of(obj)
    finalizers = metadata.get("finalizers") or []
    if not metadata.get("deletionTimestamp") or not finalizers:
        return None
    return Reason(text=f"waiting for finalizers: {', '.join(map(str, finalizers))}", problem=False)


__all__ = ["Reason", "latest_event", "pods_of", "selects", "selects_pods", "why_not_gone", "why_not_ready"]
