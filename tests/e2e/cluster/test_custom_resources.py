"""CustomResourceDefinitions and their custom resources over raw HTTP: a CRD is Established when its
create returns, its versions appear in discovery and OpenAPI, its objects are served like built-in ones
(CRUD, selectors, watch, generation, status subresource, merge/JSON patch and server-side apply, 415 for
strategic merge, pruning and schema validation, Table columns), and deleting it takes them along.
Every test uses a group of its own, so the CRDs of one test never meet another's."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from planner.slim import cluster as slim_cluster
from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import urlopen
from tests.slimcluster import http

Obj = dict[str, Any]
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
APPLY = "application/apply-patch+yaml"
_groups = itertools.count()

SCHEMA: Obj = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "size": {"type": "integer", "default": 1, "minimum": 0},
                "color": {"type": "string", "enum": ["red", "blue", "green"]},
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                    },
                },
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
    },
}


def new_group() -> str:
    return f"g{os.getpid()}x{next(_groups)}.example.com"


def crd_body(group: str, *, scope: str = "Namespaced", status: bool = True, **names: Any) -> Obj:
    version: Obj = {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": SCHEMA}}
    if status:
        version["subresources"] = {"status": {}}
    version["additionalPrinterColumns"] = [
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
        {"name": "Color", "type": "string", "jsonPath": ".spec.color", "priority": 1},
    ]
    all_names = {"plural": "widgets", "kind": "Widget", **names}
    return {
        "metadata": {"name": f"{all_names['plural']}.{group}"},
        "spec": {"group": group, "scope": scope, "names": all_names, "versions": [version]},
    }


def create_crd(cluster: ClusterHandle, body: Obj) -> Obj:
    reply = http(cluster, "POST", CRDS, body)
    assert reply.status == 201, reply.body
    created: Obj = reply.body
    return created


@pytest.fixture
def group(cluster: ClusterHandle) -> str:
    name = new_group()
    create_crd(cluster, crd_body(name))
    return name


def widgets(group: str, namespace: str) -> str:
    return f"/apis/{group}/v1/namespaces/{namespace}/widgets"


def widget(name: str, **spec: Any) -> Obj:
    return {"apiVersion": "", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


def post(cluster: ClusterHandle, path: str, body: Obj) -> Obj:
    body = {**body, "apiVersion": path.split("/")[2] + "/v1"}
    reply = http(cluster, "POST", path, body)
    assert reply.status == 201, reply.body
    created: Obj = reply.body
    return created


def condition(crd: Obj, kind: str) -> Obj:
    found: Obj = next(c for c in crd["status"]["conditions"] if c["type"] == kind)
    return found


# --- the CRD ------------------------------------------------------------------------------------------


def test_a_crd_is_defaulted_and_established_with_its_names_accepted(cluster: ClusterHandle) -> None:
    group = new_group()
    created = create_crd(cluster, crd_body(group, shortNames=["wd"]))
    assert created["spec"]["conversion"] == {"strategy": "None"}
    assert created["spec"]["names"] == {
        "plural": "widgets",
        "singular": "widget",
        "kind": "Widget",
        "listKind": "WidgetList",
        "shortNames": ["wd"],
    }
    assert created["metadata"]["generation"] == 1
    status = created["status"]
    assert status["acceptedNames"] == created["spec"]["names"]
    assert status["storedVersions"] == ["v1"]
    assert (condition(created, "NamesAccepted")["status"], condition(created, "NamesAccepted")["reason"]) == (
        "True",
        "NoConflicts",
    )
    assert (condition(created, "Established")["status"], condition(created, "Established")["reason"]) == (
        "True",
        "InitialNamesAccepted",
    )
    got = http(cluster, "GET", f"{CRDS}/widgets.{group}").body
    assert got["status"] == status


def test_an_invalid_crd_is_a_422_naming_each_problem(cluster: ClusterHandle) -> None:
    group = new_group()
    body = crd_body(group)
    body["metadata"]["name"] = f"gadgets.{group}"
    body["spec"]["versions"].append({**body["spec"]["versions"][0], "name": "v2"})
    body["spec"]["scope"] = "Everywhere"
    reply = http(cluster, "POST", CRDS, body)
    assert reply.status == 422, reply.body
    assert reply.body["reason"] == "Invalid"
    assert reply.body["details"]["kind"] == "CustomResourceDefinition"
    assert reply.body["details"]["group"] == "apiextensions.k8s.io"
    causes = {(c["field"], c["reason"]) for c in reply.body["details"]["causes"]}
    assert causes == {
        ("metadata.name", "FieldValueInvalid"),
        ("spec.scope", "FieldValueNotSupported"),
        ("spec.versions", "FieldValueInvalid"),
    }
    assert 'must be spec.names.plural+"."+spec.group' in reply.body["message"]
    assert "must have exactly one version marked as storage version" in reply.body["message"]
    assert http(cluster, "GET", f"{CRDS}/gadgets.{group}").status == 404


def test_a_crd_without_a_schema_or_a_dotted_group_is_refused(cluster: ClusterHandle) -> None:
    body = crd_body("nodot")
    del body["spec"]["versions"][0]["schema"]
    reply = http(cluster, "POST", CRDS, body)
    assert reply.status == 422
    fields = {c["field"] for c in reply.body["details"]["causes"]}
    assert fields == {"spec.group", "spec.versions[0].schema.openAPIV3Schema"}


def test_the_group_and_scope_of_a_crd_cannot_change(cluster: ClusterHandle, group: str) -> None:
    reply = http(
        cluster,
        "PATCH",
        f"{CRDS}/widgets.{group}",
        {"spec": {"scope": "Cluster"}},
        content_type="application/merge-patch+json",
    )
    assert reply.status == 422
    assert [c["field"] for c in reply.body["details"]["causes"]] == ["spec.scope"]


def test_a_kind_another_crd_of_the_group_has_is_not_accepted_nor_served(
    cluster: ClusterHandle, group: str
) -> None:
    clash = crd_body(group, plural="gizmos", singular="gizmo", kind="Widget")
    created = create_crd(cluster, clash)
    names = condition(created, "NamesAccepted")
    assert (names["status"], names["reason"], names["message"]) == (
        "False",
        "KindConflict",
        '"Widget" is already in use',
    )
    established = condition(created, "Established")
    assert (established["status"], established["reason"]) == ("False", "NotAccepted")
    assert "kind" not in created["status"]["acceptedNames"]
    assert http(cluster, "GET", f"/apis/{group}/v1/gizmos").status == 404
    resources = [r["name"] for r in http(cluster, "GET", f"/apis/{group}/v1").body["resources"]]
    assert resources == ["widgets", "widgets/status"]


# --- discovery and OpenAPI ----------------------------------------------------------------------------


def test_an_established_crd_is_in_discovery(cluster: ClusterHandle) -> None:
    group = new_group()
    create_crd(cluster, crd_body(group, shortNames=["wd"], categories=["all"]))
    groups = {g["name"]: g for g in http(cluster, "GET", "/apis").body["groups"]}
    assert groups[group]["preferredVersion"] == {"groupVersion": f"{group}/v1", "version": "v1"}
    assert http(cluster, "GET", f"/apis/{group}").body["versions"] == [
        {"groupVersion": f"{group}/v1", "version": "v1"}
    ]
    listing = http(cluster, "GET", f"/apis/{group}/v1").body
    assert listing["groupVersion"] == f"{group}/v1"
    main, status = listing["resources"]
    assert {
        k: main[k] for k in ("name", "singularName", "namespaced", "kind", "shortNames", "categories")
    } == {
        "name": "widgets",
        "singularName": "widget",
        "namespaced": True,
        "kind": "Widget",
        "shortNames": ["wd"],
        "categories": ["all"],
    }
    assert sorted(main["verbs"]) == sorted(
        ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
    )
    assert (status["name"], status["kind"], status["verbs"]) == (
        "widgets/status",
        "Widget",
        ["get", "patch", "update"],
    )
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    aggregated = http(cluster, "GET", "/apis", headers={"Accept": accept}).body
    item = next(i for i in aggregated["items"] if i["metadata"]["name"] == group)
    resource = item["versions"][0]["resources"][0]
    assert (resource["resource"], resource["scope"], resource["subresources"][0]["subresource"]) == (
        "widgets",
        "Namespaced",
        "status",
    )


def test_the_openapi_document_of_the_group_version_has_the_schema_and_no_strategic_patch(
    cluster: ClusterHandle, group: str
) -> None:
    paths = http(cluster, "GET", "/openapi/v3").body["paths"]
    url = paths[f"apis/{group}/v1"]["serverRelativeURL"]
    document = http(cluster, "GET", url).body
    definition = ".".join(reversed(group.split("."))) + ".v1.Widget"
    schema = document["components"]["schemas"][definition]
    assert schema["x-kubernetes-group-version-kind"] == [{"group": group, "version": "v1", "kind": "Widget"}]
    assert schema["properties"]["spec"] == SCHEMA["properties"]["spec"]
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in document["components"]["schemas"]
    item = document["paths"][f"/apis/{group}/v1/namespaces/{{namespace}}/widgets/{{name}}"]
    assert sorted(item["patch"]["requestBody"]["content"]) == [
        "application/apply-patch+yaml",
        "application/json-patch+json",
        "application/merge-patch+json",
    ]
    assert "fieldValidation" in [p["name"] for p in item["patch"]["parameters"]]
    assert f"/apis/{group}/v1/namespaces/{{namespace}}/widgets/{{name}}/status" in document["paths"]


# --- custom resources ---------------------------------------------------------------------------------


def test_create_prunes_defaults_and_counts_generation(
    cluster: ClusterHandle, group: str, namespace: str
) -> None:
    body = widget("a", color="red", unknown="dropped", extra={"anything": {"goes": [1]}})
    body["status"] = {"ready": True}
    body["metadata"]["labels"] = {"tier": "web"}
    created = post(cluster, widgets(group, namespace), body)
    assert created["apiVersion"] == f"{group}/v1"
    assert created["spec"] == {"color": "red", "size": 1, "extra": {"anything": {"goes": [1]}}}
    assert "status" not in created  # a status subresource: create ignores the status sent
    assert created["metadata"]["generation"] == 1
    got = http(cluster, "GET", f"{widgets(group, namespace)}/a").body
    assert got == created


def test_an_object_against_the_schema_is_a_422(cluster: ClusterHandle, group: str, namespace: str) -> None:
    body = widget("bad", size="big", color="pink")
    body["apiVersion"] = f"{group}/v1"
    reply = http(cluster, "POST", widgets(group, namespace), body)
    assert reply.status == 422, reply.body
    assert reply.body["details"] == {
        "name": "bad",
        "group": group,
        "kind": "Widget",
        "causes": [
            {
                "reason": "FieldValueNotSupported",
                "message": 'Unsupported value: "pink": supported values: "red", "blue", "green"',
                "field": "spec.color",
            },
            {
                "reason": "FieldValueTypeInvalid",
                "message": 'Invalid value: "string": spec.size in body must be of type integer: "string"',
                "field": "spec.size",
            },
        ],
    }
    assert reply.body["message"].startswith(f'Widget.{group} "bad" is invalid: [')


def test_list_with_label_and_field_selectors(cluster: ClusterHandle, group: str, namespace: str) -> None:
    for name, tier in (("one", "web"), ("two", "db"), ("three", "web")):
        body = widget(name)
        body["metadata"]["labels"] = {"tier": tier}
        post(cluster, widgets(group, namespace), body)
    listed = http(cluster, "GET", widgets(group, namespace) + "?labelSelector=tier%3Dweb").body
    assert (listed["kind"], listed["apiVersion"]) == ("WidgetList", f"{group}/v1")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["one", "three"]
    by_name = http(cluster, "GET", widgets(group, namespace) + "?fieldSelector=metadata.name%3Dtwo").body
    assert [i["metadata"]["name"] for i in by_name["items"]] == ["two"]
    everywhere = http(
        cluster, "GET", f"/apis/{group}/v1/widgets?fieldSelector=metadata.namespace%3D{namespace}"
    ).body
    assert len(everywhere["items"]) == 3
    bad = http(cluster, "GET", widgets(group, namespace) + "?fieldSelector=spec.size%3D1")
    assert bad.status == 400


def test_generation_counts_spec_changes_and_status_goes_through_its_subresource(
    cluster: ClusterHandle, group: str, namespace: str
) -> None:
    path = f"{widgets(group, namespace)}/w"
    post(cluster, widgets(group, namespace), widget("w", size=1))
    merge = "application/merge-patch+json"
    labelled = http(cluster, "PATCH", path, {"metadata": {"labels": {"a": "b"}}}, content_type=merge).body
    assert labelled["metadata"]["generation"] == 1
    resized = http(
        cluster, "PATCH", path, {"spec": {"size": 2}, "status": {"ready": True}}, content_type=merge
    ).body
    assert (resized["metadata"]["generation"], resized["spec"]["size"], "status" in resized) == (2, 2, False)
    status = http(
        cluster,
        "PATCH",
        f"{path}/status",
        {"status": {"ready": True}, "spec": {"size": 9}},
        content_type=merge,
    )
    assert status.status == 200, status.body
    assert (status.body["status"], status.body["spec"]["size"], status.body["metadata"]["generation"]) == (
        {"ready": True},
        2,
        2,
    )
    replaced = {**status.body, "spec": {"size": 3}}
    put = http(cluster, "PUT", path, replaced).body
    assert (put["spec"], put["status"], put["metadata"]["generation"]) == ({"size": 3}, {"ready": True}, 3)


def test_without_a_status_subresource_status_is_part_of_the_object(
    cluster: ClusterHandle, namespace: str
) -> None:
    group = new_group()
    create_crd(cluster, crd_body(group, status=False))
    body = widget("s", size=1)
    body["status"] = {"ready": False}
    created = post(cluster, widgets(group, namespace), body)
    assert created["status"] == {"ready": False}
    path = f"{widgets(group, namespace)}/s"
    merge = "application/merge-patch+json"
    patched = http(cluster, "PATCH", path, {"status": {"ready": True}}, content_type=merge).body
    assert (patched["status"], patched["metadata"]["generation"]) == ({"ready": True}, 2)
    assert http(cluster, "GET", f"{path}/status").status == 404


def test_json_patch_and_strategic_merge_refused(cluster: ClusterHandle, group: str, namespace: str) -> None:
    path = f"{widgets(group, namespace)}/j"
    post(cluster, widgets(group, namespace), widget("j", ports=[{"name": "http", "port": 80}]))
    ops = [{"op": "add", "path": "/spec/ports/-", "value": {"name": "https", "port": 443}}]
    patched = http(cluster, "PATCH", path, ops, content_type="application/json-patch+json")
    assert patched.status == 200, patched.body
    assert [p["name"] for p in patched.body["spec"]["ports"]] == ["http", "https"]
    strategic = http(
        cluster, "PATCH", path, {"spec": {"size": 4}}, content_type="application/strategic-merge-patch+json"
    )
    assert strategic.status == 415
    assert strategic.body["reason"] == "UnsupportedMediaType"
    assert strategic.body["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    )


def test_server_side_apply_merges_map_lists_by_key_and_reports_conflicts(
    cluster: ClusterHandle, group: str, namespace: str
) -> None:
    path = f"{widgets(group, namespace)}/ssa"
    first = {
        "apiVersion": f"{group}/v1",
        "kind": "Widget",
        "metadata": {"name": "ssa"},
        "spec": {"size": 1, "ports": [{"name": "http", "port": 80}]},
    }
    created = http(cluster, "PATCH", path + "?fieldManager=alice", first, content_type=APPLY)
    assert created.status == 201, created.body
    second = {**first, "spec": {"ports": [{"name": "metrics", "port": 9090}]}}
    merged = http(cluster, "PATCH", path + "?fieldManager=bob", second, content_type=APPLY)
    assert merged.status == 200, merged.body
    assert merged.body["spec"]["ports"] == [{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}]
    managers = {e["manager"]: e["fieldsV1"] for e in merged.body["metadata"]["managedFields"]}
    assert managers["bob"] == {
        "f:spec": {"f:ports": {'k:{"name":"metrics"}': {".": {}, "f:name": {}, "f:port": {}}}}
    }
    conflicting = {**first, "spec": {"size": 5}}
    conflict = http(cluster, "PATCH", path + "?fieldManager=bob", conflicting, content_type=APPLY)
    assert conflict.status == 409
    assert conflict.body["details"]["causes"][0]["field"] == ".spec.size"
    forced = http(cluster, "PATCH", path + "?fieldManager=bob&force=true", conflicting, content_type=APPLY)
    assert forced.body["spec"]["size"] == 5
    assert forced.body["metadata"]["generation"] == 3
    # bob's apply no longer names the metrics port: it goes
    assert forced.body["spec"]["ports"] == [{"name": "http", "port": 80}]


def test_watch_sends_added_modified_deleted(cluster: ClusterHandle, group: str, namespace: str) -> None:
    base = widgets(group, namespace)
    rv = http(cluster, "GET", base).body["metadata"]["resourceVersion"]
    post(cluster, base, widget("watched"))
    http(
        cluster,
        "PATCH",
        f"{base}/watched",
        {"spec": {"size": 7}},
        content_type="application/merge-patch+json",
    )
    assert http(cluster, "DELETE", f"{base}/watched").status == 200
    with urlopen(cluster, f"{base}?watch=1&resourceVersion={rv}&timeoutSeconds=1", timeout=10) as stream:
        events = [json.loads(line) for line in stream.read().splitlines() if line.strip()]
    assert [(e["type"], e["object"]["kind"], e["object"]["apiVersion"]) for e in events] == [
        ("ADDED", "Widget", f"{group}/v1"),
        ("MODIFIED", "Widget", f"{group}/v1"),
        ("DELETED", "Widget", f"{group}/v1"),
    ]
    assert events[1]["object"]["spec"]["size"] == 7


def test_a_table_has_the_printer_columns(cluster: ClusterHandle, group: str, namespace: str) -> None:
    post(cluster, widgets(group, namespace), widget("t", size=3, color="blue"))
    table = http(cluster, "GET", widgets(group, namespace), headers={"Accept": TABLE}).body
    assert table["kind"] == "Table"
    assert [(c["name"], c["type"], c["priority"]) for c in table["columnDefinitions"]] == [
        ("Name", "string", 0),
        ("Size", "integer", 0),
        ("Color", "string", 1),
    ]
    assert [row["cells"] for row in table["rows"]] == [["t", 3, "blue"]]


def test_a_crd_without_printer_columns_prints_name_and_age(cluster: ClusterHandle) -> None:
    group = new_group()
    body = crd_body(group, scope="Cluster")
    del body["spec"]["versions"][0]["additionalPrinterColumns"]
    create_crd(cluster, body)
    created = post(cluster, f"/apis/{group}/v1/widgets", widget("cluster-wide"))
    assert "namespace" not in created["metadata"]
    table = http(cluster, "GET", f"/apis/{group}/v1/widgets", headers={"Accept": TABLE}).body
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Age"]
    assert table["rows"][0]["cells"][0] == "cluster-wide"
    assert http(cluster, "GET", f"/apis/{group}/v1/namespaces/default/widgets").status == 404


def test_deleting_the_crd_deletes_its_objects_and_its_discovery(
    cluster: ClusterHandle, namespace: str
) -> None:
    group = new_group()
    create_crd(cluster, crd_body(group))
    post(cluster, widgets(group, namespace), widget("gone"))
    reply = http(cluster, "DELETE", f"{CRDS}/widgets.{group}")
    assert reply.status == 200, reply.body
    assert http(cluster, "GET", f"{CRDS}/widgets.{group}").status == 404
    assert http(cluster, "GET", f"{widgets(group, namespace)}/gone").status == 404
    assert http(cluster, "GET", f"/apis/{group}/v1").status == 404
    assert group not in [g["name"] for g in http(cluster, "GET", "/apis").body["groups"]]
    assert f"apis/{group}/v1" not in http(cluster, "GET", "/openapi/v3").body["paths"]
    # a CRD of the same name again starts empty
    create_crd(cluster, crd_body(group))
    assert http(cluster, "GET", widgets(group, namespace)).body["items"] == []


def test_deleting_a_namespace_deletes_its_custom_resources(cluster: ClusterHandle, group: str) -> None:
    name = f"crns{os.getpid()}{next(_groups)}"
    assert http(cluster, "POST", "/api/v1/namespaces", {"metadata": {"name": name}}).status == 201
    post(cluster, widgets(group, name), widget("inside"))
    assert http(cluster, "DELETE", f"/api/v1/namespaces/{name}").status == 200
    assert http(cluster, "GET", f"/apis/{group}/v1/widgets").body["items"] == []


# --- restart and RBAC ---------------------------------------------------------------------------------


def _up(data: Path) -> ClusterHandle:
    info = slim_cluster.up(data_dir=data, port=None, memory=False)
    return ClusterHandle(info.url, info.kubeconfig, info.port, info.pid, info.token, info.ca)


def test_crds_and_custom_resources_survive_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "cluster"
    group = new_group()
    first = _up(data)
    try:
        create_crd(first, crd_body(group))
        post(first, widgets(group, "default"), widget("kept", size=4))
    finally:
        assert slim_cluster.down(data_dir=data) is True
    second = _up(data)
    try:
        got = http(second, "GET", f"{widgets(group, 'default')}/kept")
        assert got.status == 200, got.body
        assert got.body["spec"] == {"size": 4}
        crd = http(second, "GET", f"{CRDS}/widgets.{group}").body
        assert condition(crd, "Established")["status"] == "True"
    finally:
        assert slim_cluster.down(data_dir=data) is True


@pytest.fixture(scope="module")
def rbac_cluster() -> Iterator[ClusterHandle]:
    with running_cluster(rbac=True) as handle:
        yield handle


def test_rbac_grants_custom_resources_by_group_and_resource(rbac_cluster: ClusterHandle) -> None:
    cluster = rbac_cluster
    group = new_group()
    create_crd(cluster, crd_body(group))
    namespace = "default"
    assert (
        http(
            cluster,
            "POST",
            f"/api/v1/namespaces/{namespace}/serviceaccounts",
            {"metadata": {"name": "reader"}},
        ).status
        == 201
    )
    token = http(
        cluster, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/reader/token", {"spec": {}}
    ).body["status"]["token"]
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    role = {
        "metadata": {"name": "widget-reader"},
        "rules": [{"apiGroups": [group], "resources": ["widgets"], "verbs": ["get", "list"]}],
    }
    assert http(cluster, "POST", f"{rbac}/namespaces/{namespace}/roles", role).status == 201
    binding = {
        "metadata": {"name": "widget-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "widget-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": namespace}],
    }
    assert http(cluster, "POST", f"{rbac}/namespaces/{namespace}/rolebindings", binding).status == 201
    post(cluster, widgets(group, namespace), widget("secret-widget"))
    assert http(cluster, "GET", widgets(group, namespace), token=token).status == 200
    denied = http(
        cluster,
        "POST",
        widgets(group, namespace),
        {**widget("mine"), "apiVersion": f"{group}/v1"},
        token=token,
    )
    assert denied.status == 403
    assert denied.body["message"].startswith(
        f'widgets.{group} is forbidden: User "system:serviceaccount:{namespace}:reader" cannot create resource "widgets"'
    )
    assert http(cluster, "GET", f"/apis/{group}/v1/widgets", token=token).status == 403


def test_unknown_fields_follow_field_validation(cluster: ClusterHandle, group: str, namespace: str) -> None:
    base = widgets(group, namespace)
    body = {**widget("v", size=1, bogus=True), "apiVersion": f"{group}/v1"}
    strict = http(cluster, "POST", base + "?fieldValidation=Strict", body)
    assert strict.status == 400
    assert strict.body["message"] == (
        'Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.bogus"'
    )
    warned = http(cluster, "POST", base + "?fieldValidation=Warn", body)
    assert warned.status == 201
    assert warned.warnings == ('299 - "unknown field \\"spec.bogus\\""',)
    assert warned.body["spec"] == {"size": 1}
    merge = "application/merge-patch+json"
    patch = {"spec": {"ports": [{"name": "a", "nope": 1}]}}
    refused = http(cluster, "PATCH", f"{base}/v?fieldValidation=Strict", patch, content_type=merge)
    assert refused.status == 422
    assert refused.body["message"].endswith('strict decoding error: unknown field "spec.ports[0].nope"')
    ignored = http(cluster, "PATCH", f"{base}/v?fieldValidation=Ignore", patch, content_type=merge)
    assert (ignored.status, ignored.warnings, ignored.body["spec"]["ports"]) == (200, (), [{"name": "a"}])
    applied = {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "v"}, "spec": {"junk": 1}}
    apply = http(
        cluster, "PATCH", f"{base}/v?fieldManager=m&fieldValidation=Strict", applied, content_type=APPLY
    )
    assert apply.status == 400
    assert apply.body["message"] == 'strict decoding error: unknown field "spec.junk"'
