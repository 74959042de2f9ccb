"""The HTTP-free core as the controllers use it: in-process calls get the same defaulting,
admission, validation, resourceVersions and watch events as HTTP clients."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import pytest

from planner.slim.api import Api, ListOptions, WatchOptions, WriteOptions
from planner.slim.bootstrap import seed
from planner.slim.resources import by_kind
from planner.slim.status_errors import StatusError
from planner.slim.store import Store

POD = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


@pytest.fixture
def api() -> Api:
    core = Api(Store(None))
    seed(core)
    return core


def test_in_process_create_is_defaulted_and_admitted(api: Api) -> None:
    pod = api.create(by_kind("Pod"), "default", POD)
    assert pod["spec"]["serviceAccountName"] == "default"
    assert pod["spec"]["containers"][0]["imagePullPolicy"] == "Always"
    assert pod["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    assert (
        api.get(by_kind("Pod"), "default", "p")["metadata"]["resourceVersion"]
        == pod["metadata"]["resourceVersion"]
    )


def test_in_process_errors_carry_the_status_body(api: Api) -> None:
    with pytest.raises(StatusError) as missing:
        api.get(by_kind("ConfigMap"), "default", "nope")
    assert missing.value.code == 404
    assert missing.value.body["details"] == {"name": "nope", "kind": "configmaps"}


def test_status_update_in_process(api: Api) -> None:
    api.create(by_kind("Pod"), "default", POD)
    status = {"status": {"phase": "Running", "podIP": "10.244.0.5"}}
    updated, _ = api.patch_or_create(
        by_kind("Pod"),
        "default",
        "p",
        b'{"status":{"phase":"Running","podIP":"10.244.0.5"}}',
        "application/merge-patch+json",
        subresource="status",
    )
    assert updated["status"]["phase"] == status["status"]["phase"]
    listed = api.list(by_kind("Pod"), "default", ListOptions(field_selector="status.phase=Running"))
    assert [p["metadata"]["name"] for p in listed["items"]] == ["p"]


@pytest.mark.parametrize(
    ("kind", "namespace", "selector", "expected"),
    [
        ("Namespace", None, "metadata.name=kube-system", ["kube-system"]),
        ("Namespace", None, "metadata.name=absent", []),
        ("Namespace", None, "metadata.name=default,metadata.name!=default", []),
        (
            "ConfigMap",
            None,
            "metadata.name=kube-root-ca.crt",
            ["default", "kube-node-lease", "kube-public", "kube-system"],
        ),
        ("ConfigMap", "default", "metadata.name=kube-root-ca.crt", ["default"]),
    ],
    ids=[
        "a cluster-scoped object by name",
        "a missing name lists nothing",
        "the other terms still apply",
        "a namespaced name across namespaces",
        "a namespaced name in one namespace",
    ],
)
def test_a_list_by_metadata_name(
    api: Api, kind: str, namespace: str | None, selector: str, expected: list[str]
) -> None:
    listed = api.list(by_kind(kind), namespace, ListOptions(field_selector=selector))
    found = [item["metadata"].get("namespace") or item["metadata"]["name"] for item in listed["items"]]
    assert found == expected


def test_in_process_watch_sees_writes(api: Api) -> None:
    async def scenario() -> list[tuple[str, Any]]:
        rv = api.list(by_kind("ConfigMap"), "default")["metadata"]["resourceVersion"]
        stream = api.watch(
            by_kind("ConfigMap"), "default", WatchOptions(resource_version=rv, timeout_seconds=0.3)
        )
        api.create(by_kind("ConfigMap"), "default", {"metadata": {"name": "seen"}})
        api.delete(by_kind("ConfigMap"), "default", "seen")
        return [(e["type"], e["object"]["metadata"]["name"]) async for e in stream]

    assert asyncio.run(scenario()) == [("ADDED", "seen"), ("DELETED", "seen")]


def test_seed_is_idempotent(api: Api) -> None:
    before = api.store.revision
    seed(api)
    assert api.store.revision == before
    names = [n["metadata"]["name"] for n in api.list(by_kind("Namespace"), None)["items"]]
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]


CLAIM = {
    "metadata": {"name": "data"},
    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
}


def test_server_finalizers_are_an_option_of_one_api() -> None:
    with_finalizers = Api(Store(None), server_finalizers=True)
    bare = Api(Store(None))
    for core in (with_finalizers, bare):
        seed(core)
        core.create(by_kind("Namespace"), "", {"metadata": {"name": "team"}})
        core.create(by_kind("PersistentVolumeClaim"), "team", CLAIM)

    def finalizers(core: Api) -> tuple[list[str], list[str]]:
        namespace = core.get(by_kind("Namespace"), "", "team")
        claim = core.get(by_kind("PersistentVolumeClaim"), "team", "data")
        return namespace["spec"].get("finalizers", []), claim["metadata"].get("finalizers", [])

    assert finalizers(with_finalizers) == (["kubernetes"], ["kubernetes.io/pvc-protection"])
    assert finalizers(bare) == ([], [])


def test_a_namespace_with_server_finalizers_waits_for_finalize() -> None:
    core = Api(Store(None), server_finalizers=True)
    seed(core)
    core.create(by_kind("Namespace"), "", {"metadata": {"name": "team"}})
    core.delete(by_kind("Namespace"), "", "team")
    terminating = core.get(by_kind("Namespace"), "", "team")
    assert terminating["status"]["phase"] == "Terminating"
    assert [c["metadata"]["name"] for c in core.list(by_kind("ConfigMap"), "team")["items"]] == [
        "kube-root-ca.crt"
    ]
    core.finalize_namespace("team", WriteOptions())
    with pytest.raises(StatusError) as gone:
        core.get(by_kind("Namespace"), "", "team")
    assert gone.value.code == 404
    assert core.list(by_kind("ConfigMap"), "team")["items"] == []


PATCHES = [
    ("json", "application/json-patch+json", b'[{"op": "add", "path": "/metadata/labels/b", "value": "2"}]'),
    ("merge", "application/merge-patch+json", b'{"metadata": {"labels": {"b": "2"}}, "data": {"k": null}}'),
    ("strategic", "application/strategic-merge-patch+json", b'{"metadata": {"labels": {"b": "2"}}}'),
    (
        "apply",
        "application/apply-patch+yaml",
        b'{"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "w"}}',
    ),
]


@pytest.mark.parametrize(("label", "content_type", "body"), PATCHES, ids=[p[0] for p in PATCHES])
def test_a_patch_leaves_the_stored_object_it_read_as_it_was(
    api: Api, label: str, content_type: str, body: bytes
) -> None:
    configmaps = by_kind("ConfigMap")
    api.create(configmaps, "default", {"metadata": {"name": "c", "labels": {"a": "1"}}, "data": {"k": "v"}})
    stored = api.stored(configmaps, "default", "c")
    before = copy.deepcopy(stored)
    options = WriteOptions(field_manager="m", force=True, field_validation="Strict", warnings=[])
    patched, _ = api.patch_or_create(configmaps, "default", "c", body, content_type, options)
    assert patched["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"]
    assert stored == before  # the write stored a new object; the one it read is unchanged


def test_a_json_patch_shifting_a_list_leaves_the_stored_items_as_they_were(api: Api) -> None:
    deployments = by_kind("Deployment")
    api.create(deployments, "default", copy.deepcopy(DEPLOYMENT))
    stored = api.stored(deployments, "default", "web")
    before = copy.deepcopy(stored)
    containers = "/spec/template/spec/containers"
    operations = [
        {"op": "add", "path": f"{containers}/0", "value": {"name": "first", "image": "busybox"}},
        {"op": "replace", "path": f"{containers}/1/image", "value": "nginx:2"},
        {"op": "move", "from": "/metadata/labels/app", "path": "/metadata/labels/tier"},
    ]
    body = json.dumps(operations).encode()
    patched, _ = api.patch_or_create(deployments, "default", "web", body, "application/json-patch+json")
    assert [c["image"] for c in patched["spec"]["template"]["spec"]["containers"]] == ["busybox", "nginx:2"]
    assert stored == before


def test_a_json_patch_that_fails_midway_changes_nothing(api: Api) -> None:
    configmaps = by_kind("ConfigMap")
    api.create(configmaps, "default", {"metadata": {"name": "c"}, "data": {"k": "v"}})
    before = copy.deepcopy(api.stored(configmaps, "default", "c"))
    operations = b'[{"op": "replace", "path": "/data/k", "value": "w"}, {"op": "test", "path": "/data/k", "value": "v"}]'
    with pytest.raises(StatusError) as failed:
        api.patch_or_create(configmaps, "default", "c", operations, "application/json-patch+json")
    assert failed.value.code == 422
    assert api.stored(configmaps, "default", "c") == before


@pytest.mark.parametrize(
    ("path", "value", "passes"),
    [
        ("/spec/replicas", 1, True),
        ("/spec/replicas", 1.0, True),  # numbers compare by value
        ("/spec/replicas", True, False),  # true is only true, though Python finds True == 1
        ("/spec/replicas", 2, False),
        ("/spec/selector", {"matchLabels": {"app": "web"}}, True),
        ("/metadata/labels", {"tier": "db", "app": "web"}, True),  # members in another order
        ("/metadata/labels", {"app": "web", "tier": True}, False),
        ("/metadata/labels", {"app": "web"}, False),
        ("/metadata/labels/nothing", "x", False),
    ],
)
def test_a_json_patch_test_compares_json_values(api: Api, path: str, value: Any, passes: bool) -> None:
    deployments = by_kind("Deployment")
    body = copy.deepcopy(DEPLOYMENT)
    body["metadata"]["labels"] = {"app": "web", "tier": "db"}
    api.create(deployments, "default", body)
    operations = [
        {"op": "test", "path": path, "value": value},
        {"op": "add", "path": "/metadata/annotations", "value": {"tested": "yes"}},
    ]
    patch = json.dumps(operations).encode()
    if passes:
        patched, _ = api.patch_or_create(deployments, "default", "web", patch, "application/json-patch+json")
        assert patched["metadata"]["annotations"] == {"tested": "yes"}
        return
    with pytest.raises(StatusError) as failed:
        api.patch_or_create(deployments, "default", "web", patch, "application/json-patch+json")
    assert failed.value.code == 422
    assert "annotations" not in api.stored(deployments, "default", "web")["metadata"]


def test_a_json_patch_test_failure_is_worded_by_jsonpatch(api: Api) -> None:
    configmaps = by_kind("ConfigMap")
    api.create(configmaps, "default", {"metadata": {"name": "c"}, "data": {"k": "v"}})
    operations = b'[{"op": "test", "path": "/data", "value": {"k": "w"}}]'
    with pytest.raises(StatusError) as failed:
        api.patch_or_create(configmaps, "default", "c", operations, "application/json-patch+json")
    assert failed.value.body["message"] == (
        "the server rejected our request due to an error in our request: "
        "{'k': 'v'} (<class 'dict'>) is not equal to tested value {'k': 'w'} (<class 'dict'>)"
    )


DEPLOYMENT = {
    "metadata": {"name": "web", "labels": {"app": "web"}},
    "spec": {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx"}]},
        },
    },
}
JSON_PATCHES = [
    (
        "a field of a list item",
        [{"op": "add", "path": "/spec/template/spec/containers/0/bogus", "value": 1}],
        'unknown field "spec.template.spec.containers[0].bogus"',
    ),
    (
        "an item inserted before the others",
        [
            {
                "op": "add",
                "path": "/spec/template/spec/containers/0",
                "value": {"name": "a", "image": "i", "x": 1},
            }
        ],
        'unknown field "spec.template.spec.containers[0].x"',
    ),
    (
        "a member moved under another name",
        [{"op": "move", "from": "/metadata/labels", "path": "/spec/chooser"}],
        'unknown field "spec.chooser"',
    ),
    (
        "a member copied, then its source removed",
        [
            {"op": "copy", "from": "/metadata/labels", "path": "/spec/labels"},
            {"op": "remove", "path": "/metadata/labels"},
        ],
        'unknown field "spec.labels"',
    ),
    ("an escaped name", [{"op": "add", "path": "/spec/a~1b", "value": 1}], 'unknown field "spec.a/b"'),
]


@pytest.mark.parametrize(("why", "operations", "warning"), JSON_PATCHES, ids=[p[0] for p in JSON_PATCHES])
def test_a_json_patch_warns_about_what_it_wrote_wherever_it_wrote_it(
    api: Api, why: str, operations: list[dict[str, Any]], warning: str
) -> None:
    deployments = by_kind("Deployment")
    api.create(deployments, "default", copy.deepcopy(DEPLOYMENT))
    options = WriteOptions(field_manager="m", field_validation="Warn", warnings=[])
    body = json.dumps(operations).encode()
    api.patch_or_create(deployments, "default", "web", body, "application/json-patch+json", options)
    assert options.warnings == [warning]


def test_a_json_patch_writing_a_wrong_type_is_refused_with_go_s_message(api: Api) -> None:
    deployments = by_kind("Deployment")
    api.create(deployments, "default", copy.deepcopy(DEPLOYMENT))
    body = b'[{"op": "add", "path": "/metadata/labels/a~1b", "value": 3}]'
    options = WriteOptions(field_validation="Ignore", warnings=[])
    with pytest.raises(StatusError) as refused:
        api.patch_or_create(deployments, "default", "web", body, "application/json-patch+json", options)
    assert refused.value.body["message"].endswith(
        "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"
    )


def test_an_apply_that_drops_fields_leaves_the_stored_object_it_merged_into_as_it_was(api: Api) -> None:
    """The merge shares what the configuration leaves alone with the stored object, and the fields
    the manager stopped applying are removed below such shared maps: from copies."""
    deployments = by_kind("Deployment")
    first = copy.deepcopy(DEPLOYMENT)
    first["spec"]["template"]["metadata"]["annotations"] = {"x": "1"}
    options = WriteOptions(field_manager="m", field_validation="Strict", warnings=[])
    apply = "application/apply-patch+yaml"
    body = {"apiVersion": "apps/v1", "kind": "Deployment", **first}
    api.patch_or_create(deployments, "default", "web", json.dumps(body).encode(), apply, options)
    stored = api.stored(deployments, "default", "web")
    before = copy.deepcopy(stored)
    del body["spec"]["template"]["metadata"]["annotations"]
    api.patch_or_create(deployments, "default", "web", json.dumps(body).encode(), apply, options)
    assert "annotations" not in api.get(deployments, "default", "web")["spec"]["template"]["metadata"]
    assert stored == before
