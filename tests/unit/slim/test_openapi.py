"""The OpenAPI v3 documents: what kubectl reads from them is there (a kind's operations with their
group-version-kind and `fieldValidation`, the schemas with descriptions and patch strategies), every
reference resolves, and the committed schema table agrees with the protobuf schema about every field of
every served kind."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from planner.slim.customresources import Kinds
from planner.slim.openapi import documents
from planner.slim.openapi.schemas import COMPONENTS, GoType, Kind, schemas
from planner.slim.protobuf.messages import schema as protobuf_schema
from planner.slim.resources import RESOURCES
from planner.slim.store import Store
from tests.paths import REPO
from tests.unit.slim.test_protobuf import JSON_ONLY_GROUPS

# What a v1.28.7 apiserver lists at /openapi/v3 (recorded).
SERVED = sorted(
    json.loads((REPO / "tests/golden/apigroups/openapi_v3.json").read_text())["response_body"]["paths"]
)


def load(path: str) -> Any:
    raw = documents.document(path, Kinds(Store(None)))
    assert raw is not None
    return json.loads(raw)


def test_every_served_kind_has_a_schema() -> None:
    assert [rt.kind for rt in RESOURCES if schemas().definition(rt.group_version, rt.kind) is None] == []


def test_the_discovery_document_points_at_each_group_version_by_its_hash() -> None:
    paths = documents.discovery(Kinds(Store(None)))["paths"]
    assert sorted(paths) == SERVED
    for path, entry in paths.items():
        raw = documents.document(path, Kinds(Store(None)))
        assert raw is not None
        assert (
            entry["serverRelativeURL"] == f"/openapi/v3/{path}?hash={hashlib.sha512(raw).hexdigest().upper()}"
        )


def test_a_deployment_patch_takes_field_validation_and_every_patch_type() -> None:
    operation = load("apis/apps/v1")["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"][
        "patch"
    ]
    assert operation["x-kubernetes-group-version-kind"] == {
        "group": "apps",
        "version": "v1",
        "kind": "Deployment",
    }
    assert {"in": "query", "name": "fieldValidation", "schema": {"type": "string"}} in operation["parameters"]
    assert sorted(operation["requestBody"]["content"]) == [
        "application/apply-patch+yaml",
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
    ]
    assert operation["operationId"] == "patchAppsV1NamespacedDeployment"


def test_the_scale_subresource_serves_autoscaling_v1_scale() -> None:
    scale = load("apis/apps/v1")["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]
    assert scale["get"]["x-kubernetes-group-version-kind"] == {
        "group": "autoscaling",
        "version": "v1",
        "kind": "Scale",
    }
    assert scale["put"]["operationId"] == "replaceAppsV1NamespacedDeploymentScale"


def test_schemas_keep_descriptions_patch_strategies_and_the_kind() -> None:
    components = load("api/v1")["components"]["schemas"]
    pod = components["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    containers = components["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["items"] == {"$ref": COMPONENTS + "io.k8s.api.core.v1.Container"}
    assert containers["description"].startswith("List of containers belonging to the pod.")
    spec = components["io.k8s.api.core.v1.Pod"]["properties"]["spec"]
    assert spec["allOf"] == [{"$ref": COMPONENTS + "io.k8s.api.core.v1.PodSpec"}]


def test_enum_fields_carry_their_values_as_the_apiserver_documents_them() -> None:
    strategy = load("apis/apps/v1")["components"]["schemas"]["io.k8s.api.apps.v1.DeploymentStrategy"]
    assert strategy["properties"]["type"]["enum"] == ["Recreate", "RollingUpdate"]
    assert strategy["properties"]["type"]["description"] == (
        'Type of deployment. Can be "Recreate" or "RollingUpdate". Default is RollingUpdate.\n\n'
        "Possible enum values:\n"
        ' - `"Recreate"` Kill all existing pods before creating new ones.\n'
        ' - `"RollingUpdate"` Replace the old ReplicaSets by new one using rolling update i.e gradually scale '
        "down the old ReplicaSets and scale up the new one."
    )


@pytest.mark.parametrize("path", SERVED)
def test_every_reference_resolves_within_its_document(path: str) -> None:
    document = load(path)
    defined = set(document.get("components", {}).get("schemas", {}))
    text = json.dumps(document)
    referenced = {part.split('"')[0] for part in text.split(f'"$ref": "{COMPONENTS}')[1:]}
    assert referenced - defined == set()


def _structs(go_type: GoType, seen: dict[str, GoType]) -> None:
    if go_type.kind is Kind.STRUCT and go_type.definition not in seen:
        seen[go_type.definition] = go_type
        for field in schemas().fields(go_type).values():
            _structs(field, seen)
    elif go_type.elem is not None:
        _structs(go_type.elem, seen)


def test_the_openapi_table_and_the_protobuf_schema_agree_on_every_field_of_every_served_kind() -> None:
    structs: dict[str, GoType] = {}
    for rt in RESOURCES:
        if rt.group in JSON_ONLY_GROUPS:
            continue  # served as JSON only: the committed descriptor set has no messages for them
        found = schemas().type_of(rt.group_version, rt.kind)
        assert found is not None
        _structs(found, structs)
    disagreements = {}
    for definition, struct in structs.items():
        message = definition.replace("io.k8s.api.", "k8s.io.api.").replace(
            "io.k8s.apimachinery.", "k8s.io.apimachinery."
        )
        type_meta = {"kind", "apiVersion"}  # a top-level kind's are in the protobuf envelope instead
        openapi_fields = set(schemas().fields(struct)) - type_meta
        protobuf_fields = set(protobuf_schema().spec(message).by_json) - type_meta
        if openapi_fields != protobuf_fields:
            disagreements[definition] = openapi_fields ^ protobuf_fields
    assert len(structs) > 150 and disagreements == {}
