"""Kubernetes state → lifecycle facts beyond one workload kind's look: a Job known only from its run
record, sandboxes, and which runtime ID a managed object stands for. Each workload kind's own look is
its module's `observe` (`planner.workloads`); the facts are `planner.workloads.observation`'s.

A sandbox is three objects: its Pod, its workspace PVC (which carries `planner.dev/sandbox-state` and the
rendered Pod) and its rootfs PVC of the current generation. A Pod that is gone while the state is still
`running` is a rebase (or a pod being recreated) and proves nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from planner import workloads
from planner.errors import RuntimeIDError
from planner.kinds import PERSISTENT_VOLUME_CLAIM
from planner.objects import (
    ANNOTATION_POD_SPEC,
    ANNOTATION_RUNTIME_ID,
    ANNOTATION_SANDBOX_STATE,
    LABEL_WORKLOAD,
    Manifest,
    annotations_of,
    labels_of,
    metadata_of,
)
from planner.plan.names import workspace_pvc_name
from planner.render.identity import RuntimeID
from planner.state.applyset import RESULT_SUCCEEDED, RunRecord, run_outcome
from planner.workloads.kind import Look, Observe
from planner.workloads.observation import (
    EXIT_SUCCESS,
    RUN_FAILED,
    End,
    Observation,
    condition,
    gone,
    status_of,
    uid_of,
)

ROOTFS_VOLUME = "rootfs"
EXIT_PAUSED = "paused"


# --- Job -------------------------------------------------------------------------------------------


def workload_observation(
    observe: Observe,
    own: Manifest | None,
    *,
    describe: str,
    recorded: RunRecord | None = None,
    pods: Callable[[], Iterable[Manifest]] = tuple,
) -> Observation:
    """What a kind's look (`observe`, `planner.workloads`) at its object `own` proves, the exit code of
    a failed run from its `pods()`; a run that is gone is judged by its run record (`recorded`) when that says how
    it ended, which then proves what a look at the Job would have."""
    if own is None and recorded is not None and recorded.outcome:
        return _recorded_run(recorded, describe)

    def exit_code(failed: Manifest) -> int | None:
        outcome = run_outcome(failed, pods())
        return outcome.exit_code if outcome is not None else None

    return observe(own, Look(describe=describe, exit_code=exit_code))


def _recorded_run(record: RunRecord, describe: str) -> Observation:
    """A finished Job as its run record tells it: the ids use the uid it recorded, the messages are those
    a look at the finished Job gives (`0`, or the Failed condition's message, else its reason)."""
    outcome = record.outcome
    if outcome is None or not record.uid:
        return gone(describe)
    if outcome.result == RESULT_SUCCEEDED:
        end = End(type="ContainerExited", message=EXIT_SUCCESS, uid=record.uid)
    else:
        end = End(
            type="ContainerFailed",
            message=outcome.message or outcome.reason or RUN_FAILED,
            uid=record.uid,
            exit_code=outcome.exit_code,
        )
    started = f"{describe} ran (from its run record)"
    return Observation(uid=record.uid, started_uid=record.uid, started_message=started, end=end)


# --- Sandbox ---------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class SandboxObjects:
    """The live parts of one sandbox; None where an object does not exist (or its name is unknown)."""

    pod: Manifest | None = None
    workspace: Manifest | None = None
    rootfs: Manifest | None = None


def sandbox_state(workspace: Manifest | None) -> str | None:
    """`running` or `paused` from the workspace PVC's annotation; None without one."""
    if workspace is None:
        return None
    state = annotations_of(workspace).get(ANNOTATION_SANDBOX_STATE)
    return str(state) if state else None


def recorded_pod(workspace: Manifest | None) -> dict[str, Any] | None:
    """The rendered Pod the workspace PVC records (`planner.dev/pod-spec`), None when absent or broken."""
    if workspace is None:
        return None
    text = annotations_of(workspace).get(ANNOTATION_POD_SPEC)
    try:
        pod = json.loads(text) if text else None
    except ValueError:
        return None
    return pod if isinstance(pod, dict) else None


def rootfs_claim(pod: Manifest | None) -> str | None:
    """The claim name of a sandbox Pod's `rootfs` volume: the rootfs PVC of its current generation."""
    for volume in ((pod or {}).get("spec") or {}).get("volumes") or []:
        if volume.get("name") == ROOTFS_VOLUME:
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            return str(claim) if claim else None
    return None


def pod_ready(pod: Manifest) -> bool:
    """Whether the Pod's Ready condition is True."""
    ready = condition(pod, "Ready")
    return ready is not None and ready.get("status") == "True"


def _pod_failure(pod: Manifest) -> str | None:
    if status_of(pod).get("phase") != "Failed":
        return None
    status = status_of(pod)
    return str(status.get("message") or status.get("reason") or "pod failed")


def _lost_claim(objects: SandboxObjects) -> Manifest | None:
    for claim in (objects.workspace, objects.rootfs):
        if claim is not None and status_of(claim).get("phase") == "Lost":
            return claim
    return None


def _claim_name(claim: Manifest) -> str:
    return str(metadata_of(claim).get("name", ""))


def sandbox_observation(objects: SandboxObjects, *, describe: str = "sandbox") -> Observation:
    """Started: Pod Ready; Exited "paused": state `paused` and the Pod gone or terminating (a pause
    marks the state, then deletes the Pod: its kubelet may still report it Ready for its grace period);
    Failed: Pod Failed or a PVC Lost; Deleted: Pod and PVCs gone; Pod gone while state `running`:
    nothing (a rebase)."""
    pod, workspace = objects.pod, objects.workspace
    uid = uid_of(workspace) if workspace is not None else None
    if pod is None and workspace is None and objects.rootfs is None:
        return gone(describe)
    paused = sandbox_state(workspace) == EXIT_PAUSED
    if pod is not None and paused and metadata_of(pod).get("deletionTimestamp"):
        pod = None  # going: a pause took it
    started_uid = uid_of(pod) if pod is not None and pod_ready(pod) else None
    lost = _lost_claim(objects)
    failure = _pod_failure(pod) if pod is not None else None
    end: End | None = None
    if lost is not None:
        end = End(
            type="ContainerFailed",
            message=f"PersistentVolumeClaim {_claim_name(lost)} is Lost",
            uid=uid_of(lost),
        )
    elif pod is not None and failure is not None:
        end = End(type="ContainerFailed", message=failure, uid=uid_of(pod))
    elif pod is None and paused:
        end = End(type="ContainerExited", message=EXIT_PAUSED)
    node = str(((pod or {}).get("spec") or {}).get("nodeName") or "")
    message = "" if pod is None else f"pod Ready on {node}" if node else "pod Ready"
    return Observation(uid=uid, started_uid=started_uid, started_message=message, end=end)


# --- Managed workloads (restart recovery) ----------------------------------------------------------


def _runtime_kind_of(obj: Manifest) -> str | None:
    """The runtime ID kind an object of this API kind is the primary object of."""
    if obj.get("kind") == PERSISTENT_VOLUME_CLAIM.kind:
        return workloads.SANDBOX
    kind = workloads.rendered_as(str(obj.get("kind", "")))
    return kind.name if kind is not None else None


def managed_runtime_id(obj: Manifest, *, default_runtime: str = "k8s") -> RuntimeID | None:
    """The runtime ID a managed object stands for: a Deployment, StatefulSet, Job or CronJob labelled
    `gobrave-workload` and named after it (a cronjob's runs are not: they are its own), or a
    sandbox's workspace PVC; its `planner.dev/runtime-id` annotation when that parses, else built from
    the label (objects gobrave created carry no annotation). None for anything else."""
    metadata = metadata_of(obj)
    workload = labels_of(obj).get(LABEL_WORKLOAD)
    kind = _runtime_kind_of(obj)
    if not workload or kind is None or metadata.get("name") != _primary_name(kind, str(workload)):
        return None
    annotated = annotations_of(obj).get(ANNOTATION_RUNTIME_ID)
    text = str(annotated) if annotated else f"{default_runtime}-{metadata.get('namespace')}|{kind}|{workload}"
    try:
        return RuntimeID.parse(text)
    except RuntimeIDError:
        return None


def _primary_name(kind: str, workload: str) -> str:
    return workspace_pvc_name(workload) if kind == workloads.SANDBOX else workload
