"""monitor.Monitor and a cronjob, against the fake informer caches: each run (a Job the CronJob owns)
is reported under the cronjob's runtime ID with the run's Job as the object and ids from its uid; a
history run is reported by the snapshot; the cronjob is steady while no run runs; its own deletion is
its only event of its own."""

from __future__ import annotations

from typing import Any

from planner.kinds import CRON_JOB, JOB, POD
from planner.monitor import Monitor
from planner.monitor.state import event_id
from planner.render.identity import RuntimeID
from tests.fakes import FakeClock, RecordingSink
from tests.unit.test_monitor_core import FakeCaches

BACKUP = RuntimeID.parse("k8s-shop|cronjob|backup")
Manifest = dict[str, Any]


def cronjob() -> Manifest:
    metadata = {
        "name": "backup",
        "namespace": "shop",
        "uid": "cj-uid",
        "labels": {"gobrave-workload": "backup"},
    }
    return {"kind": "CronJob", "metadata": metadata, "spec": {"schedule": "@daily"}}


def run(name: str, uid: str, created: str, **status: Any) -> Manifest:
    owner = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "name": "backup",
        "uid": "cj-uid",
        "controller": True,
    }
    metadata = {
        "name": name,
        "namespace": "shop",
        "uid": uid,
        "creationTimestamp": created,
        "ownerReferences": [owner],
        "labels": {"gobrave-workload": "backup"},
    }
    spec = {"selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}}
    return {"kind": "Job", "metadata": metadata, "spec": spec, "status": status}


def failed_pod(job_uid: str) -> Manifest:
    terminated = {"exitCode": 3, "reason": "Error", "finishedAt": "2026-12-02T03:00:05Z"}
    return {
        "kind": "Pod",
        "metadata": {
            "name": "backup-2-x",
            "namespace": "shop",
            "labels": {"batch.kubernetes.io/controller-uid": job_uid},
        },
        "status": {
            "phase": "Failed",
            "containerStatuses": [{"name": "backup", "state": {"terminated": terminated}}],
        },
    }


def test_each_run_is_reported_under_the_cronjob_with_its_job_and_exit_code() -> None:
    caches, sink = FakeCaches(), RecordingSink()
    caches.of(CRON_JOB).put(cronjob())
    caches.of(JOB).put(run("backup-1", "u1", "2026-12-01T03:00:00Z", startTime="t", succeeded=1))
    monitor = Monitor(caches, sink, clock=FakeClock())
    monitor.mark_if_not_monitoring(BACKUP)
    assert monitor.all_steady()

    caches.of(JOB).put(run("backup-2", "u2", "2026-12-02T03:00:00Z", startTime="t", active=1))
    assert not monitor.all_steady()  # a run is running
    caches.of(POD).put(failed_pod("u2"))
    failed = {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "too many"}
    caches.of(JOB).put(
        run("backup-2", "u2", "2026-12-02T03:00:00Z", startTime="t", failed=1, conditions=[failed])
    )

    rid = str(BACKUP)
    assert [(type(e).__name__, e.runtime_id, e.object, e.message) for e in sink.events] == [
        ("ContainerStarted", rid, "job/shop/backup-1", "active 0, succeeded 1"),
        ("ContainerExited", rid, "job/shop/backup-1", "0"),
        ("ContainerStarted", rid, "job/shop/backup-2", "active 1, succeeded 0"),
        ("ContainerFailed", rid, "job/shop/backup-2", "too many"),
    ]
    assert sink.events[-1].exit_code == 3  # type: ignore[union-attr]
    assert [e.event_id for e in sink.events] == [
        event_id(rid, "u1", "ContainerStarted"),
        event_id(rid, "u1", "ContainerExited"),
        event_id(rid, "u2", "ContainerStarted"),
        event_id(rid, "u2", "ContainerFailed"),
    ]
    assert monitor.all_steady() and monitor.failed() == [rid]  # its latest run failed


def test_a_run_deleted_before_it_ended_is_deleted_and_the_cronjobs_deletion_ends_it() -> None:
    caches, sink = FakeCaches(), RecordingSink()
    caches.of(CRON_JOB).put(cronjob())
    monitor = Monitor(caches, sink, clock=FakeClock())
    monitor.mark_if_not_monitoring(BACKUP)
    caches.of(JOB).put(run("backup-1", "u1", "2026-12-01T03:00:00Z", startTime="t", active=1))
    caches.of(JOB).remove("shop", "backup-1")
    caches.of(CRON_JOB).remove("shop", "backup")
    assert [(type(e).__name__, e.object) for e in sink.events] == [
        ("ContainerStarted", "job/shop/backup-1"),
        ("ContainerDeleted", "job/shop/backup-1"),
        ("ContainerDeleted", "cronjob/shop/backup"),
    ]
    assert monitor.monitoring() == frozenset()


def test_jobs_of_another_cronjob_or_none_are_not_its_runs() -> None:
    caches, sink = FakeCaches(), RecordingSink()
    caches.of(CRON_JOB).put(cronjob())
    monitor = Monitor(caches, sink, clock=FakeClock())
    monitor.mark_if_not_monitoring(BACKUP)
    other = run("report-1", "u9", "2026-12-01T03:00:00Z", startTime="t", active=1)
    other["metadata"]["ownerReferences"][0]["name"] = "report"
    caches.of(JOB).put(other)
    plain = run("etl", "u8", "2026-12-01T03:00:00Z", startTime="t", active=1)
    plain["metadata"]["ownerReferences"] = []
    caches.of(JOB).put(plain)
    assert sink.events == []
