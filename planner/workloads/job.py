"""`kind: job`: a Job that runs once per change of what it runs (its run-key), its pods never restarted.

Lifecycle: start only checks it exists (a deleted Job is not restartable as the same workload); stop and
delete delete it with Foreground propagation and release its run-record finalizer.

A Job fails on its `Failed` condition, not on `status.failed > 0` as gobrave's table has it: a Job whose
pod failed once is still retrying until its backoffLimit, and the condition is what the Job controller
sets when it gives up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from planner.kinds import JOB, POD
from planner.objects import Manifest, present
from planner.workloads.kind import Fields, Handle, Lifecycle, Look, PodInputs, WorkloadKind
from planner.workloads.observation import (
    EXIT_SUCCESS,
    RUN_FAILED,
    End,
    Observation,
    condition,
    count,
    gone,
    is_true,
    reason_text,
    seconds,
    status_of,
    uid_of,
)

FIELDS = ("backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished")


@dataclass(frozen=True, kw_only=True)
class JobSpec:
    backoff_limit: int | None = None
    active_deadline_seconds: int | None = None
    ttl_seconds_after_finished: int | None = None


def parse(item: Mapping[str, Any]) -> JobSpec:
    return JobSpec(
        backoff_limit=item.get("backoffLimit"),
        active_deadline_seconds=item.get("activeDeadlineSeconds"),
        ttl_seconds_after_finished=item.get("ttlSecondsAfterFinished"),
    )


def render(spec: JobSpec, pod: PodInputs) -> Fields:
    """No selector: the server generates one."""
    return {
        "template": pod.template,
        **present(
            backoffLimit=spec.backoff_limit,
            activeDeadlineSeconds=spec.active_deadline_seconds,
            ttlSecondsAfterFinished=spec.ttl_seconds_after_finished,
        ),
    }


def observe(job: Manifest | None, look: Look) -> Observation:
    """Started: active > 0, startTime set, or already succeeded or failed; Exited "0": succeeded > 0;
    Failed: the `Failed` condition is True (its message, and the exit code its pods show); Deleted: gone."""
    if job is None:
        return gone(look.describe)
    uid = uid_of(job)
    failed = condition(job, "Failed")
    started = count(job, "active") > 0 or bool(status_of(job).get("startTime")) or count(job, "succeeded") > 0
    end: End | None = None
    if failed is not None and is_true(failed):
        started = True
        end = End(
            type="ContainerFailed",
            message=reason_text(failed, RUN_FAILED),
            uid=uid,
            exit_code=look.exit_code(job),
            at=seconds(failed.get("lastTransitionTime")),
        )
    elif count(job, "succeeded") > 0:
        end = End(
            type="ContainerExited",
            message=EXIT_SUCCESS,
            uid=uid,
            at=seconds(status_of(job).get("completionTime")),
        )
    return Observation(
        uid=uid,
        started_uid=uid if started else None,
        started_message=f"active {count(job, 'active')}, succeeded {count(job, 'succeeded')}",
        started_at=seconds(status_of(job).get("startTime")),
        end=end,
    )


def start(handle: Handle) -> str:
    handle.own(why=": a deleted Job is not restartable as the same workload; apply its plan to run it")
    return f"{handle.describe} exists"


def stop(handle: Handle) -> str:
    handle.own()
    handle.delete_run()
    return f"deleted {handle.describe} (Foreground)"


def delete(handle: Handle, _allow_data_loss: bool) -> str:
    handle.own()
    handle.delete_run()
    return f"deleted {handle.describe} (Foreground)"


KIND = WorkloadKind[JobSpec](
    name="job",
    api=JOB,
    fields=FIELDS,
    parse=parse,
    render=render,
    lifecycle=Lifecycle(start=start, stop=stop, delete=delete),
    observe=observe,
    restart_policy="Never",
    runs_once=True,
    settles="ended",
    also_read=(POD,),
)
