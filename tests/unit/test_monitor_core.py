"""monitor.Monitor against fake informer caches: idempotent registration, one subscription per kind,
the snapshot check, terminal events unsubscribing, restart recovery with stable ids, no writes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from planner.errors import CacheSyncError
from planner.events import ContainerDeleted, ContainerExited, ContainerFailed, ContainerStarted, to_json_dict
from planner.kinds import DEPLOYMENT, JOB, PERSISTENT_VOLUME_CLAIM, POD, KindInfo
from planner.monitor import Caches, KindCache, Monitor
from planner.monitor.state import event_id
from planner.render.identity import RuntimeID
from planner.state.applyset import RunOutcome, RunRecord
from tests.fakes import FakeClock, RecordingSink

Manifest = dict[str, Any]
Callback = Callable[[str, Manifest], None]


class FakeCache:
    """One kind's cache: objects by (namespace, name), subscribers called on `put`/`remove`."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], Manifest] = {}
        self.subscribers: list[Callback] = []
        self.gets = 0

    def get(self, namespace: str | None, name: str) -> Manifest | None:
        self.gets += 1
        return self.objects.get((namespace or "", name))

    def items(self) -> list[Manifest]:
        return list(self.objects.values())

    def subscribe(self, subscriber: Callback) -> Callable[[], None]:
        self.subscribers.append(subscriber)
        return lambda: self.subscribers.remove(subscriber)

    def wait_until_synced(self, timeout: float | None) -> None:
        return None

    def put(self, obj: Manifest) -> None:
        key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
        kind = "MODIFIED" if key in self.objects else "ADDED"
        self.objects[key] = obj
        for subscriber in list(self.subscribers):
            subscriber(kind, obj)

    def remove(self, namespace: str, name: str) -> None:
        obj = self.objects.pop((namespace, name))
        for subscriber in list(self.subscribers):
            subscriber("DELETED", obj)


class FakeCaches:
    def __init__(self) -> None:
        self.by_kind: dict[str, FakeCache] = {}

    def informer(self, kind: KindInfo, *, namespaces: frozenset[str] | None = None) -> KindCache:
        return self.of(kind)

    def of(self, kind: KindInfo) -> FakeCache:
        return self.by_kind.setdefault(kind.kind, FakeCache())


def _conforms() -> tuple[Caches, KindCache]:
    return FakeCaches(), FakeCache()


def job(name: str = "etl", *, uid: str = "job-1", **status: Any) -> Manifest:
    metadata = {"name": name, "namespace": "shop", "uid": uid, "labels": {"gobrave-workload": name}}
    return {"kind": "Job", "metadata": metadata, "status": status}


def deployment(name: str = "web", *, wanted: int = 1, **status: Any) -> Manifest:
    metadata = {"name": name, "namespace": "shop", "uid": f"{name}-uid", "labels": {"gobrave-workload": name}}
    return {"kind": "Deployment", "metadata": metadata, "spec": {"replicas": wanted}, "status": status}


ETL = RuntimeID.parse("k8s-shop|job|etl")
WEB = RuntimeID.parse("k8s-shop|deployment|web")


@pytest.fixture
def caches() -> FakeCaches:
    return FakeCaches()


@pytest.fixture
def sink() -> RecordingSink:
    return RecordingSink()


@pytest.fixture
def monitor(caches: FakeCaches, sink: RecordingSink) -> Monitor:
    return Monitor(caches, sink, clock=FakeClock())


def kinds_and_messages(sink: RecordingSink) -> list[tuple[str, str | None, str]]:
    return [(type(e).__name__, e.runtime_id, e.message) for e in sink.events]


def test_two_registrations_one_subscription_one_event_each(
    caches: FakeCaches, sink: RecordingSink, monitor: Monitor
) -> None:
    caches.of(JOB).put(job())
    assert monitor.mark_if_not_monitoring(ETL) is True
    assert monitor.mark_if_not_monitoring(ETL) is False
    assert len(caches.of(JOB).subscribers) == 1
    caches.of(JOB).put(job(active=1))
    caches.of(JOB).put(job(active=0, succeeded=1, startTime="t"))
    assert kinds_and_messages(sink) == [
        ("ContainerStarted", "k8s-shop|job|etl", "active 1, succeeded 0"),
        ("ContainerExited", "k8s-shop|job|etl", "0"),
    ]


def test_one_subscription_per_kind_serves_every_runtime_id(caches: FakeCaches, monitor: Monitor) -> None:
    for index in range(50):
        caches.of(JOB).put(job(f"job-{index}", uid=f"u{index}"))
        monitor.mark_if_not_monitoring(RuntimeID.parse(f"k8s-shop|job|job-{index}"))
    monitor.mark_if_not_monitoring(WEB)
    assert len(caches.of(JOB).subscribers) == 1
    assert len(caches.of(DEPLOYMENT).subscribers) == 1
    assert monitor.subscriptions() == {"Job", "Deployment"}


def test_snapshot_reports_a_job_that_finished_before_registration(
    caches: FakeCaches, sink: RecordingSink, monitor: Monitor
) -> None:
    caches.of(JOB).put(job(startTime="t", succeeded=1))
    monitor.mark_if_not_monitoring(ETL)
    assert kinds_and_messages(sink) == [
        ("ContainerStarted", "k8s-shop|job|etl", "active 0, succeeded 1"),
        ("ContainerExited", "k8s-shop|job|etl", "0"),
    ]
    assert monitor.monitoring() == frozenset()


def test_snapshot_of_a_missing_workload_reports_it_deleted(sink: RecordingSink, monitor: Monitor) -> None:
    monitor.mark_if_not_monitoring(ETL)
    assert kinds_and_messages(sink) == [("ContainerDeleted", "k8s-shop|job|etl", "job shop/etl is gone")]


def test_a_terminal_event_removes_the_subscription_and_unmarks(
    caches: FakeCaches, sink: RecordingSink, monitor: Monitor
) -> None:
    caches.of(DEPLOYMENT).put(deployment(readyReplicas=1, replicas=1))
    monitor.mark_if_not_monitoring(WEB)
    caches.of(DEPLOYMENT).put(deployment(wanted=0, replicas=0))
    assert monitor.monitoring() == frozenset()
    caches.of(DEPLOYMENT).remove("shop", "web")
    assert [type(e) for e in sink.events] == [ContainerStarted, ContainerExited]
    assert monitor.mark_if_not_monitoring(WEB) is True  # start registers again


def test_a_restarted_monitor_re_reports_with_the_same_ids(caches: FakeCaches, sink: RecordingSink) -> None:
    caches.of(JOB).put(job(active=1, startTime="t"))
    first = Monitor(caches, sink, clock=FakeClock())
    first.mark_if_not_monitoring(ETL)
    first.stop()
    caches.of(JOB).put(job(succeeded=1, startTime="t"))
    again = RecordingSink()
    Monitor(caches, again, clock=FakeClock()).mark_if_not_monitoring(ETL)
    ids_before = [e.event_id for e in sink.of_type(ContainerStarted)]
    assert ids_before == [e.event_id for e in again.of_type(ContainerStarted)]
    assert ids_before == [event_id("k8s-shop|job|etl", "job-1", "ContainerStarted")]
    assert [e.event_id for e in again.of_type(ContainerExited)] == [
        event_id("k8s-shop|job|etl", "job-1", "ContainerExited")
    ]


def test_attach_all_follows_every_managed_workload_in_scope(caches: FakeCaches, sink: RecordingSink) -> None:
    caches.of(JOB).put(job(active=1))
    caches.of(DEPLOYMENT).put(deployment())
    other = deployment("api")
    other["metadata"]["namespace"] = "elsewhere"
    caches.of(DEPLOYMENT).put(other)
    caches.of(DEPLOYMENT).put({"kind": "Deployment", "metadata": {"name": "foreign", "namespace": "shop"}})
    monitor = Monitor(caches, sink, clock=FakeClock())
    attached = monitor.attach_all(frozenset({"shop"}))
    assert [str(rid) for rid in attached] == ["k8s-shop|deployment|web", "k8s-shop|job|etl"]
    assert monitor.monitoring() == {"k8s-shop|deployment|web", "k8s-shop|job|etl"}
    assert kinds_and_messages(sink) == [("ContainerStarted", "k8s-shop|job|etl", "active 1, succeeded 0")]


def test_a_recorded_job_gone_before_the_monitor_saw_it_is_found_and_reported_with_its_uid(
    sink: RecordingSink, caches: FakeCaches
) -> None:
    other = RuntimeID.parse("k8s-elsewhere|job|other")
    recorded = {ETL: ran("etl", "job-1"), other: ran("other", "job-2", namespace="elsewhere")}
    monitor = Monitor(caches, sink, clock=FakeClock(), recorded=recorded)
    attached = monitor.attach_all(frozenset({"shop"}))
    assert [str(rid) for rid in attached] == ["k8s-shop|job|etl"]
    assert kinds_and_messages(sink) == [("ContainerDeleted", "k8s-shop|job|etl", "job shop/etl is gone")]
    assert [e.event_id for e in sink.events] == [event_id("k8s-shop|job|etl", "job-1", "ContainerDeleted")]
    assert monitor.monitoring() == frozenset()


def test_a_named_recorded_job_that_is_gone_keeps_the_id_an_uninterrupted_monitor_gave(
    caches: FakeCaches, sink: RecordingSink
) -> None:
    caches.of(JOB).put(job(active=1, startTime="t"))
    uninterrupted = Monitor(caches, sink, clock=FakeClock())
    uninterrupted.mark_if_not_monitoring(ETL)
    caches.of(JOB).remove("shop", "etl")
    again = RecordingSink()
    Monitor(caches, again, clock=FakeClock(), recorded={ETL: ran("etl", "job-1")}).mark_if_not_monitoring(ETL)
    assert [e.event_id for e in again.events] == [e.event_id for e in sink.of_type(ContainerDeleted)]


def ran(name: str, uid: str, *, namespace: str = "shop", outcome: RunOutcome | None = None) -> RunRecord:
    return RunRecord(run_key=f"key-{name}", namespace=namespace, name=name, uid=uid, outcome=outcome)


FAILED = RunOutcome(
    result="failed", reason="BackoffLimitExceeded", message="Job has reached the specified backoff limit"
)


@pytest.mark.parametrize(
    ("finished", "outcome", "end"),
    [
        pytest.param(
            {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]},
            RunOutcome(result="succeeded"),
            ContainerExited,
            id="a Job that succeeded and was deleted by its TTL exits from its record",
        ),
        pytest.param(
            {"failed": 1, "conditions": [{"type": "Failed", "status": "True", **FAILED.encoded()}]},
            FAILED,
            ContainerFailed,
            id="a Job that failed and was deleted by its TTL fails from its record",
        ),
    ],
)
def test_a_recorded_outcome_gives_a_restarted_monitor_the_events_an_uninterrupted_one_gave(
    caches: FakeCaches, sink: RecordingSink, finished: dict[str, Any], outcome: RunOutcome, end: type[Any]
) -> None:
    caches.of(JOB).put(job(active=1, startTime="t"))
    uninterrupted = Monitor(caches, sink, clock=FakeClock())
    uninterrupted.mark_if_not_monitoring(ETL)
    caches.of(JOB).put(job(startTime="t", **finished))
    caches.of(JOB).remove("shop", "etl")  # its TTL
    again = RecordingSink()
    restarted = Monitor(
        caches, again, clock=FakeClock(), recorded={ETL: ran("etl", "job-1", outcome=outcome)}
    )
    assert restarted.attach_all(frozenset({"shop"})) == [ETL]
    assert [type(e) for e in again.events] == [ContainerStarted, end]
    assert [(e.event_id, e.message) for e in again.events[1:]] == [
        (e.event_id, e.message) for e in sink.events[1:]
    ]


def test_a_failed_job_is_reported_with_the_exit_code_its_pods_show_or_its_record_keeps(
    caches: FakeCaches, sink: RecordingSink, monitor: Monitor
) -> None:
    terminated = {"terminated": {"exitCode": 3, "reason": "Error"}}
    caches.of(POD).put(
        {
            "kind": "Pod",
            "metadata": {"name": "etl-x", "namespace": "shop", "labels": {"controller-uid": "job-1"}},
            "status": {"phase": "Failed", "containerStatuses": [{"name": "main", "state": terminated}]},
        }
    )
    failed = job(
        startTime="t", failed=1, conditions=[{"type": "Failed", "status": "True", **FAILED.encoded()}]
    )
    caches.of(JOB).put(failed | {"spec": {"selector": {"matchLabels": {"controller-uid": "job-1"}}}})
    monitor.mark_if_not_monitoring(ETL)
    [reported] = sink.of_type(ContainerFailed)
    assert (reported.message, reported.exit_code) == ("Job has reached the specified backoff limit", 3)
    assert to_json_dict(reported)["exit_code"] == 3
    caches.of(JOB).remove("shop", "etl")
    again = RecordingSink()
    recorded = RunOutcome(result="failed", message="Job has reached the specified backoff limit", exit_code=3)
    restarted = Monitor(
        caches, again, clock=FakeClock(), recorded={ETL: ran("etl", "job-1", outcome=recorded)}
    )
    restarted.mark_if_not_monitoring(ETL)
    assert [(e.event_id, e.exit_code) for e in again.of_type(ContainerFailed)] == [(reported.event_id, 3)]
    assert [e.event_id for e in again.events] == [e.event_id for e in sink.events]


def test_a_record_of_another_job_than_the_one_seen_is_not_its_outcome(
    caches: FakeCaches, sink: RecordingSink
) -> None:
    caches.of(JOB).put(job(active=1, startTime="t"))
    recorded = {ETL: ran("etl", "job-0", outcome=RunOutcome(result="succeeded"))}  # an earlier run
    monitor = Monitor(caches, sink, clock=FakeClock(), recorded=recorded)
    monitor.mark_if_not_monitoring(ETL)
    caches.of(JOB).remove("shop", "etl")
    assert [type(e) for e in sink.events] == [ContainerStarted, ContainerDeleted]
    assert sink.events[1].event_id == event_id("k8s-shop|job|etl", "job-1", "ContainerDeleted")


def test_follow_attaches_a_deployment_started_again(caches: FakeCaches, sink: RecordingSink) -> None:
    caches.of(DEPLOYMENT).put(deployment(wanted=0))
    monitor = Monitor(caches, sink, clock=FakeClock())
    monitor.attach_all(follow=True)
    assert monitor.monitoring() == frozenset()  # it had exited
    caches.of(DEPLOYMENT).put(deployment(wanted=1))
    caches.of(DEPLOYMENT).put(deployment(wanted=1, readyReplicas=1, replicas=1))
    assert [type(e) for e in sink.events] == [ContainerExited, ContainerStarted]


def sandbox_objects(caches: FakeCaches, *, state: str, pod: bool, pod_uid: str = "pod-a") -> None:
    workspace = {
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": "box-workspace",
            "namespace": "shop",
            "uid": "ws",
            "labels": {"gobrave-workload": "box"},
            "annotations": {"planner.dev/sandbox-state": state},
        },
        "status": {"phase": "Bound"},
    }
    caches.of(PERSISTENT_VOLUME_CLAIM).put(workspace)
    if pod:
        caches.of(POD).put(
            {
                "kind": "Pod",
                "metadata": {"name": "box", "namespace": "shop", "uid": pod_uid},
                "spec": {
                    "volumes": [{"name": "rootfs", "persistentVolumeClaim": {"claimName": "box-rootfs-g1"}}]
                },
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
            }
        )


def test_sandbox_rebase_is_silent_and_pause_exits(
    caches: FakeCaches, sink: RecordingSink, monitor: Monitor
) -> None:
    box = RuntimeID.parse("k8s-shop|sandbox|box")
    sandbox_objects(caches, state="running", pod=True)
    monitor.mark_if_not_monitoring(box)
    caches.of(POD).remove("shop", "box")  # rebase: pod gone, state still running
    sandbox_objects(caches, state="running", pod=True, pod_uid="pod-b")
    assert [type(e) for e in sink.events] == [ContainerStarted]
    caches.of(POD).remove("shop", "box")
    sandbox_objects(caches, state="paused", pod=False)
    assert kinds_and_messages(sink) == [
        ("ContainerStarted", "k8s-shop|sandbox|box", "pod Ready"),
        ("ContainerExited", "k8s-shop|sandbox|box", "paused"),
    ]


def test_sandbox_deleted_when_pod_and_pvcs_are_gone(
    caches: FakeCaches, sink: RecordingSink, monitor: Monitor
) -> None:
    sandbox_objects(caches, state="running", pod=True)
    monitor.mark_if_not_monitoring(RuntimeID.parse("k8s-shop|sandbox|box"))
    caches.of(POD).remove("shop", "box")
    caches.of(PERSISTENT_VOLUME_CLAIM).remove("shop", "box-workspace")
    assert [type(e) for e in sink.events] == [ContainerStarted, ContainerDeleted]


def test_the_monitor_writes_nothing_and_events_serialise(caches: FakeCaches, sink: RecordingSink) -> None:
    live = job(active=1)
    caches.of(JOB).put(live)
    snapshot = repr(live)
    Monitor(caches, sink, clock=FakeClock(1_800_000_000.0)).mark_if_not_monitoring(ETL)
    assert repr(caches.of(JOB).objects[("shop", "etl")]) == snapshot
    assert to_json_dict(sink.events[0]) == {
        "time": "2027-01-15T08:00:00.000Z",
        "type": "ContainerStarted",
        "message": "active 1, succeeded 0",
        "object": "job/shop/etl",
        "runtime_id": "k8s-shop|job|etl",
        "event_id": event_id("k8s-shop|job|etl", "job-1", "ContainerStarted"),
    }


def test_steady_waits_for_jobs_to_end_and_deployments_to_start(caches: FakeCaches, monitor: Monitor) -> None:
    caches.of(JOB).put(job(active=1))
    caches.of(DEPLOYMENT).put(deployment(readyReplicas=1, replicas=1))
    monitor.mark_if_not_monitoring(ETL)
    monitor.mark_if_not_monitoring(WEB)
    assert monitor.all_steady() is False
    caches.of(JOB).put(job(conditions=[{"type": "Failed", "status": "True", "message": "backoff"}]))
    assert monitor.all_steady() is True
    assert monitor.failed() == ["k8s-shop|job|etl"]


class ForbiddenCache(FakeCache):
    def wait_until_synced(self, timeout: float | None) -> None:
        raise CacheSyncError("the jobs cache (shop): jobs.batch is forbidden")


def test_a_cache_that_cannot_sync_is_an_error_not_silence(caches: FakeCaches, monitor: Monitor) -> None:
    caches.by_kind["Job"] = ForbiddenCache()
    with pytest.raises(CacheSyncError, match="forbidden"):
        monitor.mark_if_not_monitoring(ETL)
    assert monitor.monitoring() == frozenset()


class UnlistedPods(FakeCache):
    """A Pod cache whose LIST was refused (no permission to list pods)."""

    def items(self) -> list[Manifest]:
        raise CacheSyncError("the pods cache (shop): pods is forbidden")

    def wait_until_synced(self, timeout: float | None) -> None:
        raise CacheSyncError("the pods cache (shop): pods is forbidden")


def test_without_permission_to_list_pods_a_failed_job_is_still_reported_without_its_exit_code(
    caches: FakeCaches, sink: RecordingSink, monitor: Monitor
) -> None:
    caches.by_kind["Pod"] = UnlistedPods()
    caches.of(JOB).put(
        job(startTime="t", failed=1, conditions=[{"type": "Failed", "status": "True", **FAILED.encoded()}])
    )
    assert monitor.mark_if_not_monitoring(ETL) is True
    [reported] = sink.of_type(ContainerFailed)
    assert (reported.message, reported.exit_code) == ("Job has reached the specified backoff limit", None)
