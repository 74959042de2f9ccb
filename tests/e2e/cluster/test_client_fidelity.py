"""kubectl fidelity over HTTP: the Python client's default dict PATCH (strategic merge) and server-side apply,
`metadata.resourceVersion` in a patch as a precondition, dry run for every write verb (result computed
and returned, nothing stored, no watch event), and the Table / PartialObjectMetadata representations
(`includeObject`, single objects, watch events as Tables)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from planner.slim.cluster import ClusterHandle
from planner.testing.slimadmin import urlopen
from tests.slimcluster import http

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"


def web_deployment(name: str = "web") -> dict[str, Any]:
    container = {"name": "nginx", "image": "nginx:1.25", "ports": [{"containerPort": 80}]}
    return {
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [container]}},
        },
    }


# --- the Python client's patches --------------------------------------------------------------------------


def test_default_dict_patch_is_a_strategic_merge(apps_v1: client.AppsV1Api, namespace: str) -> None:
    apps_v1.create_namespaced_deployment(namespace, web_deployment())
    sidecar = {"name": "log", "image": "busybox"}
    patched = apps_v1.patch_namespaced_deployment(
        "web",
        namespace,
        {"spec": {"template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.26"}, sidecar]}}}},
    )
    containers = patched.spec.template.spec.containers
    assert [(c.name, c.image) for c in containers] == [("nginx", "nginx:1.26"), ("log", "busybox")]
    assert containers[0].ports[0].container_port == 80  # merged by name, not replaced
    removed = apps_v1.patch_namespaced_deployment(
        "web",
        namespace,
        {"spec": {"template": {"spec": {"containers": [{"name": "log", "$patch": "delete"}]}}}},
    )
    assert [c.name for c in removed.spec.template.spec.containers] == ["nginx"]


def test_a_stale_resource_version_in_a_patch_is_a_conflict(core_v1: client.CoreV1Api, namespace: str) -> None:
    created = core_v1.create_namespaced_config_map(namespace, {"metadata": {"name": "c"}, "data": {"a": "1"}})
    core_v1.patch_namespaced_config_map("c", namespace, {"data": {"a": "2"}})
    stale = {"metadata": {"resourceVersion": created.metadata.resource_version}, "data": {"a": "3"}}
    with pytest.raises(ApiException) as refused:
        core_v1.patch_namespaced_config_map("c", namespace, stale)
    assert refused.value.status == 409
    assert json.loads(refused.value.body)["message"] == (
        'Operation cannot be fulfilled on configmaps "c": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    assert core_v1.read_namespaced_config_map("c", namespace).data == {"a": "2"}


def test_python_client_server_side_apply_twice_keeps_the_resource_version(
    apps_v1: client.AppsV1Api, namespace: str
) -> None:
    body = {"apiVersion": "apps/v1", "kind": "Deployment", **web_deployment()}
    first = apps_v1.patch_namespaced_deployment(
        "web", namespace, body, field_manager="planner", _content_type=APPLY
    )
    again = apps_v1.patch_namespaced_deployment(
        "web", namespace, body, field_manager="planner", _content_type=APPLY
    )
    assert again.metadata.resource_version == first.metadata.resource_version
    (entry,) = again.metadata.managed_fields
    assert (entry.manager, entry.operation, entry.api_version) == ("planner", "Apply", "apps/v1")


def test_a_plain_write_is_recorded_under_the_user_agents_program_name(
    cluster: ClusterHandle, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    created = http(cluster, "POST", path, {"metadata": {"name": "c"}, "data": {"a": "1"}}, headers=AGENT)
    (entry,) = created.body["metadata"]["managedFields"]
    assert entry["manager"] == "kubectl-create"
    assert entry["operation"] == "Update"
    assert entry["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}}
    named = http(
        cluster,
        "PATCH",
        f"{path}/c?fieldManager=planner",
        {"data": {"b": "2"}},
        content_type=MERGE,
        headers=AGENT,
    )
    assert [e["manager"] for e in named.body["metadata"]["managedFields"]] == ["kubectl-create", "planner"]


AGENT = {"User-Agent": "kubectl-create/v1.28.7 (linux/amd64) kubernetes/c8dcb00"}

# --- dry run ----------------------------------------------------------------------------------------------

CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
DRY_RUN_CASES = [
    ("PUT", {**CONFIGMAP, "data": {"a": "1", "extra": "x"}}, "application/json", 200),
    ("PATCH", [{"op": "add", "path": "/data/extra", "value": "x"}], JSON_PATCH, 200),
    ("PATCH", {"data": {"extra": "x"}}, MERGE, 200),
    ("PATCH", {"data": {"extra": "x"}}, STRATEGIC, 200),
    ("PATCH", json.dumps({**CONFIGMAP, "data": {"extra": "x"}}), APPLY, 200),
]


def watch_events(cluster: ClusterHandle, path: str, resource_version: str) -> list[dict[str, Any]]:
    watched = f"{path}?watch=1&resourceVersion={resource_version}&timeoutSeconds=1"
    with urlopen(cluster, watched, timeout=10) as reply:
        return [json.loads(line) for line in reply.read().decode().splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("method", "body", "content_type", "status"),
    DRY_RUN_CASES,
    ids=[
        "a dry-run update",
        "a dry-run JSON patch",
        "a dry-run merge patch",
        "a dry-run strategic merge patch",
        "a dry-run server-side apply",
    ],
)
def test_dry_run_writes_return_the_result_and_store_nothing(
    cluster: ClusterHandle, namespace: str, method: str, body: Any, content_type: str, status: int
) -> None:
    collection = f"/api/v1/namespaces/{namespace}/configmaps"
    stored = http(cluster, "POST", collection, CONFIGMAP).body
    query = "?dryRun=All&fieldManager=planner"
    reply = http(cluster, method, f"{collection}/c{query}", body, content_type=content_type)
    assert reply.status == status, reply.body
    assert reply.body["data"]["extra"] == "x"
    assert reply.body["metadata"]["uid"] == stored["metadata"]["uid"]
    assert http(cluster, "GET", f"{collection}/c").body == stored
    assert watch_events(cluster, collection, stored["metadata"]["resourceVersion"]) == []


def test_dry_run_create_and_delete_store_nothing(cluster: ClusterHandle, namespace: str) -> None:
    collection = f"/api/v1/namespaces/{namespace}/configmaps"
    revision = http(cluster, "GET", collection).body["metadata"]["resourceVersion"]
    created = http(cluster, "POST", f"{collection}?dryRun=All", CONFIGMAP)
    assert created.status == 201 and created.body["metadata"]["uid"]
    assert "resourceVersion" not in created.body["metadata"]
    assert http(cluster, "GET", f"{collection}/c").status == 404
    applied = http(
        cluster,
        "PATCH",
        f"{collection}/d?dryRun=All&fieldManager=planner",
        "data: {a: '1'}",
        content_type=APPLY,
    )
    assert applied.status == 201 and applied.body["metadata"]["managedFields"][0]["manager"] == "planner"
    assert http(cluster, "GET", f"{collection}/d").status == 404
    assert watch_events(cluster, collection, revision) == []
    stored = http(cluster, "POST", collection, CONFIGMAP).body
    deleted = http(cluster, "DELETE", f"{collection}/c?dryRun=All")
    assert deleted.status == 200 and deleted.body["status"] == "Success"
    assert http(cluster, "GET", f"{collection}/c").body == stored
    assert watch_events(cluster, collection, stored["metadata"]["resourceVersion"]) == []


def test_a_dry_run_service_does_not_keep_its_cluster_ip(cluster: ClusterHandle, namespace: str) -> None:
    collection = f"/api/v1/namespaces/{namespace}/services"
    service = {"metadata": {"name": "s"}, "spec": {"clusterIP": "10.96.200.7", "ports": [{"port": 80}]}}
    assert http(cluster, "POST", f"{collection}?dryRun=All", service).status == 201
    created = http(cluster, "POST", collection, service)
    assert created.status == 201 and created.body["spec"]["clusterIP"] == "10.96.200.7"


# --- tables -----------------------------------------------------------------------------------------------


def test_include_object_object_puts_the_whole_object_in_each_row(
    cluster: ClusterHandle, namespace: str
) -> None:
    collection = f"/api/v1/namespaces/{namespace}/configmaps"
    http(cluster, "POST", collection, CONFIGMAP)
    table = http(
        cluster,
        "GET",
        f"{collection}?includeObject=Object&fieldSelector=metadata.name=c",
        headers={"Accept": TABLE},
    ).body
    (row,) = table["rows"]
    assert row["cells"][:2] == ["c", 1]
    assert (row["object"]["kind"], row["object"]["apiVersion"], row["object"]["data"]) == (
        "ConfigMap",
        "v1",
        {"a": "1"},
    )


def test_a_single_object_as_table_and_as_partial_metadata(cluster: ClusterHandle, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/c"
    stored = http(cluster, "POST", f"/api/v1/namespaces/{namespace}/configmaps", CONFIGMAP).body
    table = http(cluster, "GET", path, headers={"Accept": TABLE}).body
    assert table["metadata"] == {"resourceVersion": stored["metadata"]["resourceVersion"]}
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert table["rows"][0]["object"] == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": stored["metadata"],
    }
    partial = http(
        cluster,
        "GET",
        path,
        headers={"Accept": "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"},
    )
    assert partial.body == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": stored["metadata"],
    }


def test_watch_as_table_sends_column_definitions_in_the_first_event_only(
    cluster: ClusterHandle, namespace: str
) -> None:
    collection = f"/api/v1/namespaces/{namespace}/configmaps"
    first = http(cluster, "POST", collection, CONFIGMAP).body
    http(cluster, "PATCH", f"{collection}/c", {"data": {"a": "2"}}, content_type=MERGE)
    since = int(first["metadata"]["resourceVersion"]) - 1
    watched = f"{collection}?watch=1&resourceVersion={since}&timeoutSeconds=1"
    with urlopen(cluster, watched, headers={"Accept": TABLE}, timeout=10) as reply:
        events = [json.loads(line) for line in reply.read().decode().splitlines() if line.strip()]
    assert [(e["type"], e["object"]["kind"]) for e in events] == [("ADDED", "Table"), ("MODIFIED", "Table")]
    assert [c["name"] for c in events[0]["object"]["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert events[1]["object"]["columnDefinitions"] is None
    assert [e["object"]["rows"][0]["cells"][:2] for e in events] == [["c", 1], ["c", 1]]
    assert events[1]["object"]["rows"][0]["object"]["kind"] == "PartialObjectMetadata"


# --- server-side apply creating an object -------------------------------------------------------------


def test_server_side_apply_creating_ignores_a_resource_version_in_the_configuration(
    cluster: ClusterHandle, namespace: str
) -> None:
    """The apiserver creates through its update path, whose storage ignores the resourceVersion (only
    a POST's create refuses one, with a 500): the object is created at a resourceVersion of its own."""
    config = {**CONFIGMAP, "metadata": {"name": "c", "resourceVersion": "123456789"}}
    path = f"/api/v1/namespaces/{namespace}/configmaps/c?fieldManager=planner"
    created = http(cluster, "PATCH", path, json.dumps(config), content_type=APPLY)
    assert (created.status, created.body["data"]) == (201, {"a": "1"}), created.body
    assert created.body["metadata"]["resourceVersion"] != "123456789"
    read = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps/c")
    assert read.body["metadata"]["resourceVersion"] == created.body["metadata"]["resourceVersion"]
    posted = http(
        cluster,
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        {**config, "metadata": {"name": "d", "resourceVersion": "1"}},
    )
    assert (posted.status, posted.body["message"]) == (
        500,
        "resourceVersion should not be set on objects to be created",
    )


def test_server_side_apply_creating_with_a_uid_is_a_conflict(cluster: ClusterHandle, namespace: str) -> None:
    config = {**CONFIGMAP, "metadata": {"name": "c", "uid": "0e6f1a52-4bde-4e45-9a0c-0ad2d1b6a2a1"}}
    path = f"/api/v1/namespaces/{namespace}/configmaps/c?fieldManager=planner"
    refused = http(cluster, "PATCH", path, json.dumps(config), content_type=APPLY)
    assert (refused.status, refused.body["reason"], refused.body["details"]) == (
        409,
        "Conflict",
        {"name": "c", "kind": "configmaps"},
    )
    assert refused.body["message"] == (
        'Operation cannot be fulfilled on configmaps "c": uid mismatch: the provided object specified uid '
        "0e6f1a52-4bde-4e45-9a0c-0ad2d1b6a2a1, and no existing object was found"
    )
    assert http(cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps/c").status == 404


# --- planner's create: a POST, then a JSON patch that turns its entry into an Apply entry ----------------


def test_a_json_patch_of_a_managed_fields_entry_stores_its_field_set_without_empty_values(
    cluster: ClusterHandle, namespace: str
) -> None:
    collection = f"/api/v1/namespaces/{namespace}/configmaps"
    entry = http(cluster, "POST", f"{collection}?fieldManager=planner", CONFIGMAP).body["metadata"][
        "managedFields"
    ][0]
    assert entry["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}}
    sent = {"f:data": {".": {}, "f:a": {}, "f:b": None, "f:c": "", "f:d": []}, "f:metadata": {"labels": {}}}
    where = "/metadata/managedFields/0"
    operations = [
        {"op": "test", "path": f"{where}/fieldsV1", "value": entry["fieldsV1"]},
        {"op": "replace", "path": where, "value": {**entry, "operation": "Apply", "fieldsV1": sent}},
    ]
    patched = http(cluster, "PATCH", f"{collection}/c", operations, content_type=JSON_PATCH)
    assert patched.status == 200, patched.body
    kept = {"f:data": {".": {}, "f:a": {}}, "f:metadata": {}}
    assert [(e["operation"], e["fieldsV1"]) for e in patched.body["metadata"]["managedFields"]] == [
        ("Apply", kept)
    ]
    assert http(cluster, "GET", f"{collection}/c").body == patched.body


def test_every_answer_names_its_priority_and_fairness_flow_schema(
    cluster: ClusterHandle, namespace: str
) -> None:
    """As kube-apiserver does: a read, a refusal and the `/livez/ping` check cli-utils probes all name
    the flow schema and priority level, the same pair each time (this server queues nothing)."""
    answers = [
        http(cluster, "GET", f"/api/v1/namespaces/{namespace}"),
        http(cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps/missing"),
        http(cluster, "GET", "/livez/ping", headers={"Accept": "text/plain"}),
    ]
    assert [answer.status for answer in answers] == [200, 404, 200]
    assert answers[2].body == "ok"
    pairs = {
        (
            answer.headers["X-Kubernetes-Pf-Flowschema-Uid"],
            answer.headers["X-Kubernetes-Pf-Prioritylevel-Uid"],
        )
        for answer in answers
    }
    [(flow_schema, priority_level)] = pairs
    assert flow_schema != priority_level and len(flow_schema) == len(priority_level) == 36
