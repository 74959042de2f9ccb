"""`kind: cronjob`: a CronJob whose job template is the Job's spec without the run-key (its runs are the
schedule's, not the plan's, so they carry neither the run-key nor the run-record finalizer).

Its own rules: a schedule is required and must parse as the CronJob controller reads it (`planner.cron`,
the parser the embedded cluster uses too), in a time zone it knows; `TZ=` inside the schedule is refused
as the API server refuses it; and the name leaves room for the 11 characters the controller appends to
name each run's Job (52 at most, as the API server checks).

The monitor follows each run (a Job it owns) on its own; the CronJob itself only ever ends by deletion.
Lifecycle: stop suspends it (a run already started goes on), start unsuspends it, delete takes its runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from planner import cron
from planner.kinds import CRON_JOB, JOB, POD
from planner.objects import Manifest, controlling, owned_by, present
from planner.workloads import job
from planner.workloads.kind import Fields, Handle, Lifecycle, Look, PodInputs, Problem, Runs, WorkloadKind
from planner.workloads.observation import Observation, gone, uid_of

MAX_NAME = 52
FIELDS = (
    "schedule",
    "timeZone",
    "concurrencyPolicy",
    "startingDeadlineSeconds",
    "successfulJobsHistoryLimit",
    "failedJobsHistoryLimit",
    "suspend",
)


@dataclass(frozen=True, kw_only=True)
class CronSchedule:
    """A cronjob's schedule and its CronJob fields (Kubernetes' defaults where None)."""

    schedule: str
    time_zone: str | None = None
    concurrency_policy: Literal["Allow", "Forbid", "Replace"] | None = None
    starting_deadline_seconds: int | None = None
    successful_jobs_history_limit: int | None = None
    failed_jobs_history_limit: int | None = None
    suspend: bool | None = None


@dataclass(frozen=True, kw_only=True)
class CronJobSpec:
    schedule: CronSchedule
    job: job.JobSpec


def parse(item: Mapping[str, Any]) -> CronJobSpec:
    schedule = CronSchedule(
        schedule=item.get("schedule", ""),
        time_zone=item.get("timeZone"),
        concurrency_policy=item.get("concurrencyPolicy"),
        starting_deadline_seconds=item.get("startingDeadlineSeconds"),
        successful_jobs_history_limit=item.get("successfulJobsHistoryLimit"),
        failed_jobs_history_limit=item.get("failedJobsHistoryLimit"),
        suspend=item.get("suspend"),
    )
    return CronJobSpec(schedule=schedule, job=job.parse(item))


def checks(item: Mapping[str, Any]) -> Iterator[Problem]:
    yield from _name(item.get("name"))
    schedule = item.get("schedule")
    if schedule is None:
        message = "a cronjob needs a schedule (cron's five fields, as `0 3 * * *`, or `@daily`)"
        yield Problem(keys=("kind",), message=message, at_value=False)
    elif isinstance(schedule, str):
        yield from _schedule(schedule)
    time_zone = item.get("timeZone")
    if isinstance(time_zone, str):
        try:
            cron.zone(time_zone)
        except cron.CronError:
            message = f"unknown time zone {json.dumps(time_zone)}: expected an IANA name as `Europe/Berlin`"
            yield Problem(keys=("timeZone",), message=message)


def _schedule(schedule: str) -> Iterator[Problem]:
    if "TZ" in schedule:
        message = "TZ= or CRON_TZ= in the schedule is refused by Kubernetes: use timeZone instead"
        yield Problem(keys=("schedule",), message=message)
        return
    try:
        cron.parse(schedule)
    except cron.CronError as exc:
        message = (
            f"bad schedule {json.dumps(schedule)}: {exc} (expected cron's five fields or a macro as @daily)"
        )
        yield Problem(keys=("schedule",), message=message)


def _name(name: object) -> Iterator[Problem]:
    if isinstance(name, str) and MAX_NAME < len(name) <= 63:
        message = (
            f"name is {len(name)} characters, too long for a cronjob: at most {MAX_NAME}, so that "
            "the Job of each run (`<name>-<minutes since the epoch>`) fits in 63"
        )
        yield Problem(keys=("name",), message=message)


def render(spec: CronJobSpec, pod: PodInputs) -> Fields:
    schedule = spec.schedule
    return {
        "schedule": schedule.schedule,
        **present(
            timeZone=schedule.time_zone,
            concurrencyPolicy=schedule.concurrency_policy,
            startingDeadlineSeconds=schedule.starting_deadline_seconds,
            successfulJobsHistoryLimit=schedule.successful_jobs_history_limit,
            failedJobsHistoryLimit=schedule.failed_jobs_history_limit,
            suspend=schedule.suspend,
        ),
        "jobTemplate": {"metadata": {"labels": dict(pod.selector)}, "spec": job.render(spec.job, pod)},
    }


def observe(cronjob: Manifest | None, look: Look) -> Observation:
    """A CronJob itself neither starts nor ends (its runs do, each reported as a Job): only its
    deletion is a fact about it."""
    return gone(look.describe) if cronjob is None else Observation(uid=uid_of(cronjob))


def owning_cronjob(run: Manifest) -> str | None:
    """The name of the CronJob that owns the Job `run`, None when none does."""
    return controlling(run, CRON_JOB)


def runs(name: str, namespace: str, jobs: Iterable[Manifest]) -> list[Manifest]:
    """The Jobs a CronJob started (scheduled or `kubectl create job --from`): those it owns, oldest
    first."""
    return owned_by(CRON_JOB, name, namespace, jobs)


def _suspend(handle: Handle, suspend: bool) -> str:
    handle.own()
    handle.patch({"spec": {"suspend": suspend}})
    return f"{'suspended' if suspend else 'unsuspended'} {handle.describe}"


def delete(handle: Handle, _allow_data_loss: bool) -> str:
    handle.own()
    handle.delete(CRON_JOB, handle.name)
    return f"deleted {handle.describe} (its runs' Jobs are garbage-collected)"


KIND = WorkloadKind[CronJobSpec](
    name="cronjob",
    api=CRON_JOB,
    fields=(*job.FIELDS, *FIELDS),
    parse=parse,
    checks=checks,
    render=render,
    lifecycle=Lifecycle(
        start=lambda handle: _suspend(handle, False),
        stop=lambda handle: _suspend(handle, True),
        delete=delete,
    ),
    observe=observe,
    restart_policy="Never",
    settles="between-runs",
    awaited=False,
    also_read=(POD,),
    runs=Runs(api=JOB, word=job.KIND.name, observe=job.observe, of=runs, owner=owning_cronjob, leads=True),
)
