"""Kubernetes state → lifecycle facts, per kind: pure functions over live objects.

Each function looks at a workload once and says what that look proves: whether it has started (and
which object's uid the Started event names) and whether it has ended (Exited, Failed or Deleted, with
the message gobrave's monitor gives). It never says what to emit: `state.py` turns facts into transitions,
so the same look can be taken any number of times (every watch event, the snapshot after registering,
a restart) and each transition is still reported once.

Where this departs from gobrave's table: a Job fails on its `Failed` condition, not on
`status.failed > 0`, because a Job whose pod failed once is still retrying until its backoffLimit; the
condition is what the Job controller sets when it gives up.

A sandbox is three objects: its Pod, its workspace PVC (which carries `planner.dev/sandbox-state` and the
rendered Pod) and its rootfs PVC of the current generation. A Pod that is gone while the state is still
`running` is a rebase (or a pod being recreated) and proves nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from planner.errors import RuntimeIDError
from planner.kinds import CRON_JOB, DEPLOYMENT, JOB, PERSISTENT_VOLUME_CLAIM, STATEFUL_SET
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

EndType = Literal["ContainerExited", "ContainerFailed", "ContainerDeleted"]

ROOTFS_VOLUME = "rootfs"
EXIT_SUCCESS = "0"
EXIT_PAUSED = "paused"
JOB_FAILED = "job failed"


@dataclass(frozen=True, kw_only=True)
class End:
    """The workload ended. `uid` names the object the event is about; None lets the state machine use
    the last uid it saw (an object that is gone has none to read)."""

    type: EndType
    message: str
    uid: str | None = None
    exit_code: int | None = None  # a failed Job's container's
    at: float | None = None  # when, by the object's own timestamps (a replayed end keeps its time)


@dataclass(frozen=True, kw_only=True)
class Observation:
    """What one look at a workload proves. `uid` is the workload's own object (Deployment, Job, the
    sandbox's workspace PVC) when it exists; `started_uid` is set once the workload is known to run."""

    uid: str | None = None
    started_uid: str | None = None
    started_message: str = ""
    started_at: float | None = None  # when, by the object's own timestamps
    end: End | None = None


NOTHING = Observation()


def _uid(obj: Manifest) -> str:
    return str(metadata_of(obj).get("uid") or "")


def _status(obj: Manifest) -> Mapping[str, Any]:
    return obj.get("status") or {}


def _count(obj: Manifest, field: str) -> int:
    return int(_status(obj).get(field) or 0)


def _condition(obj: Manifest, kind: str) -> Mapping[str, Any] | None:
    for condition in _status(obj).get("conditions") or []:
        if condition.get("type") == kind:
            return dict(condition)
    return None


def _reason_text(condition: Mapping[str, Any], fallback: str) -> str:
    return str(condition.get("message") or condition.get("reason") or fallback)


def _time(stamp: object) -> float | None:
    """Seconds since the epoch of an RFC 3339 timestamp the API server wrote; None when there is none."""
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _gone(what: str) -> Observation:
    return Observation(end=End(type="ContainerDeleted", message=f"{what} is gone"))


# --- Job -------------------------------------------------------------------------------------------


def job_observation(
    job: Manifest | None,
    *,
    describe: str = "job",
    recorded: RunRecord | None = None,
    pods: Callable[[], Iterable[Manifest]] = tuple,
) -> Observation:
    """Started: active > 0, startTime set, or already succeeded; Exited "0": succeeded > 0; Failed: the
    `Failed` condition is True (its message, and the exit code its `pods()` show); Deleted: gone —
    unless its run record (`recorded`) says how it ended, which then proves what a look at the Job
    would have."""
    if job is None:
        return _recorded_run(recorded, describe) if recorded and recorded.outcome else _gone(describe)
    uid = _uid(job)
    failed = _condition(job, "Failed")
    started = (
        _count(job, "active") > 0
        or bool(_status(job).get("startTime"))
        or _count(job, "succeeded") > 0
        or (failed is not None and failed.get("status") == "True")
    )
    started_uid = uid if started else None
    message = f"active {_count(job, 'active')}, succeeded {_count(job, 'succeeded')}"
    end: End | None = None
    if failed is not None and failed.get("status") == "True":
        outcome = run_outcome(job, pods())
        code = outcome.exit_code if outcome is not None else None
        end = End(
            type="ContainerFailed",
            message=_reason_text(failed, JOB_FAILED),
            uid=uid,
            exit_code=code,
            at=_time(failed.get("lastTransitionTime")),
        )
    elif _count(job, "succeeded") > 0:
        end = End(
            type="ContainerExited",
            message=EXIT_SUCCESS,
            uid=uid,
            at=_time(_status(job).get("completionTime")),
        )
    started_at = _time(_status(job).get("startTime"))
    return Observation(
        uid=uid, started_uid=started_uid, started_message=message, started_at=started_at, end=end
    )


def _recorded_run(record: RunRecord, describe: str) -> Observation:
    """A finished Job as its run record tells it: the ids use the uid it recorded, the messages are those
    a look at the finished Job gives (`0`, or the Failed condition's message, else its reason)."""
    outcome = record.outcome
    if outcome is None or not record.uid:
        return _gone(describe)
    if outcome.result == RESULT_SUCCEEDED:
        end = End(type="ContainerExited", message=EXIT_SUCCESS, uid=record.uid)
    else:
        end = End(
            type="ContainerFailed",
            message=outcome.message or outcome.reason or JOB_FAILED,
            uid=record.uid,
            exit_code=outcome.exit_code,
        )
    started = f"{describe} ran (from its run record)"
    return Observation(uid=record.uid, started_uid=record.uid, started_message=started, end=end)


# --- CronJob ---------------------------------------------------------------------------------------


def cronjob_observation(cronjob: Manifest | None, *, describe: str = "cronjob") -> Observation:
    """A CronJob itself neither starts nor ends (its runs do, each reported as a Job): only its
    deletion is a fact about it."""
    return _gone(describe) if cronjob is None else Observation(uid=_uid(cronjob))


def cronjob_runs(cronjob_name: str, namespace: str, jobs: Iterable[Manifest]) -> list[Manifest]:
    """The Jobs a CronJob started (scheduled or `kubectl create job --from`): those it owns, oldest
    first."""
    runs = [
        job
        for job in jobs
        if metadata_of(job).get("namespace") == namespace and owning_cronjob(job) == cronjob_name
    ]
    return sorted(runs, key=lambda job: (str(metadata_of(job).get("creationTimestamp") or ""), _name(job)))


def owning_cronjob(job: Manifest) -> str | None:
    """The name of the CronJob that owns `job`, None when none does."""
    for owner in metadata_of(job).get("ownerReferences") or []:
        if owner.get("kind") == CRON_JOB.kind and str(owner.get("apiVersion", "")).startswith("batch/"):
            return str(owner.get("name"))
    return None


def _name(obj: Manifest) -> str:
    return str(metadata_of(obj).get("name") or "")


# --- Deployment ------------------------------------------------------------------------------------


def _deployment_failure(deployment: Manifest) -> str | None:
    replica_failure = _condition(deployment, "ReplicaFailure")
    if replica_failure is not None and replica_failure.get("status") == "True":
        return _reason_text(replica_failure, "ReplicaFailure")
    progressing = _condition(deployment, "Progressing")
    if progressing is not None and progressing.get("reason") == "ProgressDeadlineExceeded":
        return _reason_text(progressing, "ProgressDeadlineExceeded")
    return None


def deployment_observation(deployment: Manifest | None, *, describe: str = "deployment") -> Observation:
    """A Deployment's, or a StatefulSet's (the same counts, no failure conditions). Started: readyReplicas > 0; Failed: ReplicaFailure or ProgressDeadlineExceeded; Exited "0":
    spec.replicas == 0 and status.replicas == 0; Deleted: gone."""
    if deployment is None:
        return _gone(describe)
    uid = _uid(deployment)
    ready = _count(deployment, "readyReplicas")
    wanted = int((deployment.get("spec") or {}).get("replicas", 1))
    started_uid = uid if ready > 0 else None
    message = f"ready {ready}/{wanted}"
    end: End | None = None
    failure = _deployment_failure(deployment)
    if failure is not None:
        end = End(type="ContainerFailed", message=failure, uid=uid, at=_failed_at(deployment))
    elif wanted == 0 and _count(deployment, "replicas") == 0:
        end = End(type="ContainerExited", message=EXIT_SUCCESS, uid=uid)
    available = _condition(deployment, "Available")
    started_at = (
        _time(available.get("lastTransitionTime"))
        if available and available.get("status") == "True"
        else None
    )
    return Observation(
        uid=uid, started_uid=started_uid, started_message=message, started_at=started_at, end=end
    )


def _failed_at(deployment: Manifest) -> float | None:
    for kind in ("ReplicaFailure", "Progressing"):
        condition = _condition(deployment, kind)
        if condition is not None:
            return _time(condition.get("lastTransitionTime"))
    return None


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
    ready = _condition(pod, "Ready")
    return ready is not None and ready.get("status") == "True"


def _pod_failure(pod: Manifest) -> str | None:
    if _status(pod).get("phase") != "Failed":
        return None
    status = _status(pod)
    return str(status.get("message") or status.get("reason") or "pod failed")


def _lost_claim(objects: SandboxObjects) -> Manifest | None:
    for claim in (objects.workspace, objects.rootfs):
        if claim is not None and _status(claim).get("phase") == "Lost":
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
    uid = _uid(workspace) if workspace is not None else None
    if pod is None and workspace is None and objects.rootfs is None:
        return _gone(describe)
    paused = sandbox_state(workspace) == EXIT_PAUSED
    if pod is not None and paused and metadata_of(pod).get("deletionTimestamp"):
        pod = None  # going: a pause took it
    started_uid = _uid(pod) if pod is not None and pod_ready(pod) else None
    lost = _lost_claim(objects)
    failure = _pod_failure(pod) if pod is not None else None
    end: End | None = None
    if lost is not None:
        end = End(
            type="ContainerFailed",
            message=f"PersistentVolumeClaim {_claim_name(lost)} is Lost",
            uid=_uid(lost),
        )
    elif pod is not None and failure is not None:
        end = End(type="ContainerFailed", message=failure, uid=_uid(pod))
    elif pod is None and paused:
        end = End(type="ContainerExited", message=EXIT_PAUSED)
    node = str(((pod or {}).get("spec") or {}).get("nodeName") or "")
    message = "" if pod is None else f"pod Ready on {node}" if node else "pod Ready"
    return Observation(uid=uid, started_uid=started_uid, started_message=message, end=end)


# --- Managed workloads (restart recovery) ----------------------------------------------------------

_RUNTIME_KIND_OF = {
    DEPLOYMENT.kind: "deployment",
    STATEFUL_SET.kind: "statefulset",
    JOB.kind: "job",
    CRON_JOB.kind: "cronjob",
    PERSISTENT_VOLUME_CLAIM.kind: "sandbox",
}


def managed_runtime_id(obj: Manifest, *, default_runtime: str = "k8s") -> RuntimeID | None:
    """The runtime ID a managed object stands for: a Deployment, StatefulSet, Job or CronJob labelled
    `gobrave-workload` and named after it (a cronjob's runs are not: they are its own), or a
    sandbox's workspace PVC; its `planner.dev/runtime-id` annotation when that parses, else built from
    the label (objects gobrave created carry no annotation). None for anything else."""
    metadata = metadata_of(obj)
    workload = labels_of(obj).get(LABEL_WORKLOAD)
    kind = _RUNTIME_KIND_OF.get(str(obj.get("kind", "")))
    if not workload or kind is None or metadata.get("name") != _primary_name(kind, str(workload)):
        return None
    annotated = annotations_of(obj).get(ANNOTATION_RUNTIME_ID)
    text = str(annotated) if annotated else f"{default_runtime}-{metadata.get('namespace')}|{kind}|{workload}"
    try:
        return RuntimeID.parse(text)
    except RuntimeIDError:
        return None


def _primary_name(kind: str, workload: str) -> str:
    return workspace_pvc_name(workload) if kind == "sandbox" else workload
