"""`planner status`: one row per runtime ID with its newest pod as kubectl shows it, computed purely.

READY is what kubectl shows for the workload itself: a Deployment's or StatefulSet's ready replicas
over its desired ones (`kubectl get deploy`, `kubectl get sts`), a Job's or sandbox's newest pod's
ready containers over its containers (a cronjob's: its latest run's, with `kubectl get cronjob`'s
SCHEDULE, SUSPEND, ACTIVE and LAST SCHEDULE).
As READY counts old pods too, its MESSAGE says what `kubectl rollout status` would while
a rollout has not finished (`rollout not finished: updated 1/2`) or has failed.
The other pod columns are what `kubectl get pods` shows for the workload's newest pod (label
`gobrave-workload=<name>`): RESTARTS summed over containers, and STATUS
by kubectl's rules — an init container's trouble or progress first (`Init:ExitCode:1`,
`Init:CrashLoopBackOff`, `Init:1/2`), then the last container's waiting or terminated reason
(`PodInitializing`, `CrashLoopBackOff`, `Completed`, `Error`), `Running` while a container still runs
after another completed, and `Terminating` once deletion started. The lifecycle STATE is the monitor's
own verdict (the state machine shown one snapshot), so `status` and `monitor` never disagree. AGE is
kubectl's short duration of the workload's own object.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from planner import workloads
from planner.ages import human_age
from planner.monitor.lifecycle import primary_object
from planner.monitor.monitor import Lookup, observe
from planner.monitor.state import CREATED, advance
from planner.objects import Manifest, ObjectRef, metadata_of, newest
from planner.render.identity import RuntimeID
from planner.state.applyset import RUN_FINALIZER, holds_run_finalizer
from planner.wait.readiness import RULES, ReadinessContext
from planner.workloads.observation import Observation


@dataclass(frozen=True, kw_only=True)
class PodSummary:
    ready: int
    total: int
    restarts: int
    status: str


def _terminated_reason(terminated: Mapping[str, Any], prefix: str = "") -> str:
    if terminated.get("reason"):
        return f"{prefix}{terminated['reason']}"
    if terminated.get("signal"):
        return f"{prefix}Signal:{terminated['signal']}"
    return f"{prefix}ExitCode:{terminated.get('exitCode', 0)}"


def _init_status(pod: Manifest) -> tuple[str | None, int]:
    """kubectl's verdict from the init containers (None when they are all done) and their restarts."""
    statuses = (pod.get("status") or {}).get("initContainerStatuses") or []
    declared = len((pod.get("spec") or {}).get("initContainers") or [])
    restarts = 0
    for index, container in enumerate(statuses):
        restarts += int(container.get("restartCount") or 0)
        state = container.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if terminated is not None and int(terminated.get("exitCode") or 0) == 0:
            continue
        if container.get("started") and _restartable(pod, str(container.get("name", ""))):
            continue  # a sidecar init container that runs alongside the main containers
        if terminated is not None:
            return _terminated_reason(terminated, "Init:"), restarts
        if waiting is not None and waiting.get("reason") and waiting.get("reason") != "PodInitializing":
            return f"Init:{waiting['reason']}", restarts
        return f"Init:{index}/{declared}", restarts
    return None, restarts


def _restartable(pod: Manifest, name: str) -> bool:
    for container in (pod.get("spec") or {}).get("initContainers") or []:
        if container.get("name") == name:
            return bool(container.get("restartPolicy") == "Always")
    return False


def _condition_true(pod: Manifest, kind: str) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def pod_summary(pod: Manifest) -> PodSummary:
    """READY, RESTARTS and STATUS of one pod, as `kubectl get pods` computes them."""
    status = pod.get("status") or {}
    total = len((pod.get("spec") or {}).get("containers") or [])
    reason = str(status.get("reason") or status.get("phase") or "")
    init_reason, restarts = _init_status(pod)
    ready = 0
    if init_reason is not None:
        reason = init_reason
    if init_reason is None or _condition_true(pod, "Initialized"):
        restarts, running = 0, False
        for container in reversed(status.get("containerStatuses") or []):
            restarts += int(container.get("restartCount") or 0)
            state = container.get("state") or {}
            waiting, terminated = state.get("waiting"), state.get("terminated")
            if waiting is not None and waiting.get("reason"):
                reason = str(waiting["reason"])
            elif terminated is not None:
                reason = _terminated_reason(terminated)
            elif container.get("ready") and state.get("running") is not None:
                running, ready = True, ready + 1
        if reason == "Completed" and running:
            reason = "Running" if _condition_true(pod, "Ready") else "NotReady"
    if metadata_of(pod).get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    return PodSummary(ready=ready, total=total, restarts=restarts, status=reason)


def age_of(obj: Manifest | None, now: float) -> str:
    stamp = metadata_of(obj).get("creationTimestamp")
    if not stamp:
        return "-"
    created = datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    return human_age(now - created)


@dataclass(frozen=True, kw_only=True)
class Schedule:
    """A CronJob's columns as `kubectl get cronjob` shows them: SCHEDULE, SUSPEND, ACTIVE, LAST SCHEDULE."""

    schedule: str
    suspend: str  # "True" or "False"
    active: int
    last_schedule: str  # kubectl's short duration since the last scheduled run, `<none>` before one


@dataclass(frozen=True, kw_only=True)
class StatusRow:
    """One line of `planner status`; `ready`, `restarts` and `status` are None without a pod, `schedule`
    is a cronjob's only."""

    runtime_id: str
    state: str
    ready: str | None
    restarts: int | None
    status: str | None
    age: str
    message: str
    schedule: Schedule | None = None


def schedule_of(cronjob: Manifest, now: float) -> Schedule:
    """kubectl's CronJob columns: the schedule, whether suspended, active runs, the last run's age."""
    spec, status = cronjob.get("spec") or {}, cronjob.get("status") or {}
    last = status.get("lastScheduleTime")
    since = now - datetime.fromisoformat(str(last).replace("Z", "+00:00")).timestamp() if last else None
    return Schedule(
        schedule=str(spec.get("schedule") or ""),
        suspend="True" if spec.get("suspend") else "False",
        active=len(status.get("active") or []),
        last_schedule="<none>" if since is None else human_age(since),
    )


def held_for_its_record(job: Manifest | None) -> str:
    """Why a deleted Job is still there when it waits for planner to record how it ended (else ""), and
    how to let it go."""
    if job is None or not metadata_of(job).get("deletionTimestamp") or not holds_run_finalizer(job):
        return ""
    namespace = metadata_of(job).get("namespace")
    return (
        f"deleted, kept until its outcome is recorded (finalizer {RUN_FINALIZER}): run `planner monitor "
        f"--all -n {namespace} --until-done` or apply its plan"
    )


def status_row(
    runtime_id: str, *, seen: Observation, own: Manifest | None, pod: Manifest | None, now: float
) -> StatusRow:
    """The row for a runtime ID from what the monitor's mapping saw, its own object and its newest pod."""
    state, transitions = advance(CREATED, seen)
    message = transitions[-1].message if transitions else ""
    if held := held_for_its_record(own):
        message = f"{message}; {held}" if message else held
    summary = pod_summary(pod) if pod is not None else None
    ready = f"{summary.ready}/{summary.total}" if summary else None
    kind = workloads.rendered_as(str(own.get("kind"))) if own is not None else None
    if own is not None and kind is not None and kind.ready is not None:
        ready = kind.ready(own)
        message = _rollout_message(own, now) or message
    scheduled = kind is not None and kind.runs is not None and kind.runs.leads
    schedule = schedule_of(own, now) if own is not None and scheduled else None
    if schedule is not None:  # the CronJob itself neither starts nor ends: it schedules, or is suspended
        phase = "suspended" if schedule.suspend == "True" else "scheduled"
    else:
        phase = state.phase
    return StatusRow(
        runtime_id=runtime_id,
        state=phase.capitalize(),
        schedule=schedule,
        ready=ready,
        restarts=summary.restarts if summary else None,
        status=summary.status if summary else None,
        age=age_of(own, now),
        message=message,
    )


def _rollout_message(rolled: Manifest, now: float) -> str | None:
    """What `kubectl rollout status` would say of a rollout that has not finished (or has failed);
    None once it has. READY counts old pods too, so without this a stuck update reads as ready."""
    if (rolled.get("status") or {}).get("observedGeneration") is None:
        return None  # no controller has looked at it yet: nothing has rolled out, nothing to correct
    verdict = RULES[str(rolled.get("kind"))](rolled, ReadinessContext(now=now))
    if verdict.status == "Current":
        return None
    return f"rollout {'failed' if verdict.status == 'Failed' else 'not finished'}: {verdict.message}"


PodsOf = Callable[[str, str], Sequence[Manifest]]  # (namespace, workload name) -> its pods


NOT_CREATED = "NotCreated"
NOT_FOUND = "NotFound"


def status_rows(
    runtime_ids: Iterable[RuntimeID],
    *,
    lookup: Lookup,
    pods_of: PodsOf,
    now: float,
    never_created: frozenset[str] = frozenset(),
) -> list[StatusRow]:
    """A row per runtime ID, reading objects through `lookup(kind, namespace, name)` and a workload's
    pods (label `gobrave-workload=<name>`) through `pods_of`. An absent object that `never_created`
    names (`deployment/ns/web`: its plan's last apply failed or skipped its create) is `NotCreated`,
    not `Deleted`: nothing was ever there to delete. Any other absent one is `NotFound`: one snapshot
    cannot tell a workload deleted from one that never existed (a mistyped runtime ID), which the
    monitor's `Deleted`, seen going, would claim."""
    rows = []
    for rid in runtime_ids:
        seen, _ = observe(rid, lookup)
        kind, name = primary_object(rid)
        own = lookup(kind, rid.namespace, name)
        pod = newest(pods_of(rid.namespace, rid.name))
        row = status_row(str(rid), seen=seen, own=own, pod=pod, now=now)
        ref = str(ObjectRef.of(kind, name, rid.namespace))
        if own is None and ref in never_created:
            message = f"{ref} was never created: the plan's last apply failed or skipped it"
            row = dataclasses.replace(row, state=NOT_CREATED, message=message)
        elif own is None and seen.end is not None and seen.end.type == "ContainerDeleted":
            message = f"{rid.kind} {rid.namespace}/{rid.name} not found"
            row = dataclasses.replace(row, state=NOT_FOUND, message=message)
        rows.append(row)
    return rows
