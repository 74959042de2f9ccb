"""When is an object ready? A kstatus-style rules table (docs/design.md §4), pure: objects in, verdicts out.

The executor waits through `planner.waiting`, which judges the informer caches' objects with this
module; keeping the rules pure means every verdict is a table test over a hand-built object.
Deletion and an unobserved generation are judged first; the rollout kinds (Deployment, StatefulSet,
DaemonSet) follow `kubectl rollout status` branch for branch, so "ready" is exactly kubectl's
"successfully rolled out"; kinds without a rule go by their `Ready` condition, else count as Current.

The rest, and why: docs/architecture.md ("Module notes", wait/readiness.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from planner.kinds import (
    CRON_JOB,
    DAEMON_SET,
    DEPLOYMENT,
    INGRESS,
    JOB,
    PERSISTENT_VOLUME_CLAIM,
    POD,
    STATEFUL_SET,
)
from planner.objects import Manifest, metadata_of

Status = Literal["Current", "InProgress", "Failed", "Terminating", "NotFound"]

UNSCHEDULABLE_GRACE_SECONDS = 15.0
UNBOUND_CLAIMS = "pod has unbound immediate PersistentVolumeClaims"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
FAILING_WAIT_REASONS = frozenset({"CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull"})


@dataclass(frozen=True, kw_only=True)
class Readiness:
    """A verdict and its short message (counts). `reason` says why the object is not ready yet when
    that is known; the rules here never set it (they see the object alone): `planner.waiting` adds it
    from the object's pods and Events (`planner.wait.reasons`)."""

    status: Status
    message: str
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class ReadinessContext:
    """What a verdict may depend on besides the object itself.

    `binding_modes` maps StorageClass name to its `volumeBindingMode`; `default_storage_class` is the
    class a PVC without `storageClassName` gets (admission normally fills it in, but not always);
    `storage_classes_unread` says why the classes could not be read, if they could not.
    """

    now: float
    binding_modes: Mapping[str, str] = field(default_factory=dict)
    default_storage_class: str | None = None
    storage_classes_unread: str | None = None


Rule = Callable[[Manifest, ReadinessContext], Readiness]


def _current(message: str) -> Readiness:
    return Readiness(status="Current", message=message)


def _in_progress(message: str) -> Readiness:
    return Readiness(status="InProgress", message=message)


def _failed(message: str) -> Readiness:
    return Readiness(status="Failed", message=message)


def _conditions(obj: Manifest) -> dict[str, Mapping[str, Any]]:
    return {str(c.get("type")): c for c in obj.get("status", {}).get("conditions", []) or []}


def _condition_is(obj: Manifest, kind: str, status: str) -> Mapping[str, Any] | None:
    condition = _conditions(obj).get(kind)
    return condition if condition is not None and condition.get("status") == status else None


def _explain(prefix: str, condition: Mapping[str, Any]) -> str:
    detail = ": ".join(str(part) for part in (condition.get("reason"), condition.get("message")) if part)
    return f"{prefix}: {detail}" if detail else prefix


def _count(obj: Manifest, key: str) -> int:
    return int(obj.get("status", {}).get(key) or 0)


def _generic(obj: Manifest) -> Readiness | None:
    metadata = metadata_of(obj)
    if metadata.get("deletionTimestamp"):
        return Readiness(status="Terminating", message="terminating")
    observed = obj.get("status", {}).get("observedGeneration")
    generation = metadata.get("generation")
    if observed is not None and generation is not None and int(observed) < int(generation):
        return _in_progress(f"generation {generation} not yet observed (observed {observed})")
    return None


def _observed(obj: Manifest) -> Readiness | None:
    """kubectl's first question for a rollout: has the controller observed this generation? A status
    without `observedGeneration` has not (kubectl reads it as 0)."""
    generation = int(metadata_of(obj).get("generation") or 0)
    observed = obj.get("status", {}).get("observedGeneration")
    if observed is None or int(observed) < generation or int(observed) == 0:
        seen = "none" if observed is None else observed
        return _in_progress(f"generation {generation} not yet observed (observed {seen})")
    return None


def _wanted(obj: Manifest) -> int:
    wanted = obj.get("spec", {}).get("replicas")
    return 1 if wanted is None else int(wanted)


def deployment(obj: Manifest, context: ReadinessContext) -> Readiness:
    """`kubectl rollout status deployment`, branch for branch: the generation observed, the progress
    deadline not exceeded, every wanted replica updated, no old replica left, every updated replica
    available. One addition: a ReplicaSet that cannot create pods (ReplicaFailure) fails at once
    rather than at the progress deadline."""
    unobserved = _observed(obj)
    if unobserved is not None:
        return unobserved
    progressing = _conditions(obj).get("Progressing")
    if progressing is not None and progressing.get("reason") == "ProgressDeadlineExceeded":
        return _failed(_explain("progress deadline exceeded", progressing))
    replica_failure = _condition_is(obj, "ReplicaFailure", "True")
    if replica_failure is not None:
        return _failed(_explain("replica failure", replica_failure))
    wanted, updated = _wanted(obj), _count(obj, "updatedReplicas")
    if updated < wanted:
        return _in_progress(f"updated {updated}/{wanted}")
    old = _count(obj, "replicas") - updated
    if old > 0:
        return _in_progress(f"{old} old {'replica' if old == 1 else 'replicas'} pending termination")
    available = _count(obj, "availableReplicas")
    if available < updated:
        return _in_progress(f"available {available}/{updated}")
    return _current(f"ready {wanted}/{wanted}")


def stateful_set(obj: Manifest, context: ReadinessContext) -> Readiness:
    """`kubectl rollout status statefulset`, branch for branch: the generation observed, every wanted
    replica ready, then with a RollingUpdate strategy every pod above the partition updated, and
    without its parameters the current revision equal to the update revision. kubectl refuses to judge
    an OnDelete StatefulSet (its pods change only when deleted); planner calls it ready when every
    wanted replica is ready."""
    unobserved = _observed(obj)
    if unobserved is not None:
        return unobserved
    wanted, ready = _wanted(obj), _count(obj, "readyReplicas")
    if ready < wanted:
        return _in_progress(f"ready {ready}/{wanted}")
    strategy = obj.get("spec", {}).get("updateStrategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return _current(f"ready {ready}/{wanted} ({strategy.get('type')}: pods update when deleted)")
    updated = _count(obj, "updatedReplicas")
    rolling = strategy.get("rollingUpdate")
    if rolling is not None:
        partition = rolling.get("partition")
        if partition is not None and updated < wanted - int(partition):
            return _in_progress(f"updated {updated}/{wanted - int(partition)} (partition {partition})")
        return _current(f"ready {ready}/{wanted}")
    status = obj.get("status", {})
    if status.get("updateRevision") != status.get("currentRevision"):
        return _in_progress(f"updated {updated}/{wanted} to revision {status.get('updateRevision')}")
    return _current(f"ready {ready}/{wanted}")


def daemon_set(obj: Manifest, context: ReadinessContext) -> Readiness:
    """`kubectl rollout status daemonset`, branch for branch: the generation observed, every node's pod
    updated, every one available. As for StatefulSets, an OnDelete DaemonSet is ready when every
    scheduled pod is available (kubectl refuses to judge it)."""
    unobserved = _observed(obj)
    if unobserved is not None:
        return unobserved
    desired = _count(obj, "desiredNumberScheduled")
    strategy = (obj.get("spec", {}).get("updateStrategy") or {}).get("type", "RollingUpdate")
    updated = _count(obj, "updatedNumberScheduled")
    if strategy == "RollingUpdate" and updated < desired:
        return _in_progress(f"updated {updated}/{desired}")
    available = _count(obj, "numberAvailable")
    if available < desired:
        return _in_progress(f"available {available}/{desired}")
    return _current(f"ready {available}/{desired}")


def job(obj: Manifest, context: ReadinessContext) -> Readiness:
    """Current once Complete, Failed once Failed; running or not yet started is InProgress."""
    completions = obj.get("spec", {}).get("completions")
    wanted = 1 if completions is None else int(completions)
    progress = f"complete {_count(obj, 'succeeded')}/{wanted}"
    failed = _condition_is(obj, "Failed", "True")
    if failed is not None:
        return _failed(_explain(f"failed ({progress})", failed))
    if _condition_is(obj, "Complete", "True") is not None:
        return _current(progress)
    return _in_progress(progress)


def _container_statuses(obj: Manifest) -> list[Mapping[str, Any]]:
    status = obj.get("status", {})
    return [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]


def _failing_container(obj: Manifest) -> str | None:
    for container in _container_statuses(obj):
        waiting = (container.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in FAILING_WAIT_REASONS:
            detail = f": {waiting['message']}" if waiting.get("message") else ""
            return f"container {container.get('name')}: {waiting['reason']}{detail}"
    return None


def _seconds_since(timestamp: str | None, now: float) -> float:
    if not timestamp:
        return 0.0
    return now - datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


def _unschedulable(obj: Manifest, context: ReadinessContext) -> Readiness | None:
    scheduled = _condition_is(obj, "PodScheduled", "False")
    if scheduled is None or scheduled.get("reason") != "Unschedulable":
        return None
    elapsed = _seconds_since(scheduled.get("lastTransitionTime"), context.now)
    # Claims still binding (a clone waiting for its source, a provisioner at work) are progress, not a
    # failure: kube-scheduler says so until they are bound, then retries with a back-off that can pass
    # the grace on a loaded cluster. A claim that never binds fails its own wait.
    waits_for_claims = UNBOUND_CLAIMS in str(scheduled.get("message", ""))
    if elapsed >= UNSCHEDULABLE_GRACE_SECONDS and not waits_for_claims:
        return _failed(_explain(f"unschedulable for {int(elapsed)}s", scheduled))
    return _in_progress(_explain(f"unschedulable for {int(elapsed)}s", scheduled))


def pod(obj: Manifest, context: ReadinessContext) -> Readiness:
    """Current when Ready or Succeeded; Failed on phase Failed, a crash or pull back-off, or 15 s
    unschedulable."""
    phase = obj.get("status", {}).get("phase")
    if phase == "Succeeded":
        return _current("succeeded")
    if phase == "Failed":
        reason = obj.get("status", {}).get("reason") or obj.get("status", {}).get("message")
        return _failed(f"pod failed: {reason}" if reason else "pod failed")
    failing = _failing_container(obj)
    if failing is not None:
        return _failed(failing)
    containers = obj.get("spec", {}).get("containers", [])
    statuses = obj.get("status", {}).get("containerStatuses") or []
    ready = f"ready {sum(1 for s in statuses if s.get('ready'))}/{len(containers)}"
    if _condition_is(obj, "Ready", "True") is not None:
        return _current(ready)
    return _unschedulable(obj, context) or _in_progress(ready)


def persistent_volume_claim(obj: Manifest, context: ReadinessContext) -> Readiness:
    """Current when Bound, or Pending in a WaitForFirstConsumer class; Lost is Failed. A Pending claim
    whose class could not be read says so."""
    phase = obj.get("status", {}).get("phase") or "Pending"
    if phase == "Bound":
        return _current("Bound")
    if phase == "Lost":
        return _failed("Lost: the bound volume no longer exists")
    storage_class = obj.get("spec", {}).get("storageClassName") or context.default_storage_class
    if storage_class is not None and context.binding_modes.get(storage_class) == WAIT_FOR_FIRST_CONSUMER:
        return _current("waiting for first consumer")
    if context.storage_classes_unread:
        return _in_progress(
            f"{phase} ({context.storage_classes_unread}: is it waiting for its first consumer?)"
        )
    return _in_progress(phase)


def cron_job(obj: Manifest, context: ReadinessContext) -> Readiness:
    """Current once it exists with the declared spec (the write is that spec): a run is the schedule's
    business, never awaited. The message says when it runs and whether it is suspended."""
    spec = obj.get("spec") or {}
    suspended = "suspended, " if spec.get("suspend") else ""
    zone = f" ({spec['timeZone']})" if spec.get("timeZone") else ""
    return _current(f"{suspended}schedule {spec.get('schedule')}{zone}")


def ingress(obj: Manifest, context: ReadinessContext) -> Readiness:
    """Current once it exists; the address its controller reports (`status.loadBalancer`) is shown
    when there is one but never awaited: many clusters have no controller that would set it."""
    entries = ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    addresses = [str(e.get("ip") or e.get("hostname")) for e in entries if e.get("ip") or e.get("hostname")]
    return _current(f"address {', '.join(addresses)}" if addresses else "exists (no address reported)")


# The conditions kstatus reads as "ready" on a kind without a rule of its own, in the order asked.
READY_CONDITIONS = ("Ready", "Available", "Established")


def by_ready_condition(obj: Manifest, context: ReadinessContext) -> Readiness:
    """Kinds without a rule (a raw manifest's PodDisruptionBudget, a CustomResourceDefinition, a custom
    resource): their first `Ready`, `Available` or `Established` condition if they have one, else
    Current once they exist (their observed generation was judged first)."""
    conditions = _conditions(obj)
    name = next((name for name in READY_CONDITIONS if name in conditions), None)
    if name is None:
        return _current("exists")
    condition = conditions[name]
    if condition.get("status") == "True":
        return _current(name)
    return _in_progress(_explain(f"not {name.lower()}", condition))


RULES: dict[str, Rule] = {
    DEPLOYMENT.kind: deployment,
    STATEFUL_SET.kind: stateful_set,
    DAEMON_SET.kind: daemon_set,
    JOB.kind: job,
    CRON_JOB.kind: cron_job,
    INGRESS.kind: ingress,
    POD.kind: pod,
    PERSISTENT_VOLUME_CLAIM.kind: persistent_volume_claim,
}


def readiness(obj: Manifest | None, context: ReadinessContext) -> Readiness:
    """The verdict for one live object (None when it does not exist)."""
    if obj is None:
        return Readiness(status="NotFound", message="not found")
    rule = RULES.get(str(obj.get("kind")), by_ready_condition)
    return _generic(obj) or rule(obj, context)
