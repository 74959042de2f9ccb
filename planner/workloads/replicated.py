"""What the replicated kinds (Deployment, StatefulSet, DaemonSet) share: one look at a rolled object,
and stopping by scaling."""

from __future__ import annotations

from planner.objects import Manifest
from planner.workloads.kind import Handle, Look
from planner.workloads.observation import (
    EXIT_SUCCESS,
    End,
    Observation,
    condition,
    count,
    gone,
    is_true,
    reason_text,
    seconds,
    uid_of,
)


def _failure(rolled: Manifest) -> str | None:
    replica_failure = condition(rolled, "ReplicaFailure")
    if is_true(replica_failure) and replica_failure is not None:
        return reason_text(replica_failure, "ReplicaFailure")
    progressing = condition(rolled, "Progressing")
    if progressing is not None and progressing.get("reason") == "ProgressDeadlineExceeded":
        return reason_text(progressing, "ProgressDeadlineExceeded")
    return None


def _failed_at(rolled: Manifest) -> float | None:
    for kind in ("ReplicaFailure", "Progressing"):
        found = condition(rolled, kind)
        if found is not None:
            return seconds(found.get("lastTransitionTime"))
    return None


def replicas_observation(
    rolled: Manifest | None, look: Look, *, ready: str = "readyReplicas", wanted: int | None = None
) -> Observation:
    """Started: `ready` > 0 of some wanted; Failed: ReplicaFailure or ProgressDeadlineExceeded; Exited
    "0": no replicas wanted and none left; Deleted: gone. `wanted` is spec.replicas (default 1) unless
    given. Scaled to zero with pods still running is stopping, not started: a monitor that begins while
    a stop is under way reports only the exit."""
    if rolled is None:
        return gone(look.describe)
    uid = uid_of(rolled)
    ready_count = count(rolled, ready)
    want = int((rolled.get("spec") or {}).get("replicas", 1)) if wanted is None else wanted
    end: End | None = None
    failure = _failure(rolled)
    if failure is not None:
        end = End(type="ContainerFailed", message=failure, uid=uid, at=_failed_at(rolled))
    elif want == 0 and count(rolled, "replicas") == 0:
        end = End(type="ContainerExited", message=EXIT_SUCCESS, uid=uid)
    available = condition(rolled, "Available")
    return Observation(
        uid=uid,
        started_uid=uid if ready_count > 0 and want > 0 else None,
        started_message=f"ready {ready_count}/{want}",
        started_at=seconds(available.get("lastTransitionTime")) if is_true(available) and available else None,
        end=end,
    )


def observe_replicas(rolled: Manifest | None, look: Look) -> Observation:
    return replicas_observation(rolled, look)


def replicas_ready(rolled: Manifest) -> str:
    """`kubectl get deploy`'s (and `sts`'s) READY: ready replicas over desired ones (`0/0` when scaled
    to zero)."""
    desired = (rolled.get("spec") or {}).get("replicas")
    return f"{count(rolled, 'readyReplicas')}/{1 if desired is None else desired}"


def scale_to_one(handle: Handle) -> str:
    handle.own()
    return handle.scale(1)


def scale_to_zero(handle: Handle) -> str:
    handle.own()
    return handle.scale(0)
