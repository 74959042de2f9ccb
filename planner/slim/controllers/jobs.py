"""Job → Pods, as kube-controller-manager's job controller (NonIndexed completion mode).

Pods `<job>-<5 chars>` carry the `batch.kubernetes.io/job-tracking` finalizer; a finished pod is
counted into `status.succeeded`/`failed` and only then loses the finalizer, so a pod deleted right
after finishing is still counted once. Up to `parallelism` pods run while completions remain; a new
pod after failures waits the backoff (10 s doubling, capped at 6 min, scaled). The Job finishes
with SuccessCriteriaMet + Complete once `completions` pods succeeded, or FailureTarget + Failed with
BackoffLimitExceeded (more failures than `backoffLimit`) or DeadlineExceeded (`activeDeadlineSeconds`
after startTime), deleting its active pods. `ttlSecondsAfterFinished` deletes a finished Job.
"""

from __future__ import annotations

import copy
from typing import Any

from planner.slim.api import Api
from planner.slim.controllers.base import (
    BURST_PODS,
    KindController,
    deleting,
    from_template,
    key,
    name_of,
    uid_of,
)
from planner.slim.controllers.deployments import pod_ready
from planner.slim.controllers.gc import JOB_TRACKING
from planner.slim.meta import epoch_of, rfc3339
from planner.slim.reconcilers import RETRY_SECONDS, Key, Scale
from planner.slim.store import WatchEvent

Obj = dict[str, Any]
BACKOFF_START = 10.0
BACKOFF_CAP = 360.0


def finished_condition(job: Obj) -> str | None:
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return str(condition["type"])
    return None


def _condition(kind: str, reason: str, message: str, stamp: str) -> Obj:
    return {
        "type": kind,
        "status": "True",
        "lastProbeTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": message,
    }


def _restarts(pods: list[Obj]) -> int:
    return sum(
        int(s.get("restartCount", 0))
        for p in pods
        for s in [*((p.get("status") or {}).get("containerStatuses") or [])]
    )


class JobController(KindController):
    kind = "Job"
    recorder = "job-controller"
    controls = ("Pod",)
    syncs_deleting = True

    def __init__(self, api: Api, scale: Scale) -> None:
        super().__init__(api, scale)
        self.last_failure: dict[str, float] = {}

    def observe(self, event: WatchEvent) -> list[Key]:
        if event.resource == key("Job") and event.type == "DELETED":
            self.last_failure.pop(uid_of(event.obj), None)
        return super().observe(event)

    def reconcile(self, stored: Obj, now: float) -> float | None:
        pods = self.controlled.of("Pod", stored)
        job = copy.deepcopy(stored)  # _write refreshes it in place after each status write
        if deleting(job):
            for pod in pods:
                self.writer.remove_finalizer("Pod", pod, JOB_TRACKING)
            return None
        status = copy.deepcopy(job.get("status") or {})
        self._count_finished(job, pods, status, now)
        finished = finished_condition({"status": status})
        active = [
            p
            for p in pods
            if not deleting(p) and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        ]
        if finished:
            return self._after_finish(job, active, status, now)
        spec = job.get("spec") or {}
        if spec.get("suspend"):
            status["active"] = 0
            for pod in active:
                self.writer.delete("Pod", pod)
            self._write(job, status)
            return None
        status.setdefault("startTime", rfc3339(now))
        failure = self._failure(job, status, now, restarts=_restarts(active))
        if failure is not None:
            reason, message = failure
            stamp = rfc3339(now)
            status["conditions"] = [
                *(status.get("conditions") or []),
                _condition("FailureTarget", reason, message, stamp),
                _condition("Failed", reason, message, stamp),
            ]
            for pod in active:
                self.writer.delete("Pod", pod)
            self.event(job, "Warning", reason, message)
            return self._after_finish(job, [], status, now)
        completions = spec.get("completions")
        succeeded = int(status.get("succeeded", 0))
        if (completions is not None and succeeded >= int(completions)) or (
            completions is None and succeeded > 0 and not active
        ):
            stamp = rfc3339(now)
            status["conditions"] = [
                *(status.get("conditions") or []),
                _condition(
                    "SuccessCriteriaMet",
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                    stamp,
                ),
                _condition(
                    "Complete", "CompletionsReached", "Reached expected number of succeeded pods", stamp
                ),
            ]
            status["completionTime"] = stamp
            self.event(job, "Normal", "Completed", "Job completed")
            return self._after_finish(job, active, status, now)
        due = self._start_pods(job, active, status, now)
        status["active"] = len(active) + int(status.pop("_started", 0))
        status["ready"] = sum(1 for p in active if pod_ready(p))
        status["uncountedTerminatedPods"] = {}
        self._write(job, status)
        deadline = spec.get("activeDeadlineSeconds")
        started = epoch_of(status.get("startTime"))
        if deadline is not None and started is not None:
            limit = started + self.scale(float(deadline))
            due = min(d for d in (due, limit) if d is not None)
        return due

    def _count_finished(self, job: Obj, pods: list[Obj], status: Obj, now: float) -> None:
        for pod in pods:
            phase = (pod.get("status") or {}).get("phase")
            tracked = JOB_TRACKING in (pod["metadata"].get("finalizers") or [])
            if not tracked:
                continue
            if phase == "Succeeded":
                status["succeeded"] = int(status.get("succeeded", 0)) + 1
            elif phase == "Failed" or deleting(pod):
                status["failed"] = int(status.get("failed", 0)) + 1
                self.last_failure[uid_of(job)] = now
            else:
                continue
            self._write(job, status)
            self.writer.remove_finalizer("Pod", pod, JOB_TRACKING)

    def _failure(self, job: Obj, status: Obj, now: float, *, restarts: int) -> tuple[str, str] | None:
        """Why the Job fails now, if it does; container restarts count as failures (restartPolicy
        OnFailure restarts in place instead of failing the pod)."""
        spec = job.get("spec") or {}
        if int(status.get("failed", 0)) + restarts > int(spec.get("backoffLimit", 6)):
            return "BackoffLimitExceeded", "Job has reached the specified backoff limit"
        deadline = spec.get("activeDeadlineSeconds")
        started = epoch_of(status.get("startTime"))
        if deadline is not None and started is not None and now >= started + self.scale(float(deadline)):
            return "DeadlineExceeded", "Job was active longer than specified deadline"
        return None

    def _start_pods(self, job: Obj, active: list[Obj], status: Obj, now: float) -> float | None:
        spec = job.get("spec") or {}
        parallelism = int(spec.get("parallelism", 1))
        completions = spec.get("completions")
        remaining = parallelism if completions is None else int(completions) - int(status.get("succeeded", 0))
        wanted = max(min(parallelism, remaining) - len(active), 0)
        if wanted == 0:
            return None
        failed = int(status.get("failed", 0))
        if failed:
            delay = self.scale(min(BACKOFF_START * 2 ** (failed - 1), BACKOFF_CAP))
            ready_at = self.last_failure.get(uid_of(job), 0.0) + delay
            if now < ready_at:
                return ready_at
        started = sum(1 for _ in range(min(wanted, BURST_PODS)) if self._create_pod(job))
        status["_started"] = started
        return None if started == wanted else now + RETRY_SECONDS

    def _create_pod(self, job: Obj) -> bool:
        template = (job.get("spec") or {}).get("template") or {}
        pod = from_template(job, "Job", template, "Pod", generateName=f"{name_of(job)}-")
        metadata = pod["metadata"]
        metadata["finalizers"] = [*(metadata.get("finalizers") or []), JOB_TRACKING]  # the template's kept
        return self.create_pod(job, pod) is None

    def _after_finish(self, job: Obj, active: list[Obj], status: Obj, now: float) -> float | None:
        status["active"] = len(active)
        status["ready"] = sum(1 for p in active if pod_ready(p))
        status["uncountedTerminatedPods"] = {}
        self._write(job, status)
        ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
        if ttl is None:
            return None
        finished_at = epoch_of(
            next(
                (
                    c.get("lastTransitionTime")
                    for c in status.get("conditions") or []
                    if c.get("type") in ("Complete", "Failed")
                ),
                None,
            )
        )
        expires = (finished_at or now) + self.scale(float(ttl))
        if now >= expires:
            self.writer.delete("Job", job, policy="Foreground")  # as the TTL-after-finished controller
            return None
        return expires

    def _write(self, job: Obj, status: Obj) -> None:
        clean = {k: v for k, v in status.items() if not k.startswith("_")}
        written = self.writer.write_status("Job", job, clean)
        if written is not None and written is not job:  # unchanged: write_status hands back `job` itself
            job.clear()
            job.update(written)
