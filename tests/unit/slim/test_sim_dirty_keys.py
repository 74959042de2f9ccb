"""Which watch events dirty which keys, per controller and for the node agent, and the work queue
that turns dirty keys and timers into passes. Objects are written straight into a store with
hand-picked names and uids, so every expected key below is written out by hand."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from planner.slim.api import Api
from planner.slim.bootstrap import seed
from planner.slim.controllers.base import owner_keys
from planner.slim.controllers.deployments import ReplicaSetController
from planner.slim.controllers.endpoints import EndpointsController
from planner.slim.controllers.gc import GarbageCollector
from planner.slim.controllers.namespaces import namespace_keys
from planner.slim.controllers.volumes import VolumeController
from planner.slim.nodeagent import NODE_KEY, NodeAgent
from planner.slim.reconcilers import Driver, Key, Scale, Switches, WorkQueue
from planner.slim.resources import by_kind
from planner.slim.store import Store, WatchEvent

Obj = dict[str, Any]
PODS = "/pods"
RSS = "apps/replicasets"
DEPLOYMENTS = "apps/deployments"
SERVICES = "/services"
CLAIMS = "/persistentvolumeclaims"
VOLUMES = "/persistentvolumes"


def obj(name: str, *, namespace: str = "shop", uid: str = "", **meta: Any) -> Obj:
    metadata: Obj = {"name": name, "uid": uid or f"uid-{name}", **meta}
    if namespace:
        metadata["namespace"] = namespace
    return {"metadata": metadata}


def owned_by(kind: str, name: str, *, controller: bool = True) -> list[Obj]:
    return [{"apiVersion": "v1", "kind": kind, "name": name, "uid": f"uid-{name}", "controller": controller}]


def pod(name: str, *, labels: Obj | None = None, claims: tuple[str, ...] = (), **meta: Any) -> Obj:
    found = obj(name, labels=labels or {}, **meta)
    found["spec"] = {"volumes": [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]}
    return found


def event(kind: str, resource: str, new: Obj, old: Obj | None = None) -> WatchEvent:
    namespace = new["metadata"].get("namespace", "")
    return WatchEvent(kind, resource, namespace, new["metadata"]["name"], 1, new, old)


def added(resource: str, new: Obj) -> WatchEvent:
    return event("ADDED", resource, new)


def store_with(*objects: tuple[str, Obj]) -> Store:
    store = Store(None)
    for resource, found in objects:
        store.create(resource, found["metadata"].get("namespace", ""), found["metadata"]["name"], found)
    return store


# --- owners: ReplicaSets, Deployments, Jobs, Namespaces -------------------------------------------


def test_a_pod_event_dirties_the_replica_set_controlling_it() -> None:
    web = pod("web-7d-x1", ownerReferences=owned_by("ReplicaSet", "web-7d"))
    assert owner_keys(added(PODS, web), "ReplicaSet") == [Key(RSS, "shop", "web-7d")]


def test_a_pod_moving_between_replica_sets_dirties_both() -> None:
    before = pod("p", ownerReferences=owned_by("ReplicaSet", "old-rs"))
    after = pod("p", ownerReferences=owned_by("ReplicaSet", "new-rs"))
    assert owner_keys(event("MODIFIED", PODS, after, before), "ReplicaSet") == [
        Key(RSS, "shop", "new-rs"),
        Key(RSS, "shop", "old-rs"),
    ]


def test_pods_without_a_controlling_replica_set_dirty_nothing() -> None:
    orphan = pod("p")
    not_controller = pod("q", ownerReferences=owned_by("ReplicaSet", "web-7d", controller=False))
    job_pod = pod("r", ownerReferences=owned_by("Job", "migrate"))
    assert [owner_keys(added(PODS, p), "ReplicaSet") for p in (orphan, not_controller, job_pod)] == [
        [],
        [],
        [],
    ]


def test_a_replica_set_event_dirties_itself_and_its_deployment() -> None:
    rs = obj("web-7d", ownerReferences=owned_by("Deployment", "web"))
    assert owner_keys(added(RSS, rs), "ReplicaSet") == [Key(RSS, "shop", "web-7d")]
    assert owner_keys(added(RSS, rs), "Deployment") == [Key(DEPLOYMENTS, "shop", "web")]
    assert owner_keys(added(DEPLOYMENTS, obj("web")), "Deployment") == [Key(DEPLOYMENTS, "shop", "web")]


def test_a_pod_event_dirties_the_job_controlling_it() -> None:
    worker = pod("migrate-abcde", ownerReferences=owned_by("Job", "migrate"))
    assert owner_keys(event("DELETED", PODS, worker, worker), "Job") == [Key("batch/jobs", "shop", "migrate")]
    assert owner_keys(added("batch/jobs", obj("migrate")), "Job") == [Key("batch/jobs", "shop", "migrate")]


def test_namespace_contents_dirty_their_namespace() -> None:
    account = obj("default")
    assert namespace_keys(event("DELETED", "/serviceaccounts", account, account)) == [
        Key("/namespaces", "", "shop")
    ]
    assert namespace_keys(added("/namespaces", obj("shop", namespace=""))) == [Key("/namespaces", "", "shop")]


# --- Endpoints: selectors both ways ---------------------------------------------------------------


def service(name: str, selector: Obj | None, *, namespace: str = "shop") -> Obj:
    found = obj(name, namespace=namespace)
    found["spec"] = {"selector": selector} if selector is not None else {}
    return found


@pytest.fixture
def endpoints() -> EndpointsController:
    store = store_with(
        (SERVICES, service("web", {"app": "web"})),
        (SERVICES, service("front", {"tier": "front"})),
        (SERVICES, service("web-front", {"app": "web", "tier": "front"})),
        (SERVICES, service("db", {"app": "db"})),
        (SERVICES, service("external", None)),
        (SERVICES, service("web", {"app": "web"}, namespace="other")),
        (PODS, pod("web-1", labels={"app": "web", "tier": "front"})),
        (PODS, pod("web-2", labels={"app": "web", "tier": "back"})),
        (PODS, pod("db-1", labels={"app": "db"})),
    )
    controller = EndpointsController(Api(store))
    controller.resync()
    return controller


def test_a_pod_event_dirties_the_services_whose_selector_matches_it(endpoints: EndpointsController) -> None:
    web = pod("web-9", labels={"app": "web", "tier": "front"})
    assert endpoints.observe(added(PODS, web)) == [
        Key(SERVICES, "shop", "front"),
        Key(SERVICES, "shop", "web"),
        Key(SERVICES, "shop", "web-front"),
    ]


def test_a_relabelled_pod_dirties_the_services_it_left_and_joined(endpoints: EndpointsController) -> None:
    before = pod("db-1", labels={"app": "db"})
    after = pod("db-1", labels={"app": "web", "tier": "back"})
    assert endpoints.observe(event("MODIFIED", PODS, after, before)) == [
        Key(SERVICES, "shop", "db"),
        Key(SERVICES, "shop", "web"),
    ]


def test_a_pod_no_selector_matches_dirties_nothing(endpoints: EndpointsController) -> None:
    assert endpoints.observe(added(PODS, pod("cache", labels={"app": "cache"}))) == []


def test_service_and_endpoints_events_dirty_the_service_of_that_name(endpoints: EndpointsController) -> None:
    mine = obj("web")
    assert endpoints.observe(event("DELETED", "/endpoints", mine, mine)) == [Key(SERVICES, "shop", "web")]
    assert endpoints.observe(added(SERVICES, service("api", {"app": "api"}))) == [
        Key(SERVICES, "shop", "api")
    ]


def test_a_new_service_is_indexed_for_later_pod_events(endpoints: EndpointsController) -> None:
    endpoints.observe(added(SERVICES, service("api", {"app": "api"})))
    endpoints.api.store.create(SERVICES, "shop", "api", service("api", {"app": "api"}))
    assert endpoints.observe(added(PODS, pod("api-1", labels={"app": "api"}))) == [
        Key(SERVICES, "shop", "api")
    ]


def test_selected_pods_are_those_matching_every_pair_in_store_order(endpoints: EndpointsController) -> None:
    names = [p["metadata"]["name"] for p in endpoints.selected_pods("shop", {"app": "web"})]
    front = [p["metadata"]["name"] for p in endpoints.selected_pods("shop", {"app": "web", "tier": "front"})]
    assert (names, front, endpoints.selected_pods("other", {"app": "web"})) == (
        ["web-1", "web-2"],
        ["web-1"],
        [],
    )


# --- volumes --------------------------------------------------------------------------------------


def claim(name: str, *, source: str | None = None) -> Obj:
    found = obj(name)
    found["spec"] = {"dataSource": {"kind": "PersistentVolumeClaim", "name": source}} if source else {}
    return found


def volume(name: str, claim_name: str) -> Obj:
    found = obj(name, namespace="")
    found["spec"] = {"claimRef": {"namespace": "shop", "name": claim_name}}
    return found


@pytest.fixture
def volumes() -> VolumeController:
    store = store_with(
        (CLAIMS, claim("data")),
        (CLAIMS, claim("data-copy", source="data")),
        (VOLUMES, volume("pvc-uid-data", "data")),
    )
    controller = VolumeController(Api(store))
    controller.resync()
    return controller


def test_a_claim_event_dirties_the_claim_its_clones_and_its_volume(volumes: VolumeController) -> None:
    assert volumes.observe(added(CLAIMS, claim("data"))) == [
        Key(CLAIMS, "shop", "data"),
        Key(CLAIMS, "shop", "data-copy"),
        Key(VOLUMES, "", "pvc-uid-data"),
    ]


def test_a_volume_event_dirties_the_volume_and_its_claim(volumes: VolumeController) -> None:
    assert volumes.observe(added(VOLUMES, volume("pv-1", "logs"))) == [
        Key(CLAIMS, "shop", "logs"),
        Key(VOLUMES, "", "pv-1"),
    ]


def test_a_pod_event_dirties_the_claims_it_mounts(volumes: VolumeController) -> None:
    assert volumes.observe(added(PODS, pod("app", claims=("data", "cache")))) == [
        Key(CLAIMS, "shop", "cache"),
        Key(CLAIMS, "shop", "data"),
    ]


# --- the garbage collector ------------------------------------------------------------------------


@pytest.fixture
def collector() -> GarbageCollector:
    store = store_with(
        (DEPLOYMENTS, obj("web")),
        (RSS, obj("web-7d", ownerReferences=owned_by("Deployment", "web"))),
        (PODS, pod("web-7d-x1", ownerReferences=owned_by("ReplicaSet", "web-7d"))),
        (PODS, pod("web-7d-x2", ownerReferences=owned_by("ReplicaSet", "web-7d"))),
    )
    controller = GarbageCollector(Api(store))
    controller.resync()
    return controller


def test_an_event_dirties_the_object_and_its_owners(collector: GarbageCollector) -> None:
    rs = obj("web-7d", ownerReferences=owned_by("Deployment", "web"))
    assert collector.observe(event("MODIFIED", RSS, rs, rs)) == [
        Key(DEPLOYMENTS, "shop", "web"),
        Key(RSS, "shop", "web-7d"),
    ]


def test_a_deleted_owner_dirties_its_dependents(collector: GarbageCollector) -> None:
    rs = obj("web-7d", ownerReferences=owned_by("Deployment", "web"))
    assert collector.observe(event("DELETED", RSS, rs, rs)) == [
        Key(PODS, "shop", "web-7d-x1"),
        Key(PODS, "shop", "web-7d-x2"),
        Key(DEPLOYMENTS, "shop", "web"),
        Key(RSS, "shop", "web-7d"),
    ]


def test_a_pod_event_dirties_its_claims_for_pvc_protection(collector: GarbageCollector) -> None:
    assert collector.observe(added(PODS, pod("app", claims=("data",)))) == [
        Key(CLAIMS, "shop", "data"),
        Key(PODS, "shop", "app"),
    ]


def test_the_full_resync_covers_only_what_the_collector_could_act_on(collector: GarbageCollector) -> None:
    # The Deployment has no owners, finalizers or deletionTimestamp: nothing for the collector to do.
    assert sorted(collector.resync()) == [
        Key(PODS, "shop", "web-7d-x1"),
        Key(PODS, "shop", "web-7d-x2"),
        Key(RSS, "shop", "web-7d"),
    ]


# --- the node agent -------------------------------------------------------------------------------


def test_only_waiting_pods_are_dirtied_by_their_dependencies() -> None:
    agent = NodeAgent(Api(Store(None)), Scale())
    agent.waiting = {"shop": {Key(PODS, "shop", "blocked")}, "other": {Key(PODS, "other", "pending")}}
    config = obj("settings")
    assert agent.observe(added("/configmaps", config)) == [Key(PODS, "shop", "blocked")]
    assert agent.observe(added("/nodes", obj("planner-node-0", namespace=""))) == [
        NODE_KEY,
        Key(PODS, "other", "pending"),
        Key(PODS, "shop", "blocked"),
    ]
    assert agent.observe(added(PODS, pod("web"))) == [Key(PODS, "shop", "web")]


# --- the work queue -------------------------------------------------------------------------------


def test_the_work_queue_takes_dirty_keys_once_and_timers_when_due() -> None:
    queue = WorkQueue()
    a, b, c = Key("r", "ns", "a"), Key("r", "ns", "b"), Key("r", "ns", "c")
    queue.add([b, a, b])
    queue.schedule(c, 20.0)
    queue.schedule(a, 15.0)
    assert (queue.take(10.0), queue.next_due()) == ([a, b], 15.0)
    queue.schedule(a, None)  # a sync that wants no timer cancels the one it had
    assert (queue.next_due(), queue.take(19.0), queue.take(20.0), queue.next_due()) == (20.0, [], [c], None)


def test_a_rescheduled_timer_replaces_the_earlier_one() -> None:
    queue = WorkQueue()
    key = Key("r", "ns", "a")
    queue.schedule(key, 5.0)
    queue.schedule(key, 8.0)
    assert (queue.take(6.0), queue.take(8.0), queue.take(100.0)) == ([], [key], [])


# --- the driver, over a real controller and store -------------------------------------------------


def replica_set(name: str, replicas: int) -> Obj:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


def test_a_pass_syncs_only_the_keys_events_dirtied_until_the_full_resync() -> None:
    api = Api(Store(None))
    seed(api)
    api.create(by_kind("ReplicaSet"), "default", replica_set("idle", 1))
    driver = Driver(ReplicaSetController(api, Scale()), api.store, Switches(), full_resync_seconds=10.0)
    driver.run_pass(1000.0)  # a full resync: "idle" creates its pod
    api.create(by_kind("ReplicaSet"), "default", replica_set("web", 2))
    api.create(by_kind("ConfigMap"), "default", {"metadata": {"name": "unwatched"}})
    driver.run_pass(1001.0)  # "idle" (its pod's event) counts it; "web" (created) creates two pods
    driver.run_pass(1002.0)  # "idle" (its status write) is settled; "web" (its pods' events) counts them
    driver.run_pass(1003.0)  # "web" (its status write) is settled
    driver.run_pass(1004.0)  # nothing is dirty
    assert (driver.counts.passes, driver.counts.synced, driver.counts.full_resyncs) == (5, 6, 1)
    pods = sorted(p["metadata"]["generateName"] for p in api.store.list("/pods", "default"))
    replicas = [
        (api.store.get(RSS, "default", n) or {}).get("status", {}).get("replicas") for n in ("idle", "web")
    ]
    assert (pods, replicas) == (["idle-", "web-", "web-"], [1, 2])
    driver.run_pass(1010.0)  # the backstop: every ReplicaSet again
    assert (driver.counts.synced, driver.counts.full_resyncs) == (8, 2)


class CountingReconciler:
    """A reconciler of `keys` ConfigMaps that only records the order of its syncs."""

    component = "controllers"
    watches: tuple[str, ...] = ()
    min_interval = 0.0

    def __init__(self, keys: int, log: list[str]) -> None:
        self.keys = [Key("/configmaps", "shop", f"c{n:04d}") for n in range(keys)]
        self.log = log

    def observe(self, event: WatchEvent) -> list[Key]:
        return []

    def resync(self) -> list[Key]:
        return self.keys

    def sync(self, key: Key, now: float) -> float | None:
        self.log.append(key.name)
        return None


def test_a_large_pass_lets_the_event_loop_run_between_slices() -> None:
    log: list[str] = []
    driver = Driver(CountingReconciler(600, log), Store(None), Switches(), full_resync_seconds=60.0)

    async def a_request_meanwhile() -> None:
        log.append("request")

    async def both() -> None:
        request = asyncio.ensure_future(a_request_meanwhile())
        await driver.run_pass_in_slices(1000.0)  # a full resync: every key, in slices of 256
        await request

    asyncio.run(both())
    # The request ran after the first slice, not after the whole pass; every key was synced once, in order.
    assert log.index("request") == 256
    assert [name for name in log if name != "request"] == [f"c{n:04d}" for n in range(600)]
    assert (driver.counts.passes, driver.counts.synced) == (1, 600)


def test_a_pause_that_begins_between_slices_leaves_the_rest_for_later() -> None:
    log: list[str] = []
    switches = Switches()
    driver = Driver(CountingReconciler(300, log), Store(None), switches, full_resync_seconds=60.0)

    async def pause_meanwhile() -> None:
        switches.pause("controllers")

    async def both() -> None:
        pausing = asyncio.ensure_future(pause_meanwhile())
        await driver.run_pass_in_slices(1000.0)
        await pausing

    asyncio.run(both())
    assert len(log) == 256  # the first slice, then the pause
    assert driver.queue.take(1000.0) == [Key("/configmaps", "shop", f"c{n:04d}") for n in range(256, 300)]
