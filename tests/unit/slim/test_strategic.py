"""Strategic merge patch: every directive kubectl sends, list merging by key, and the errors."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from planner.slim.strategic import PatchError, strategic_merge_patch
from tests.paths import GOLDEN


def deployment(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web", "tier": "front"}, "resourceVersion": "7"},
        "spec": {"replicas": 1, "template": {"spec": {"containers": list(containers)}}, **spec},
    }


def pod_spec(patched: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = patched["spec"]["template"]["spec"]
    return spec


def containers_patch(*containers: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"spec": {"template": {"spec": {"containers": list(containers), **extra}}}}


WEB = {"name": "web", "image": "nginx:1.25", "command": ["nginx", "-g", "daemon off;"]}
SIDECAR = {"name": "sidecar", "image": "busybox:1.36"}

CONTAINER_CASES = [
    (
        "a container patched by name keeps the fields the patch does not name",
        deployment(WEB, SIDECAR),
        containers_patch({"name": "web", "image": "nginx:1.26"}),
        [{"name": "web", "image": "nginx:1.26", "command": ["nginx", "-g", "daemon off;"]}, SIDECAR],
    ),
    (
        "a container with a new name goes before the live ones, which the live order cannot place it among",
        deployment(WEB),
        containers_patch({"name": "sidecar", "image": "busybox:1.36"}),
        [SIDECAR, WEB],
    ),
    (
        "$patch delete on a list item removes the container with that name",
        deployment(WEB, SIDECAR),
        containers_patch({"name": "sidecar", "$patch": "delete"}),
        [WEB],
    ),
    (
        "$patch replace on a list item makes the patch list the whole list",
        deployment(WEB, SIDECAR),
        containers_patch({"name": "only", "image": "alpine"}, {"$patch": "replace"}),
        [{"name": "only", "image": "alpine"}],
    ),
    (
        "a list without a merge key (command) is replaced, not merged",
        deployment(WEB),
        containers_patch({"name": "web", "command": ["sleep"]}),
        [{"name": "web", "image": "nginx:1.25", "command": ["sleep"]}],
    ),
    (
        "an empty patch list on a merging list changes nothing",
        deployment(WEB, SIDECAR),
        containers_patch(),
        [WEB, SIDECAR],
    ),
    (
        "$setElementOrder puts patch items in its order and keeps server-only items in place",
        deployment(WEB, SIDECAR),
        containers_patch(
            {"name": "web", "image": "nginx:1.26"},
            **{"$setElementOrder/containers": [{"name": "sidecar"}, {"name": "web"}]},
        ),
        [SIDECAR, {"name": "web", "image": "nginx:1.26", "command": ["nginx", "-g", "daemon off;"]}],
    ),
    (
        "null inside a list item deletes that field of the item",
        deployment(WEB),
        containers_patch({"name": "web", "command": None}),
        [{"name": "web", "image": "nginx:1.25"}],
    ),
]


@pytest.mark.parametrize(
    ("original", "patch", "expected"),
    [case[1:] for case in CONTAINER_CASES],
    ids=[case[0] for case in CONTAINER_CASES],
)
def test_containers_merge_by_name(
    original: dict[str, Any], patch: dict[str, Any], expected: list[Any]
) -> None:
    assert pod_spec(strategic_merge_patch(original, patch, kind="Deployment"))["containers"] == expected


NESTED_CASES = [
    (
        "env entries merge by name",
        {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
        {"env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}]},
        {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}, {"name": "C", "value": "4"}]},
    ),
    (
        "volume mounts merge by mountPath",
        {"volumeMounts": [{"name": "a", "mountPath": "/a"}]},
        {"volumeMounts": [{"name": "b", "mountPath": "/a", "readOnly": True}]},
        {"volumeMounts": [{"name": "b", "mountPath": "/a", "readOnly": True}]},
    ),
    (
        "container ports merge by containerPort",
        {"ports": [{"containerPort": 80, "name": "http"}]},
        {"ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443}]},
        {"ports": [{"containerPort": 80, "name": "http", "protocol": "TCP"}, {"containerPort": 443}]},
    ),
]


@pytest.mark.parametrize(
    ("container", "patch", "expected"),
    [case[1:] for case in NESTED_CASES],
    ids=[case[0] for case in NESTED_CASES],
)
def test_container_lists_merge_by_their_keys(
    container: dict[str, Any], patch: dict[str, Any], expected: dict[str, Any]
) -> None:
    patched = strategic_merge_patch(
        deployment({"name": "web", **container}),
        containers_patch({"name": "web", **patch}),
        kind="Deployment",
    )
    assert pod_spec(patched)["containers"] == [{"name": "web", **expected}]


def test_null_deletes_a_key_and_maps_merge_key_by_key() -> None:
    patched = strategic_merge_patch(
        deployment(WEB), {"metadata": {"labels": {"tier": None, "team": "a"}}}, kind="Deployment"
    )
    assert patched["metadata"]["labels"] == {"app": "web", "team": "a"}


def test_patching_leaves_the_original_untouched() -> None:
    original = deployment(WEB)
    before = copy.deepcopy(original)
    strategic_merge_patch(original, containers_patch({"name": "web", "image": "x"}), kind="Deployment")
    assert original == before


MAP_DIRECTIVE_CASES = [
    (
        "$patch replace on a map replaces it wholesale",
        {"metadata": {"labels": {"$patch": "replace", "only": "this"}}},
        {"only": "this"},
    ),
    ("$patch delete on a map leaves it empty", {"metadata": {"labels": {"$patch": "delete"}}}, {}),
    (
        "$patch merge on a map merges as if it were absent",
        {"metadata": {"labels": {"$patch": "merge", "team": "a"}}},
        {"app": "web", "tier": "front", "team": "a"},
    ),
]


@pytest.mark.parametrize(
    ("patch", "labels"), [c[1:] for c in MAP_DIRECTIVE_CASES], ids=[c[0] for c in MAP_DIRECTIVE_CASES]
)
def test_patch_directive_on_maps(patch: dict[str, Any], labels: dict[str, str]) -> None:
    assert strategic_merge_patch(deployment(WEB), patch, kind="Deployment")["metadata"]["labels"] == labels


def test_retain_keys_clears_the_keys_it_does_not_list() -> None:
    original = deployment(WEB, strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}})
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    assert strategic_merge_patch(original, patch, kind="Deployment")["spec"]["strategy"] == {
        "type": "Recreate"
    }


def test_retain_keys_on_a_volume_switches_its_source() -> None:
    original = {"kind": "Pod", "spec": {"volumes": [{"name": "data", "emptyDir": {}}]}}
    patch = {
        "spec": {
            "$setElementOrder/volumes": [{"name": "data"}],
            "volumes": [{"$retainKeys": ["configMap", "name"], "configMap": {"name": "cfg"}, "name": "data"}],
        }
    }
    patched = strategic_merge_patch(original, patch, kind="Pod")
    assert patched["spec"]["volumes"] == [{"name": "data", "configMap": {"name": "cfg"}}]


FINALIZER_CASES = [
    ("finalizers merge as a set", ["a", "b"], {"finalizers": ["b", "c"]}, ["a", "b", "c"]),
    (
        "$deleteFromPrimitiveList removes values from a primitive merge list",
        ["a", "b", "c"],
        {"$deleteFromPrimitiveList/finalizers": ["b"]},
        ["a", "c"],
    ),
    (
        "$setElementOrder orders a primitive merge list",
        ["a", "b"],
        {"$setElementOrder/finalizers": ["c", "b", "a"], "finalizers": ["c"]},
        ["c", "b", "a"],
    ),
]


@pytest.mark.parametrize(
    ("finalizers", "meta_patch", "expected"),
    [c[1:] for c in FINALIZER_CASES],
    ids=[c[0] for c in FINALIZER_CASES],
)
def test_finalizers(finalizers: list[str], meta_patch: dict[str, Any], expected: list[str]) -> None:
    original = {"kind": "ConfigMap", "metadata": {"name": "c", "finalizers": finalizers}}
    patched = strategic_merge_patch(original, {"metadata": meta_patch}, kind="ConfigMap")
    assert patched["metadata"]["finalizers"] == expected


KEYED_KIND_CASES = [
    (
        "Service ports merge by port",
        "Service",
        {"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}},
        {"spec": {"ports": [{"port": 80, "targetPort": 9090}]}},
        {"spec": {"ports": [{"port": 80, "targetPort": 9090}, {"port": 443}]}},
    ),
    (
        "ownerReferences merge by uid",
        "ConfigMap",
        {"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}, {"uid": "2", "name": "b"}]}},
        {"metadata": {"ownerReferences": [{"uid": "2", "name": "c"}]}},
        {"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}, {"uid": "2", "name": "c"}]}},
    ),
    (
        "status conditions merge by type",
        "Pod",
        {
            "status": {
                "conditions": [
                    {"type": "Ready", "status": "False"},
                    {"type": "PodScheduled", "status": "True"},
                ]
            }
        },
        {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        {
            "status": {
                "conditions": [
                    {"type": "Ready", "status": "True"},
                    {"type": "PodScheduled", "status": "True"},
                ]
            }
        },
    ),
    (
        "tolerations have no merge key and are replaced",
        "Pod",
        {"spec": {"tolerations": [{"key": "a"}]}},
        {"spec": {"tolerations": [{"key": "b"}]}},
        {"spec": {"tolerations": [{"key": "b"}]}},
    ),
    (
        "lists of a kind without a schema are replaced",
        "Widget",
        {"spec": {"items": [{"name": "a"}]}},
        {"spec": {"items": [{"name": "b"}]}},
        {"spec": {"items": [{"name": "b"}]}},
    ),
]


@pytest.mark.parametrize(
    ("kind", "original", "patch", "expected"),
    [c[1:] for c in KEYED_KIND_CASES],
    ids=[c[0] for c in KEYED_KIND_CASES],
)
def test_merge_keys_per_kind(
    kind: str, original: dict[str, Any], patch: dict[str, Any], expected: Any
) -> None:
    assert strategic_merge_patch(original, patch, kind=kind) == expected


def test_kubectl_client_side_apply_patch() -> None:
    annotation = '{"apiVersion":"apps/v1","kind":"Deployment"}\n'
    patch = {
        "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": annotation}},
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "web"}, {"name": "sidecar"}],
                    "containers": [{"image": "nginx:1.26", "name": "web"}],
                }
            }
        },
    }
    patched = strategic_merge_patch(deployment(WEB, SIDECAR), patch, kind="Deployment")
    assert patched["metadata"]["annotations"] == {
        "kubectl.kubernetes.io/last-applied-configuration": annotation
    }
    assert [c["image"] for c in pod_spec(patched)["containers"]] == ["nginx:1.26", "busybox:1.36"]


ERROR_CASES = [
    (
        "an unknown $patch value on a map is an internal error",
        {"metadata": {"labels": {"$patch": "sideways"}}},
        500,
        "unknown patch type: sideways in map: map[$patch:sideways]",
    ),
    (
        "a list item without its merge key is an internal error",
        containers_patch({"image": "x"}),
        500,
        "map: map[image:x] does not contain declared merge key: name",
    ),
    (
        "$retainKeys that is not a list is a bad request",
        {"spec": {"strategy": {"$retainKeys": "type"}}},
        400,
        "invalid patch format of retainKeys",
    ),
    (
        "a patch key missing from $retainKeys is invalid",
        {"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}},
        422,
        "patch content doesn't match retainKeys list",
    ),
    (
        "$setElementOrder that leaves out a patched item is a bad request",
        containers_patch({"name": "web"}, **{"$setElementOrder/containers": [{"name": "sidecar"}]}),
        400,
        "invalid patch format of setElementOrder list",
    ),
    (
        "$deleteFromPrimitiveList that is not a list is a bad request",
        {"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}},
        400,
        "invalid patch format of primitive list",
    ),
    ("a list of lists is invalid", {"spec": {"matrix": [[1]]}}, 422, "lists of lists are not supported"),
]


@pytest.mark.parametrize(
    ("patch", "code", "message"), [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES]
)
def test_patch_errors(patch: dict[str, Any], code: int, message: str) -> None:
    with pytest.raises(PatchError) as raised:
        strategic_merge_patch(deployment(WEB, SIDECAR), patch, kind="Deployment")
    assert (raised.value.code, raised.value.message) == (code, message)


def test_bad_request_status_body() -> None:
    with pytest.raises(PatchError) as raised:
        strategic_merge_patch(deployment(WEB), {"spec": {"strategy": {"$retainKeys": 1}}}, kind="Deployment")
    assert raised.value.status_body() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "invalid patch format of retainKeys",
        "reason": "BadRequest",
        "code": 400,
    }


def test_the_golden_selector_patch_merges_into_the_selector_and_leaves_the_template() -> None:
    """`error_patch_deployment_selector.json`: the 422 quotes the patched selector `app: other` next
    to the unchanged template labels `app: web`, which is the object this patch produces."""
    recorded = json.loads((GOLDEN / "error_patch_deployment_selector.json").read_text())
    live = json.loads((GOLDEN / "deployment_get_after_controller.json").read_text())["response_body"]
    patched = strategic_merge_patch(live, recorded["request"]["body"], kind="Deployment")
    assert patched["spec"]["selector"] == {"matchLabels": {"app": "other"}}
    assert patched["spec"]["template"]["metadata"]["labels"] == {"app": "web"}
