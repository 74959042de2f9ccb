"""CronJob → Jobs on schedule, as kube-controller-manager's cronjob controller (v2).

At each scheduled time a Job `<cronjob>-<scheduled time in Unix minutes>` is created from
`jobTemplate`, owned by the CronJob and annotated `batch.kubernetes.io/cronjob-scheduled-timestamp`;
only the most recent missed time runs, and not at all once `startingDeadlineSeconds` have passed
since it. `concurrencyPolicy` Forbid skips a time while a Job is active, Replace deletes the active
ones first. Finished Jobs beyond `successfulJobsHistoryLimit`/`failedJobsHistoryLimit` are deleted,
oldest first. `suspend` stops new runs. Status: `active` (object references), `lastScheduleTime`,
`lastSuccessfulTime`.

Time scale: the schedule runs on a clock of its own that starts at the CronJob's creationTimestamp
and runs 1/F times as fast as the wall clock under `--time-scale F` (`ScheduleClock`), so a
`*/1 * * * *` CronJob runs every 3 s at F = 0.05. Job names and the annotation are times on that
clock; `lastScheduleTime` is the wall-clock moment the run was due, rounded up to the second (so that
it reads back as at or after the scheduled time, never before: runs at least a schedule minute apart
stay distinct while F ≥ 1/60). At F = 1 both clocks are the wall clock.
"""

from __future__ import annotations

import copy
import math
from datetime import UTC, datetime
from typing import Any

from planner import cron
from planner.slim import status_errors
from planner.slim.controllers.base import (
    KindController,
    deleting,
    from_template,
    key,
    name_of,
    ns_of,
    rt,
    uid_of,
)
from planner.slim.controllers.jobs import finished_condition
from planner.slim.meta import epoch_of, rfc3339

Obj = dict[str, Any]
SCHEDULED_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
COMPONENT = "cronjob-controller"


def job_name(cronjob_name: str, scheduled: float) -> str:
    return f"{cronjob_name}-{int(scheduled // 60)}"


def scheduled_stamp(scheduled: float, zone: Any) -> str:
    """RFC 3339 in the schedule's zone, as Go formats it (`Z` for a zero offset)."""
    return datetime.fromtimestamp(scheduled, UTC).astimezone(zone).isoformat().replace("+00:00", "Z")


class ScheduleClock:
    """The CronJob's schedule clock: from `anchor` on, `factor` wall seconds per schedule second."""

    def __init__(self, anchor: float, factor: float) -> None:
        self.anchor = anchor
        self.factor = factor if factor > 0 else 1.0

    def schedule_time(self, wall: float) -> float:
        return self.anchor + (wall - self.anchor) / self.factor

    def wall_time(self, scheduled: float) -> float:
        return self.anchor + (scheduled - self.anchor) * self.factor


def due_run(schedule: cron.Schedule, earliest: float, now: float) -> float | None:
    """The most recent scheduled time in (earliest, now], the one a sync starts (older ones are missed)."""
    latest = schedule.latest_at_or_before(datetime.fromtimestamp(now, UTC))
    if latest is None or latest.timestamp() <= earliest:
        return None
    return latest.timestamp()


def _reference(job: Obj) -> Obj:
    return {
        "kind": "Job",
        "namespace": ns_of(job),
        "name": name_of(job),
        "uid": uid_of(job),
        "apiVersion": "batch/v1",
        "resourceVersion": job["metadata"].get("resourceVersion"),
    }


class CronJobController(KindController):
    kind = "CronJob"
    recorder = COMPONENT
    controls = ("Job",)
    syncs_deleting = True

    def reconcile(self, cronjob: Obj, now: float) -> float | None:
        jobs = self.controlled.of("Job", cronjob)
        status = copy.deepcopy(cronjob.get("status") or {})
        self._track(cronjob, jobs, status)
        if deleting(cronjob):
            self._write(cronjob, status)
            return None
        spec = cronjob.get("spec") or {}
        try:
            schedule = cron.parse(str(spec.get("schedule", "")), spec.get("timeZone"))
        except cron.CronError as exc:
            reason = "UnknownTimeZone" if "time zone" in str(exc) else "InvalidSchedule"
            self.event(cronjob, "Warning", reason, f"invalid schedule: {spec.get('schedule')} : {exc}")
            self._write(cronjob, status)
            return None
        self._clean_history(cronjob, jobs)
        if spec.get("suspend"):
            self._write(cronjob, status)
            return None
        created = epoch_of(cronjob["metadata"].get("creationTimestamp")) or now
        clock = ScheduleClock(created, self.scale.factor)
        schedule_now = clock.schedule_time(now)
        self._run_due(cronjob, schedule, status, clock, schedule_now)
        self._write(cronjob, status)
        following = schedule.next_after(datetime.fromtimestamp(schedule_now, UTC))
        return None if following is None else clock.wall_time(following.timestamp())

    def _track(self, cronjob: Obj, jobs: list[Obj], status: Obj) -> None:
        """Bring `active` and `lastSuccessfulTime` up to date with the Jobs as they are."""
        active = list(status.get("active") or [])
        by_uid = {uid_of(j): j for j in jobs}
        for job in jobs:
            listed = any(ref.get("uid") == uid_of(job) for ref in active)
            finished = finished_condition(job)
            if listed and finished:
                active = [ref for ref in active if ref.get("uid") != uid_of(job)]
                self.event(
                    cronjob,
                    "Normal",
                    "SawCompletedJob",
                    f"Saw completed job: {name_of(job)}, status: {finished}",
                )
            elif not listed and not finished and not deleting(job):
                self.event(
                    cronjob,
                    "Warning",
                    "UnexpectedJob",
                    f"Saw a job that the controller did not create or forgot: {name_of(job)}",
                )
            if finished == "Complete":
                completed = (job.get("status") or {}).get("completionTime")
                last = status.get("lastSuccessfulTime")
                if completed and (last is None or (epoch_of(completed) or 0) > (epoch_of(last) or 0)):
                    status["lastSuccessfulTime"] = completed
        for ref in list(active):
            if ref.get("uid") not in by_uid:
                active.remove(ref)
                self.event(cronjob, "Normal", "MissingJob", f"Active job went missing: {ref.get('name')}")
        if active:
            status["active"] = active
        else:
            status.pop("active", None)

    def _run_due(
        self, cronjob: Obj, schedule: cron.Schedule, status: Obj, clock: ScheduleClock, now: float
    ) -> None:
        spec = cronjob.get("spec") or {}
        last = epoch_of(status.get("lastScheduleTime"))
        earliest = clock.anchor if last is None else clock.schedule_time(last)
        scheduled = due_run(schedule, earliest, now)
        if scheduled is None:
            return
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None and scheduled + float(deadline) < now:
            stamp = scheduled_stamp(scheduled, schedule.zone)
            self.event(cronjob, "Warning", "MissSchedule", f"Missed scheduled time to start a job: {stamp}")
            return
        policy = spec.get("concurrencyPolicy", "Allow")
        active = status.get("active") or []
        if policy == "Forbid" and active:
            message = "Not starting job because prior execution is running and concurrency policy is Forbid"
            self.event(cronjob, "Normal", "JobAlreadyActive", message)
            return
        if policy == "Replace":
            for ref in active:
                job = self.api.store.get(key("Job"), ns_of(cronjob), str(ref.get("name")))
                if job is not None:
                    self.writer.delete("Job", job, policy="Background")
                    self.event(cronjob, "Normal", "SuccessfulDelete", f"Deleted job {name_of(job)}")
            status.pop("active", None)
        job = self._create_job(cronjob, scheduled, schedule)
        if job is not None:
            status["active"] = [*(status.get("active") or []), _reference(job)]
        status["lastScheduleTime"] = rfc3339(math.ceil(clock.wall_time(scheduled)))

    def _create_job(self, cronjob: Obj, scheduled: float, schedule: cron.Schedule) -> Obj | None:
        template = (cronjob.get("spec") or {}).get("jobTemplate") or {}
        annotations = {
            **((template.get("metadata") or {}).get("annotations") or {}),
            SCHEDULED_ANNOTATION: scheduled_stamp(scheduled, schedule.zone),
        }
        name = job_name(name_of(cronjob), scheduled)
        body = from_template(cronjob, "CronJob", template, "Job", name=name, annotations=annotations)
        try:
            created = self.api.create(rt("Job"), ns_of(cronjob), body, self.writer.options)
        except status_errors.StatusError as exc:
            if exc.code == 409:
                return self.api.store.get(key("Job"), ns_of(cronjob), name)
            self.event(
                cronjob, "Warning", "FailedCreate", f"Error creating job: {exc.body.get('message', '')}"
            )
            return None
        self.event(cronjob, "Normal", "SuccessfulCreate", f"Created job {name_of(created)}")
        return created

    def _clean_history(self, cronjob: Obj, jobs: list[Obj]) -> None:
        spec = cronjob.get("spec") or {}
        for outcome, field in (
            ("Complete", "successfulJobsHistoryLimit"),
            ("Failed", "failedJobsHistoryLimit"),
        ):
            limit = spec.get(field)
            if limit is None:
                continue
            done = [j for j in jobs if finished_condition(j) == outcome and not deleting(j)]
            done.sort(key=lambda j: (epoch_of((j.get("status") or {}).get("startTime")) or 0.0, name_of(j)))
            for job in done[: max(len(done) - int(limit), 0)]:
                self.writer.delete("Job", job, policy="Background")
                self.event(cronjob, "Normal", "SuccessfulDelete", f"Deleted job {name_of(job)}")

    def _write(self, cronjob: Obj, status: Obj) -> None:
        self.writer.write_status("CronJob", cronjob, status)
