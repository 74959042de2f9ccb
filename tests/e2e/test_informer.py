"""The informer cache against a real embedded server: sync, events, relist on 410, resumed watches,
surfaced failures, and one watch connection per kind."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from planner.errors import CacheSyncError, api_error
from planner.execute import Answer, Until
from planner.kinds import CONFIG_MAP, JOB, PERSISTENT_VOLUME_CLAIM, SECRET, KindInfo
from planner.kube.client import ClientOptions, KubeClient
from planner.kube.informer import EventType, Informer, InformerOptions, Informers, Scope
from planner.objects import ObjectRef
from planner.slim.cluster import ClusterHandle, running_cluster, write_kubeconfig
from planner.wait.evidence import Evidence
from planner.wait.readiness import Readiness
from planner.waiting import CacheStatusSource
from planner.writes import KubeWriter, WrittenVersions
from tests.e2e.conftest import http

WATCH_CACHE = 30
WIDGET = KindInfo(kind="Widget", group="example.com", version="v1", plural="widgets", namespaced=True)


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(watch_cache_size=WATCH_CACHE) as handle:
        yield handle


@pytest.fixture
def client(cluster: ClusterHandle) -> KubeClient:
    return KubeClient.from_config(kubeconfig=str(cluster.kubeconfig), context=None)


class Recorder:
    """A subscriber that keeps (event type, name) pairs."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def __call__(self, kind: EventType, obj: dict[str, Any]) -> None:
        with self._lock:
            self.seen.append((kind, obj["metadata"]["name"]))

    def names(self, kind: str) -> list[str]:
        with self._lock:
            return [name for seen_kind, name in self.seen if seen_kind == kind]

    def wait(self, condition: Callable[[Recorder], bool], timeout: float = 10.0) -> None:
        """Until `condition` holds: subscribers run just after the cache changes, on the informer's thread."""
        deadline = time.monotonic() + timeout
        while not condition(self):
            assert time.monotonic() < deadline, f"subscriber saw only {self.seen}"
            time.sleep(0.01)


def until(informer: Informer, condition: Any, timeout: float = 10.0) -> None:
    with informer.changed:
        assert informer.changed.wait_for(condition, timeout), "condition not met in time"


def config_map(cluster: ClusterHandle, namespace: str, name: str, data: Mapping[str, str]) -> None:
    status, body = http(
        cluster,
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        {"metadata": {"name": name}, "data": dict(data)},
    )
    assert status == 201, body


@pytest.fixture
def informers(client: KubeClient) -> Iterator[Informers]:
    registry = Informers(client, options=InformerOptions(watch_timeout=30))
    yield registry
    registry.stop()


def test_initial_sync_holds_every_object_with_its_kind_and_api_version(
    cluster: ClusterHandle, informers: Informers, namespace: str
) -> None:
    config_map(cluster, namespace, "one", {"a": "1"})
    informer = informers.informer(CONFIG_MAP, namespaces=frozenset({namespace}))
    informer.wait_until_synced(10)
    cached = informer.get(namespace, "one")
    assert cached is not None
    assert (cached["apiVersion"], cached["kind"], cached["data"]) == ("v1", "ConfigMap", {"a": "1"})
    assert {obj["metadata"]["name"] for obj in informer.items()} == {"one", "kube-root-ca.crt"}


def test_added_modified_and_deleted_reach_the_cache_and_subscribers(
    cluster: ClusterHandle, informers: Informers, namespace: str
) -> None:
    informer = informers.informer(CONFIG_MAP, namespaces=frozenset({namespace}))
    informer.wait_until_synced(10)
    recorder = Recorder()
    informer.subscribe(recorder)
    config_map(cluster, namespace, "live", {"v": "1"})
    until(informer, lambda: informer.get(namespace, "live") is not None)
    current = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps/live")[1]
    status, _ = http(
        cluster, "PUT", f"/api/v1/namespaces/{namespace}/configmaps/live", {**current, "data": {"v": "2"}}
    )
    assert status == 200
    until(informer, lambda: (informer.get(namespace, "live") or {}).get("data") == {"v": "2"})
    assert http(cluster, "DELETE", f"/api/v1/namespaces/{namespace}/configmaps/live")[0] == 200
    until(informer, lambda: informer.get(namespace, "live") is None)
    recorder.wait(lambda r: len(r.seen) >= 3)
    assert recorder.seen == [("ADDED", "live"), ("MODIFIED", "live"), ("DELETED", "live")]
    # A late subscriber asking for a replay hears of what is cached first, each object once.
    replayed = Recorder()
    informer.subscribe(replayed, replay=True)
    assert replayed.seen == [("ADDED", "kube-root-ca.crt")]


class ChurnBeforeFirstWatch(KubeClient):
    """The real client, with more writes than the server's watch history between the first LIST and
    the first WATCH — so that watch is answered 410 Expired, as after a long pause or a slow network."""

    _churn: Any = None

    def stream_lines(self, path: str, *, query: Mapping[str, str], timeout: float | None = None) -> Any:
        churn, self._churn = self._churn, None
        if churn is not None:
            churn()
        return super().stream_lines(path, query=query, timeout=timeout)


def test_an_expired_watch_relists_and_misses_nothing(
    cluster: ClusterHandle, client: KubeClient, namespace: str
) -> None:
    names = [f"churn-{i}" for i in range(WATCH_CACHE + 5)]

    def churn() -> None:
        for name in names:
            config_map(cluster, namespace, name, {})

    churning = ChurnBeforeFirstWatch.from_config(kubeconfig=str(cluster.kubeconfig), context=None)
    churning._churn = churn
    informer = Informer(churning, CONFIG_MAP, namespaces=frozenset({namespace})).start()
    try:
        informer.wait_until_synced(10)
        recorder = Recorder()
        informer.subscribe(recorder)
        until(informer, lambda: all(informer.get(namespace, n) for n in names))
        assert churning.log.by_verb["list"] == 2  # the first list, and the relist after the 410
        config_map(cluster, namespace, "after-relist", {})
        until(informer, lambda: informer.get(namespace, "after-relist") is not None)
        recorder.wait(lambda r: "after-relist" in r.names("ADDED"))
        assert recorder.names("ADDED")[-1] == "after-relist"
    finally:
        informer.stop()


def test_a_server_closed_stream_rewatches_from_where_it_stopped_without_relisting(
    cluster: ClusterHandle, client: KubeClient, namespace: str
) -> None:
    informer = Informer(
        client, CONFIG_MAP, namespaces=frozenset({namespace}), options=InformerOptions(watch_timeout=1)
    ).start()
    try:
        informer.wait_until_synced(10)
        recorder = Recorder()
        informer.subscribe(recorder)
        names = [f"slow-{i}" for i in range(6)]
        for name in names:
            config_map(cluster, namespace, name, {})
            time.sleep(0.5)
        until(informer, lambda: all(informer.get(namespace, n) for n in names))
        recorder.wait(lambda r: len(r.names("ADDED")) >= len(names))
        assert recorder.names("ADDED") == names
        assert client.log.by_verb["list"] == 1
        assert client.log.by_verb["watch"] >= 3
    finally:
        informer.stop()


def test_one_watch_connection_per_kind_whatever_the_number_of_objects_and_namespaces(
    cluster: ClusterHandle, client: KubeClient
) -> None:
    namespaces = []
    for _ in range(3):
        name = f"w{time.monotonic_ns() % 10**9}"
        assert http(cluster, "POST", "/api/v1/namespaces", {"metadata": {"name": name}})[0] == 201
        namespaces.append(name)
    registry = Informers(client, options=InformerOptions(watch_timeout=60))
    try:
        scope = frozenset(namespaces)
        config_maps = registry.informer(CONFIG_MAP, namespaces=scope)
        secrets = registry.informer(SECRET, namespaces=scope)
        assert registry.informer(CONFIG_MAP, namespaces=frozenset(namespaces[:1])) is config_maps
        for informer in (config_maps, secrets):
            informer.wait_until_synced(10)
        for index in range(10):
            config_map(cluster, namespaces[index % 3], f"cm-{index}", {})
        until(
            config_maps, lambda: len([o for o in config_maps.items() if "cm-" in o["metadata"]["name"]]) == 10
        )
        assert client.log.by_verb["watch"] == 2
        assert client.log.by_verb["list"] == 2
        assert {obj["metadata"]["namespace"] for obj in config_maps.items()} == scope  # filtered to scope
    finally:
        registry.stop()


def test_a_shared_scope_serves_any_namespace_from_one_informer_and_restarts_a_failed_one(
    cluster: ClusterHandle, client: KubeClient, namespace: str
) -> None:
    """A controller's set: every informer watches its scope whatever the first run asked, and one that
    failed for good (a kind not served yet) is started afresh for the next run that asks."""
    registry = Informers(client, shared_scope=Scope(None))
    config_map(cluster, namespace, "mine", {"a": "1"})
    try:
        config_maps = registry.informer(CONFIG_MAP, namespaces=frozenset({namespace}))
        assert registry.informer(CONFIG_MAP, namespaces=frozenset({"elsewhere"})) is config_maps
        assert config_maps.namespaces is None
        config_maps.wait_until_synced(10)
        # A run reads its own namespaces' objects from the controller's cache of every namespace.
        assert {
            (o["metadata"]["namespace"], o["metadata"]["name"]) for o in config_maps.items([namespace])
        } == {
            (namespace, "mine"),
            (namespace, "kube-root-ca.crt"),
        }
        assert {o["metadata"]["namespace"] for o in config_maps.items()} > {namespace, "default"}
        widgets = registry.informer(WIDGET, namespaces=frozenset({namespace}))
        with pytest.raises(CacheSyncError, match="widgets"):
            widgets.wait_until_synced(10)
        again = registry.informer(WIDGET, namespaces=frozenset({namespace}))
        assert again is not widgets and widgets.stopped and not again.stopped
    finally:
        registry.stop()


def test_an_unknown_kind_fails_the_sync_and_every_read_instead_of_looking_empty(
    client: KubeClient, namespace: str
) -> None:
    informer = Informer(client, WIDGET, namespaces=frozenset({namespace})).start()
    try:
        with pytest.raises(CacheSyncError, match="widgets"):
            informer.wait_until_synced(10)
        with pytest.raises(CacheSyncError):
            informer.get(namespace, "anything")
    finally:
        informer.stop()


def test_a_server_that_never_answered_fails_the_sync_at_once_naming_the_cause(tmp_path: Path) -> None:
    pauses: list[int] = []

    def backoff(attempt: int) -> float:
        pauses.append(attempt)
        return 0.05

    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:9", None)  # nothing listens
    unreachable = KubeClient.from_config(
        kubeconfig=str(kubeconfig), context=None, options=ClientOptions(retries=0, timeout=1)
    )
    informer = Informer(unreachable, CONFIG_MAP, options=InformerOptions(backoff=backoff)).start()
    try:
        with pytest.raises(CacheSyncError) as failure:
            informer.wait_until_synced(30)
        assert str(failure.value) == (
            "the configmaps cache (all namespaces): cannot reach http://127.0.0.1:9: connection refused"
        )
        assert pauses == []
    finally:
        informer.stop()


def test_server_errors_back_off_with_the_given_policy_and_report_the_last_error() -> None:
    pauses: list[int] = []

    def backoff(attempt: int) -> float:
        pauses.append(attempt)
        return 0.05

    with running_cluster(simulate=True, faults={"errorRates": {"503": 1.0}}) as failing:
        client = KubeClient.from_config(
            kubeconfig=str(failing.kubeconfig), context=None, options=ClientOptions(retries=0)
        )
        informer = Informer(client, CONFIG_MAP, options=InformerOptions(backoff=backoff)).start()
        try:
            with pytest.raises(CacheSyncError, match="did not sync within 1s: "):
                informer.wait_until_synced(1)
            assert pauses[:3] == [0, 1, 2]
        finally:
            informer.stop()


# --- the StatusSource over the caches ------------------------------------------------------------------


class Answers:
    """A wait's `done`: keeps the answers and lets the test block until the first arrives."""

    def __init__(self) -> None:
        self.answers: list[Answer] = []
        self._answered = threading.Event()

    def __call__(self, answer: Answer) -> None:
        self.answers.append(answer)
        self._answered.set()

    def first(self, within: float) -> Answer:
        assert self._answered.wait(within), "no answer in time"
        return self.answers[0]


def waited(status: CacheStatusSource, ref: ObjectRef, *, until: Until, timeout: float) -> Answer:
    """The answer of one wait (the source's ticker ends it at `timeout`, so one always comes)."""
    answers = Answers()
    status.watch(ref, until=until, timeout=timeout, done=answers)
    return answers.first(within=timeout + 10)


def test_waits_wake_on_watch_events_and_never_judge_a_copy_older_than_planners_own_write(
    cluster: ClusterHandle, client: KubeClient, namespace: str
) -> None:
    registry = Informers(client)
    written = WrittenVersions()
    status = CacheStatusSource(
        client, registry, scopes={"ConfigMap": frozenset({namespace})}, written=written
    ).start()
    writer = KubeWriter(client, written=written)
    ref = ObjectRef(group="", kind="ConfigMap", namespace=namespace, name="settings")
    manifest = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": namespace},
    }
    try:
        created = writer.create(manifest)
        assert waited(status, ref, until="ready", timeout=5) == Readiness(status="Current", message="exists")
        ahead = int(created["metadata"]["resourceVersion"]) + 1000
        written.record({**manifest, "metadata": {**manifest["metadata"], "resourceVersion": str(ahead)}})
        stale = waited(status, ref, until="ready", timeout=0.3)
        assert stale == Readiness(status="InProgress", message="waiting for the cache to see planner's write")
        writer.delete(ref, propagation="Background")
        assert waited(status, ref, until="gone", timeout=5) == Readiness(
            status="NotFound", message="not found"
        )
    finally:
        registry.stop()


def test_many_pending_waits_share_one_ticker_thread_and_each_ends_on_its_own_event(
    cluster: ClusterHandle, client: KubeClient, namespace: str
) -> None:
    names = [f"gone-{i:02d}" for i in range(40)]
    for name in names:
        config_map(cluster, namespace, name, {"n": name})
    registry = Informers(client)
    scopes: dict[str, frozenset[str] | None] = {"ConfigMap": frozenset({namespace})}
    status = CacheStatusSource(client, registry, scopes=scopes, written=WrittenVersions()).start()
    answers = {name: Answers() for name in names}
    threads = threading.active_count()
    try:
        for name in names:
            ref = ObjectRef(group="", kind="ConfigMap", namespace=namespace, name=name)
            status.watch(ref, until="gone", timeout=120, done=answers[name])
        assert threading.active_count() <= threads + 1  # the ticker; earlier tests' tickers only end
        for name in names:
            deleted, body = http(cluster, "DELETE", f"/api/v1/namespaces/{namespace}/configmaps/{name}")
            assert deleted == 200, body
            assert answers[name].first(within=10) == Readiness(status="NotFound", message="not found")
        assert all(len(answer.answers) == 1 for answer in answers.values())
    finally:
        status.close()
        registry.stop()


def test_a_wait_for_an_absent_object_to_be_gone_ends_at_once_not_at_its_timeout(
    client: KubeClient, namespace: str
) -> None:
    registry = Informers(client)
    scopes: dict[str, frozenset[str] | None] = {"ConfigMap": frozenset({namespace})}
    status = CacheStatusSource(client, registry, scopes=scopes, written=WrittenVersions()).start()
    answers = Answers()
    try:
        ref = ObjectRef(group="", kind="ConfigMap", namespace=namespace, name="never-there")
        status.watch(ref, until="gone", timeout=600, done=answers)
        assert answers.first(within=10) == Readiness(status="NotFound", message="not found")
    finally:
        status.close()
        registry.stop()


def test_a_cancelled_wait_is_never_answered(client: KubeClient, namespace: str) -> None:
    registry = Informers(client)
    scopes: dict[str, frozenset[str] | None] = {"ConfigMap": frozenset({namespace})}
    status = CacheStatusSource(client, registry, scopes=scopes, written=WrittenVersions()).start()
    ref = ObjectRef(group="", kind="ConfigMap", namespace=namespace, name="not-yet")
    cancelled, later = Answers(), Answers()
    try:
        cancel = status.watch(ref, until="ready", timeout=0.2, done=cancelled)
        cancel()
        status.watch(ref, until="ready", timeout=0.4, done=later)  # times out after the first would have
        assert later.first(within=10) == Readiness(status="NotFound", message="not found")
        assert cancelled.answers == []
    finally:
        status.close()
        registry.stop()


MIGRATE_JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "migrate"},
    "spec": {
        "template": {
            "spec": {"restartPolicy": "Never", "containers": [{"name": "migrate", "image": "busybox:1.36"}]}
        }
    },
}


def test_a_wait_gives_up_at_its_timeout_with_the_last_verdict_and_wakes_when_the_job_completes(
    cluster: ClusterHandle, client: KubeClient, namespace: str
) -> None:
    registry = Informers(client)
    scopes: dict[str, frozenset[str] | None] = {"Job": frozenset({namespace})}
    status = CacheStatusSource(client, registry, scopes=scopes, written=WrittenVersions()).start()
    path = f"/apis/batch/v1/namespaces/{namespace}/jobs"
    created, job = http(cluster, "POST", path, MIGRATE_JOB)
    assert created == 201, job
    ref = ObjectRef.of(JOB, "migrate", namespace)
    answers = Answers()
    try:
        assert waited(status, ref, until="ready", timeout=0.3) == Readiness(
            status="InProgress", message="complete 0/1"
        )
        status.watch(ref, until="ready", timeout=30, done=answers)
        now = "2027-01-15T08:00:00Z"
        complete = {"type": "Complete", "status": "True", "lastTransitionTime": now}
        job["status"] = {"startTime": now, "completionTime": now, "succeeded": 1, "conditions": [complete]}
        updated, body = http(cluster, "PUT", f"{path}/migrate/status", job)
        assert updated == 200, body
        assert answers.first(within=30) == Readiness(status="Current", message="complete 1/1")
        assert len(answers.answers) == 1
    finally:
        registry.stop()


def test_cached_objects_leave_out_managed_fields_from_lists_and_watches(
    cluster: ClusterHandle, informers: Informers, namespace: str
) -> None:
    config_map(cluster, namespace, "listed", {"a": "1"})
    status, served = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps/listed")
    assert status == 200 and served["metadata"]["managedFields"]
    informer = informers.informer(CONFIG_MAP, namespaces=frozenset({namespace}))
    informer.wait_until_synced(10)
    config_map(cluster, namespace, "watched", {"b": "2"})
    until(informer, lambda: informer.get(namespace, "watched") is not None)
    for name in ("listed", "watched"):
        cached = informer.get(namespace, name)
        assert cached is not None and "managedFields" not in cached["metadata"]
        assert cached["metadata"]["uid"] and cached["metadata"]["resourceVersion"]


class NoStorageClasses(KubeClient):
    """The real client, for an identity that may not list StorageClasses: that one request is a 403
    (the embedded server enforces no RBAC, and its fault injection cannot single out one resource)."""

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        if method == "GET" and path.endswith("/storageclasses"):
            raise api_error(403, FORBIDDEN_STORAGE_CLASSES)
        return super().request(method, path, **kwargs)


FORBIDDEN_STORAGE_CLASSES = {  # the real server's Status body
    "kind": "Status",
    "apiVersion": "v1",
    "status": "Failure",
    "message": 'storageclasses.storage.k8s.io is forbidden: User "ci" cannot list resource "storageclasses" '
    'in API group "storage.k8s.io" at the cluster scope',
    "reason": "Forbidden",
    "details": {"group": "storage.k8s.io", "kind": "storageclasses"},
    "code": 403,
}


WAITING_CLAIM = {
    "metadata": {"name": "data"},
    "spec": {
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "wait",
        "resources": {"requests": {"storage": "1Gi"}},
    },
}


@pytest.mark.parametrize(
    ("client_class", "expected"),
    [
        (KubeClient, Readiness(status="Current", message="waiting for first consumer")),
        (
            NoStorageClasses,
            Readiness(
                status="InProgress",
                message=(
                    "Pending (cannot list storageclasses: storageclasses.storage.k8s.io is forbidden: "
                    'User "ci" cannot list resource "storageclasses" in API group "storage.k8s.io" at the '
                    "cluster scope: is it waiting for its first consumer?)"
                ),
            ),
        ),
    ],
    ids=[
        "a claim waiting for its first consumer is ready while Pending",
        "without permission to list StorageClasses the wait says what it could not read and why",
    ],
)
def test_a_wait_for_a_claim_in_a_wait_for_first_consumer_class(
    cluster: ClusterHandle,
    namespace: str,
    caplog: pytest.LogCaptureFixture,
    client_class: type[KubeClient],
    expected: Readiness,
) -> None:
    client = client_class.from_config(kubeconfig=str(cluster.kubeconfig), context=None)
    registry = Informers(client)
    scopes: dict[str, frozenset[str] | None] = {"PersistentVolumeClaim": frozenset({namespace})}
    status = CacheStatusSource(client, registry, scopes=scopes, written=WrittenVersions()).start()
    created, body = http(
        cluster, "POST", f"/api/v1/namespaces/{namespace}/persistentvolumeclaims", WAITING_CLAIM
    )
    assert created == 201, body
    claim = ObjectRef.of(PERSISTENT_VOLUME_CLAIM, "data", namespace)
    try:
        with caplog.at_level(logging.WARNING, logger="planner.waiting"):
            assert waited(status, claim, until="ready", timeout=0.5) == expected
            assert waited(status, claim, until="ready", timeout=0.1) == expected
    finally:
        registry.stop()
    warnings = [record.getMessage() for record in caplog.records if record.name == "planner.waiting"]
    if client_class is NoStorageClasses:
        assert warnings == [
            'warning: cannot list storageclasses: storageclasses.storage.k8s.io is forbidden: User "ci" '
            'cannot list resource "storageclasses" in API group "storage.k8s.io" at the cluster scope; '
            "a PersistentVolumeClaim waiting for its first consumer cannot be told from one that is not "
            "binding, so waits for such claims last until they are Bound or time out"
        ]
    else:
        assert warnings == []


def test_wait_reasons_watch_warnings_and_claim_events_but_not_a_pods_normal_events(
    cluster: ClusterHandle, informers: Informers, namespace: str
) -> None:
    def event(name: str, kind: str, event_type: str, reason: str) -> dict[str, Any]:
        involved = {"kind": kind, "namespace": namespace, "name": "web-1" if kind == "Pod" else "data"}
        body = {"metadata": {"name": name}, "involvedObject": involved, "type": event_type, "reason": reason}
        status, created = http(cluster, "POST", f"/api/v1/namespaces/{namespace}/events", body)
        assert status == 201, created
        return involved

    pod = event("pulled", "Pod", "Normal", "Pulled")
    event("failed", "Pod", "Warning", "Failed")
    claim = event("waiting", "PersistentVolumeClaim", "Normal", "WaitForFirstConsumer")
    evidence = Evidence(informers, namespaces=frozenset({namespace})).start()
    try:
        event("unhealthy", "Pod", "Warning", "Unhealthy")  # and one more of each, through the watches
        event("started", "Pod", "Normal", "Started")
        event("provisioning", "PersistentVolumeClaim", "Normal", "ExternalProvisioning")
        about = [
            {"kind": o["kind"], "metadata": {"namespace": namespace, "name": o["name"]}} for o in (pod, claim)
        ]
        deadline = time.monotonic() + 10
        while len(evidence.events_about(about)) < 4 and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)  # a Normal pod Event, were it watched, would have arrived with the others
        seen = sorted(e["metadata"]["name"] for e in evidence.events_about(about))
    finally:
        evidence.close()
    assert seen == ["failed", "provisioning", "unhealthy", "waiting"]
