"""The Writer against a real embedded server: creates (own and foreign 409s), server-side apply updates,
deletes, namespaces, and the ApplySet parent with its run record under resourceVersion conflicts.
State is checked through raw HTTP, never through the writer's own return values alone."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Mapping
from typing import Any

import pytest

from planner.errors import OwnershipError
from planner.kinds import JOB, for_manifest
from planner.kube.client import KubeClient, resource_path
from planner.objects import ObjectRef, ref_of
from planner.plan import load_plans
from planner.render import render
from planner.slim.cluster import ClusterHandle
from planner.state.applyset import APPLIED_KEY, AppliedClosure, ParentRecord, applied_closure, is_recorded_job
from planner.writes import KubeWriter
from tests.e2e.conftest import http, put_retrying
from tests.paths import REPO

PART_OF = "applyset.kubernetes.io/part-of"
PLAN_ID = "applyset-test-v1"


@pytest.fixture
def client(cluster: ClusterHandle) -> KubeClient:
    return KubeClient.from_config(kubeconfig=str(cluster.kubeconfig), context=None)


@pytest.fixture
def writer(client: KubeClient) -> KubeWriter:
    return KubeWriter(client)


def config_map(
    namespace: str, *, labels: Mapping[str, str] | None = None, data: Any = None
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "settings",
            "namespace": namespace,
            "labels": {PART_OF: PLAN_ID, **(labels or {})},
            "annotations": {"planner.dev/plan": "shop"},
        },
        "data": data or {"mode": "fast"},
    }


def deployment(namespace: str, *, replicas: int | None = None, image: str = "nginx:1.27") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "api"}},
        "template": {
            "metadata": {"labels": {"app": "api"}},
            "spec": {"containers": [{"name": "api", "image": image}]},
        },
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "api",
            "namespace": namespace,
            "labels": {PART_OF: PLAN_ID},
            "annotations": {"planner.dev/plan": "shop"},
        },
        "spec": spec,
    }


def recorded_job(namespace: str, *, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A Job planner records the run of: created by POST, holding the run-record finalizer outside
    planner's `Apply` entry (every other create is a create-only server-side apply)."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "migrate",
            "namespace": namespace,
            "labels": {PART_OF: PLAN_ID, **(labels or {})},
            "annotations": {"planner.dev/plan": "shop", "planner.dev/run-key": "migrate-1"},
        },
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "busybox:1.36"}]}
            }
        },
    }


def job_path(namespace: str) -> str:
    return f"/apis/batch/v1/namespaces/{namespace}/jobs/migrate"


def get(cluster: ClusterHandle, path: str) -> Any:
    status, body = http(cluster, "GET", path)
    assert status == 200, body
    return body


def test_create_leaves_only_planners_apply_entry_so_a_dropped_label_goes_on_the_next_apply(
    cluster: ClusterHandle, writer: KubeWriter, namespace: str
) -> None:
    writer.create(config_map(namespace, labels={"team": "shop"}))
    path = f"/api/v1/namespaces/{namespace}/configmaps/settings"
    entries = get(cluster, path)["metadata"]["managedFields"]
    assert [(e["manager"], e["operation"]) for e in entries] == [("planner", "Apply")]
    writer.apply(config_map(namespace))
    assert get(cluster, path)["metadata"]["labels"] == {PART_OF: PLAN_ID}


def fields_of(obj: Mapping[str, Any]) -> list[tuple[str, str, Any]]:
    return [(e["manager"], e["operation"], e.get("fieldsV1")) for e in obj["metadata"]["managedFields"]]


EXAMPLE_PLANS = ["web-stack.yaml", "pod-fidelity.yaml", "sandboxes.yaml"]


@pytest.mark.parametrize("plan_file", EXAMPLE_PLANS)
def test_a_create_records_exactly_the_fields_an_apply_create_records_in_one_request(
    cluster: ClusterHandle, client: KubeClient, writer: KubeWriter, plan_file: str, namespace: str
) -> None:
    """One create-only apply; two requests for a recorded Job (a POST holding the run-record
    finalizer, and the patch that makes its entry planner's `Apply` one)."""
    other = f"{namespace}-apply"
    status, body = http(cluster, "POST", "/api/v1/namespaces", {"metadata": {"name": other}})
    assert status == 201, body
    loaded = load_plans([REPO / "plans" / plan_file], environ={})
    manifests = [m for plan in loaded.plans for m in render(plan, namespace) if for_manifest(m).namespaced]
    for manifest in manifests:
        mine = {**manifest, "metadata": {**manifest["metadata"], "namespace": namespace}}
        theirs = {**manifest, "metadata": {**manifest["metadata"], "namespace": other}}
        before = client.log.total
        created = writer.create(mine)
        assert client.log.total - before == (2 if is_recorded_job(mine) else 1), ref_of(mine)
        applied = client.server_side_apply(for_manifest(theirs), theirs, field_manager="planner", force=True)
        assert fields_of(created) == fields_of(applied), ref_of(mine)
        kind = for_manifest(mine)
        assert fields_of(get(cluster, resource_path(kind, namespace, ref_of(mine).name))) == fields_of(
            applied
        )


def interfering(cluster: ClusterHandle, client: KubeClient, write: Any) -> Any:
    """`client.request` with `write(created)` sent by someone else right after planner's POST."""
    send = client.request

    def request(method: str, url: str, **options: Any) -> Any:
        answer = send(method, url, **options)
        if method == "POST":
            write(answer)
        return answer

    return request


def test_a_status_write_between_a_jobs_post_and_its_patch_leaves_the_create_at_two_requests(
    cluster: ClusterHandle, client: KubeClient, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = job_path(namespace)

    def controller_reports_status(created: dict[str, Any]) -> None:
        # a manager sorting after `planner`, so its entry never moves planner's, whatever the second
        status_path = f"{path}/status?fieldManager=status-writer"
        status, body = http(cluster, "PUT", status_path, {**created, "status": {"active": 1}})
        assert status == 200, body

    monkeypatch.setattr(client, "request", interfering(cluster, client, controller_reports_status))
    KubeWriter(client).create(recorded_job(namespace))
    assert client.log.by_verb == {"create": 1, "patch": 1}
    live = get(cluster, path)
    assert live["status"] == {"active": 1}
    assert [(e["manager"], e["operation"]) for e in live["metadata"]["managedFields"]] == [
        ("planner", "Apply"),
        ("status-writer", "Update"),
    ]
    assert live["metadata"]["finalizers"] == ["planner.dev/run-record"]


def test_a_write_that_moves_a_jobs_create_entry_down_costs_a_second_patch_there_not_a_read_or_an_apply(
    cluster: ClusterHandle, client: KubeClient, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = job_path(namespace)

    other = KubeClient.from_config(kubeconfig=str(cluster.kubeconfig), context=None)

    def another_tool_applies_a_label(created: dict[str, Any]) -> None:  # an Apply entry sorts first
        metadata = {"name": "migrate", "namespace": namespace, "labels": {"team": "shop"}}
        label = {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata}
        other.server_side_apply(JOB, label, field_manager="labeller", force=False)

    monkeypatch.setattr(client, "request", interfering(cluster, client, another_tool_applies_a_label))
    KubeWriter(client).create(recorded_job(namespace, labels={"tier": "web"}))
    assert client.log.by_verb == {"create": 1, "patch": 2}
    live = get(cluster, path)
    assert [(e["manager"], e["operation"]) for e in live["metadata"]["managedFields"]] == [
        ("labeller", "Apply"),
        ("planner", "Apply"),
    ]
    assert live["metadata"]["labels"] == {PART_OF: PLAN_ID, "tier": "web", "team": "shop"}


def test_a_jobs_create_whose_entry_changed_before_its_patch_falls_back_to_apply_and_keeps_the_other_writer(
    cluster: ClusterHandle, client: KubeClient, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = job_path(namespace)

    def someone_edits_it(created: dict[str, Any]) -> None:
        labels = {**created["metadata"]["labels"], "team": "shop", "tier": "batch"}
        edited = {**created, "metadata": {**created["metadata"], "labels": labels}}
        status, body = http(cluster, "PUT", path, edited)
        assert status == 200, body

    monkeypatch.setattr(client, "request", interfering(cluster, client, someone_edits_it))
    KubeWriter(client).create(recorded_job(namespace, labels={"tier": "web"}))
    # the patch refused at the entry's place and the next, a read showing planner's entry lost a
    # field, the apply and the removal
    assert client.log.by_verb == {"create": 1, "patch": 3, "get": 1, "apply": 1}
    live = get(cluster, path)
    assert sorted((e["manager"], e["operation"]) for e in live["metadata"]["managedFields"]) == [
        ("Python-urllib", "Update"),
        ("planner", "Apply"),
    ]
    assert live["metadata"]["labels"] == {PART_OF: PLAN_ID, "tier": "web", "team": "shop"}


def test_a_create_meeting_an_object_made_since_the_read_fails_its_precondition_and_writes_nothing(
    cluster: ClusterHandle, client: KubeClient, namespace: str
) -> None:
    """The create-only apply: an object that exists answers 409 before anything is written, also one
    this plan's labels would otherwise let an apply take over silently (it is read, then judged)."""
    foreign = {"metadata": {"name": "settings"}, "data": {"mode": "theirs"}}
    status, created = http(cluster, "POST", f"/api/v1/namespaces/{namespace}/configmaps", foreign)
    assert status == 201, created
    with pytest.raises(OwnershipError):
        KubeWriter(client).create(config_map(namespace))
    assert client.log.by_verb == {"apply": 1, "get": 1}
    live = get(cluster, f"/api/v1/namespaces/{namespace}/configmaps/settings")
    assert live["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert [e["manager"] for e in live["metadata"]["managedFields"]] == ["Python-urllib"]


def test_a_create_that_meets_this_plans_own_object_returns_it_unchanged(
    cluster: ClusterHandle, writer: KubeWriter, namespace: str
) -> None:
    first = writer.create(config_map(namespace))
    again = writer.create(config_map(namespace, data={"mode": "other"}))
    live = get(cluster, f"/api/v1/namespaces/{namespace}/configmaps/settings")
    assert again["metadata"]["uid"] == first["metadata"]["uid"] == live["metadata"]["uid"]
    assert live["data"] == {"mode": "fast"}


@pytest.mark.parametrize(
    "labels",
    [{}, {PART_OF: "applyset-another-plan-v1"}],
    ids=["an unlabelled object is foreign", "another plan's object is foreign"],
)
def test_a_create_that_meets_a_foreign_object_fails_naming_it_and_leaves_it_untouched(
    cluster: ClusterHandle, writer: KubeWriter, namespace: str, labels: dict[str, str]
) -> None:
    foreign = {"metadata": {"name": "api", "labels": labels}, "spec": deployment(namespace)["spec"]}
    status, created = http(cluster, "POST", f"/apis/apps/v1/namespaces/{namespace}/deployments", foreign)
    assert status == 201, created
    with pytest.raises(OwnershipError) as failure:
        writer.create(deployment(namespace, image="nginx:1.28"))
    whose = "another ApplySet holds it" if labels else "written by Python-urllib"
    assert str(failure.value) == (
        f"deployment {namespace}/api exists and is not managed by plan shop ({whose}): "
        "`planner apply --adopt` of this plan takes it over"
    )
    live = get(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments/api")
    assert live["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_apply_keeps_replicas_another_manager_owns_when_the_plan_declares_none(
    cluster: ClusterHandle, writer: KubeWriter, namespace: str
) -> None:
    writer.create(deployment(namespace))
    scale_path = f"/apis/apps/v1/namespaces/{namespace}/deployments/api/scale"
    put_retrying(cluster, scale_path, lambda scale: {**scale, "spec": {"replicas": 5}})
    writer.apply(deployment(namespace, image="nginx:1.28"))
    live = get(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments/api")
    assert live["spec"]["replicas"] == 5
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.28"


def test_apply_takes_over_a_field_another_manager_set_because_it_forces(
    cluster: ClusterHandle, writer: KubeWriter, namespace: str
) -> None:
    writer.create(config_map(namespace))
    path = f"/api/v1/namespaces/{namespace}/configmaps/settings"
    status, _ = http(cluster, "PUT", path, {**get(cluster, path), "data": {"mode": "edited"}})
    assert status == 200
    writer.apply(config_map(namespace))
    assert get(cluster, path)["data"] == {"mode": "fast"}


def test_delete_removes_the_object_and_a_missing_object_is_fine(
    cluster: ClusterHandle, writer: KubeWriter, namespace: str
) -> None:
    writer.create(config_map(namespace))
    ref = ObjectRef(group="", kind="ConfigMap", namespace=namespace, name="settings")
    writer.delete(ref, propagation="Background")
    assert http(cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps/settings")[0] == 404
    writer.delete(ref, propagation="Background")


def test_ensure_namespace_creates_a_missing_one_and_returns_an_existing_one(
    cluster: ClusterHandle, writer: KubeWriter, namespace: str
) -> None:
    fresh = f"{namespace}-new"
    created, new = writer.ensure_namespace(fresh)
    assert new is True
    assert get(cluster, f"/api/v1/namespaces/{fresh}")["metadata"]["uid"] == created["metadata"]["uid"]
    existing, new = writer.ensure_namespace(fresh)
    assert (existing["metadata"]["uid"], new) == (created["metadata"]["uid"], False)


def parent_ref(namespace: str) -> ObjectRef:
    return ObjectRef(group="", kind="Secret", namespace=namespace, name="shop")


def run_data(parent: dict[str, Any]) -> dict[str, str]:
    """The parent's run records: its data less planner's reserved entries (the digest key)."""
    return {k: v for k, v in (parent.get("data") or {}).items() if not k.startswith("planner.")}


def run_entry(name: str, namespace: str, uid: str) -> str:
    document = {"name": name, "namespace": namespace, "uid": uid}
    return base64.b64encode(json.dumps(document, sort_keys=True, separators=(",", ":")).encode()).decode()


def test_the_parent_lists_the_union_of_old_and_new_group_kinds_and_namespaces_and_trims_run_records(
    cluster: ClusterHandle, writer: KubeWriter, namespace: str
) -> None:
    ref = parent_ref(namespace)
    first = ParentRecord(
        group_kinds=("ConfigMap", "Job.batch"), namespaces=(namespace, "other"), run_keys=("k1",)
    )
    writer.write_parent(ref, first)
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "migrate",
            "namespace": namespace,
            "uid": "u-1",
            "annotations": {"planner.dev/run-key": "k1"},
        },
    }
    writer.record_run(ref, job)
    writer.record_run(
        ref,
        {
            **job,
            "metadata": {
                **job["metadata"],
                "name": "old",
                "uid": "u-0",
                "annotations": {"planner.dev/run-key": "k0"},
            },
        },
    )
    second = ParentRecord(
        group_kinds=("Deployment.apps", "Job.batch"), namespaces=(namespace, "third"), run_keys=("k1",)
    )
    writer.write_parent(ref, second)
    parent = get(cluster, f"/api/v1/namespaces/{namespace}/secrets/shop")
    annotations = parent["metadata"]["annotations"]
    assert parent["type"] == "planner.dev/applyset"
    assert parent["metadata"]["labels"]["applyset.kubernetes.io/id"].startswith("applyset-")
    assert annotations["applyset.kubernetes.io/contains-group-kinds"] == "ConfigMap,Deployment.apps,Job.batch"
    assert annotations["applyset.kubernetes.io/additional-namespaces"] == "other,third"
    assert annotations["applyset.kubernetes.io/tooling"].startswith("planner/")
    assert run_data(parent) == {"k1": run_entry("migrate", namespace, "u-1")}
    assert len(base64.b64decode(parent["data"]["planner.digest-key"])) == 32


class InterferingClient(KubeClient):
    """The real client; before its first PUT, another writer updates the same Secret first."""

    interfere: Any = None

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        if method == "PUT" and self.interfere is not None:
            interfere, self.interfere = self.interfere, None
            interfere()
        return super().request(method, path, **kwargs)


def test_a_parent_write_that_loses_a_resource_version_race_rereads_and_keeps_the_other_writers_change(
    cluster: ClusterHandle, namespace: str
) -> None:
    ref = parent_ref(namespace)
    client = InterferingClient.from_config(kubeconfig=str(cluster.kubeconfig), context=None)
    writer = KubeWriter(client)
    writer.write_parent(
        ref, ParentRecord(group_kinds=("ConfigMap",), namespaces=(namespace,), run_keys=("k1",))
    )
    path = f"/api/v1/namespaces/{namespace}/secrets/shop"

    def other_writer_records_a_run() -> None:
        secret = get(cluster, path)
        secret["data"] = {**(secret.get("data") or {}), "k1": run_entry("migrate", namespace, "u-1")}
        assert http(cluster, "PUT", path, secret)[0] == 200

    client.interfere = other_writer_records_a_run
    writer.write_parent(
        ref, ParentRecord(group_kinds=("Job.batch",), namespaces=(namespace,), run_keys=("k1",))
    )
    parent = get(cluster, path)
    assert client.log.by_verb["update"] == 2  # the conflicting PUT, then the one after re-reading
    assert run_data(parent) == {"k1": run_entry("migrate", namespace, "u-1")}
    assert (
        parent["metadata"]["annotations"]["applyset.kubernetes.io/contains-group-kinds"]
        == "ConfigMap,Job.batch"
    )


def test_writes_start_from_the_parent_last_written_and_a_stale_copy_only_costs_a_conflict(
    cluster: ClusterHandle, client: KubeClient, namespace: str
) -> None:
    ref, path = parent_ref(namespace), f"/api/v1/namespaces/{namespace}/secrets/shop"
    writer = KubeWriter(client)
    writer.remember_parent(ref, None)  # as a plan's read found it: no parent yet
    writer.write_parent(ref, ParentRecord(group_kinds=("ConfigMap",), namespaces=(namespace,), run_keys=()))
    assert (client.log.by_verb["get"], client.log.by_verb["create"]) == (0, 1)
    closure = AppliedClosure({f"configmap/{namespace}/settings": "0123456789abcdef"})
    writer.settle_parent(ref, None, closure)
    assert (client.log.by_verb["get"], client.log.by_verb["update"]) == (0, 1)  # from the copy it wrote

    secret = get(cluster, path)  # another writer: a run record, and the closure gone
    secret["data"] = {k: v for k, v in secret["data"].items() if k != APPLIED_KEY}
    secret["data"]["k1"] = run_entry("migrate", namespace, "u-1")
    assert http(cluster, "PUT", path, secret)[0] == 200
    writer.settle_parent(ref, None, closure)  # the copy it wrote needs no change: read afresh first
    assert (client.log.by_verb["get"], client.log.by_verb["update"]) == (1, 2)
    writer.write_parent(
        ref, ParentRecord(group_kinds=("Job.batch",), namespaces=(namespace,), run_keys=("k1",))
    )
    touched = get(cluster, path)  # a newer version once more
    touched["metadata"]["annotations"]["example.com/touched"] = "yes"
    assert http(cluster, "PUT", path, touched)[0] == 200
    writer.settle_parent(ref, None, AppliedClosure({}))  # from a stale copy: 409, read, write
    assert (client.log.by_verb["get"], client.log.by_verb["update"]) == (2, 5)
    parent = get(cluster, path)
    assert run_data(parent) == {"k1": run_entry("migrate", namespace, "u-1")}
    assert (
        parent["metadata"]["annotations"]["applyset.kubernetes.io/contains-group-kinds"]
        == "ConfigMap,Job.batch"
    )

    stale = KubeWriter(client)
    stale.remember_parent(ref, None)  # a plan read before another run made the parent
    stale.settle_parent(ref, None, closure)  # a create: AlreadyExists, then read and replace
    assert applied_closure(get(cluster, path)) == closure
    assert run_data(get(cluster, path)) == {"k1": run_entry("migrate", namespace, "u-1")}


def test_concurrent_run_records_are_all_kept(
    cluster: ClusterHandle, writer: KubeWriter, namespace: str
) -> None:
    ref = parent_ref(namespace)
    keys = [f"k{i}" for i in range(6)]
    writer.write_parent(
        ref, ParentRecord(group_kinds=("Job.batch",), namespaces=(namespace,), run_keys=tuple(keys))
    )

    def record(key: str) -> None:
        metadata = {
            "name": f"job-{key}",
            "namespace": namespace,
            "uid": f"uid-{key}",
            "annotations": {"planner.dev/run-key": key},
        }
        writer.record_run(ref, {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata})

    threads = [threading.Thread(target=record, args=(key,)) for key in keys]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    data = run_data(get(cluster, f"/api/v1/namespaces/{namespace}/secrets/shop"))
    assert data == {key: run_entry(f"job-{key}", namespace, f"uid-{key}") for key in keys}


def test_a_same_named_secret_that_is_not_the_parent_is_never_overwritten(
    cluster: ClusterHandle, writer: KubeWriter, namespace: str
) -> None:
    status, _ = http(
        cluster,
        "POST",
        f"/api/v1/namespaces/{namespace}/secrets",
        {"metadata": {"name": "shop"}, "data": {"a": "Yg=="}},
    )
    assert status == 201
    with pytest.raises(
        OwnershipError, match=f"secret {namespace}/shop exists and is not the ApplySet parent"
    ):
        writer.write_parent(parent_ref(namespace), ParentRecord(group_kinds=(), namespaces=(), run_keys=()))
    assert get(cluster, f"/api/v1/namespaces/{namespace}/secrets/shop")["data"] == {"a": "Yg=="}


def test_a_parent_write_that_changes_nothing_does_not_write(
    cluster: ClusterHandle, writer: KubeWriter, namespace: str
) -> None:
    record = ParentRecord(group_kinds=("ConfigMap",), namespaces=(namespace,), run_keys=())
    first = writer.write_parent(parent_ref(namespace), record)
    writer.write_parent(parent_ref(namespace), record)
    live = get(cluster, f"/api/v1/namespaces/{namespace}/secrets/shop")
    assert live["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
