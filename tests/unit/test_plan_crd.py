"""plan.crd: the Plan CRD's structural schema, generated from the plan format's JSON Schema."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from ruamel.yaml import YAML

from planner.plan.crd import plan_crd, plan_openapi_schema, structural
from tests.paths import REPO

SCHEMA = plan_openapi_schema()
WORKLOAD = SCHEMA["properties"]["workloads"]["items"]
EXTENSIONS = ("x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields")


def nodes(node: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every schema node with its path, as the API server walks a structural schema."""
    yield path, node
    for name, child in (node.get("properties") or {}).items():
        yield from nodes(child, f"{path}.{name}")
    if isinstance(node.get("items"), Mapping):
        yield from nodes(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), Mapping):
        yield from nodes(node["additionalProperties"], f"{path}{{}}")


def test_every_node_has_a_type_or_an_extension_that_stands_for_one() -> None:
    untyped = [
        path for path, node in nodes(SCHEMA) if "type" not in node and not any(e in node for e in EXTENSIONS)
    ]
    assert untyped == []


def test_nothing_the_api_server_forbids_is_left() -> None:
    forbidden = ("$ref", "examples", "propertyNames", "uniqueItems", "default", "definitions")
    found = [(path, key) for path, node in nodes(SCHEMA) for key in forbidden if key in node]
    closed = [path for path, node in nodes(SCHEMA) if node.get("additionalProperties") is False]
    assert (found, closed) == ([], [])


def test_the_root_leaves_metadata_to_the_api_server_and_adds_status() -> None:
    assert SCHEMA["properties"]["metadata"] == {"type": "object"}
    assert SCHEMA["properties"]["apiVersion"] == {"type": "string"}
    assert "required" not in SCHEMA  # apiVersion, kind and metadata are every object's
    assert SCHEMA["properties"]["status"]["properties"]["conditions"]["x-kubernetes-list-map-keys"] == [
        "type"
    ]
    assert sorted(SCHEMA["properties"]) == [
        "allowClusterScoped",
        "apiVersion",
        "charts",  # kept, as manifestFiles is: refused by the loader, with a message, not pruned away unseen
        "configMaps",
        "decryption",
        "imports",  # kept: a Plan object's imports is refused in its status, not pruned away unseen
        "kind",
        "kustomize",
        "manifestFiles",
        "manifests",
        "metadata",
        "reconcile",
        "runtime",
        "sandboxes",
        "secrets",
        "serviceAccountName",
        "sops",  # a Plan object's own SOPS metadata: kept whole for the controller to decrypt with
        "source",
        "status",
        "volumeClaims",
        "warmPools",
        "workloads",
    ]


def test_a_reference_is_inlined_with_its_rules() -> None:
    name = WORKLOAD["properties"]["name"]
    assert name == {
        "description": name["description"],
        "type": "string",
        "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        "minLength": 1,
        "maxLength": 63,
    }
    assert WORKLOAD["required"] == ["name", "image"]


def test_values_of_several_types() -> None:
    user = WORKLOAD["properties"]["user"]
    assert user == {"description": user["description"], "x-kubernetes-int-or-string": True}
    cpu = WORKLOAD["properties"]["cpu"]  # "500m", 0.5 or 2: a number is neither int nor string
    assert cpu == {"description": cpu["description"], "x-kubernetes-preserve-unknown-fields": True}


def test_a_one_of_over_types_keeps_any_value_and_one_over_required_fields_stays() -> None:
    secret_value = SCHEMA["properties"]["secrets"]["items"]["properties"]["data"]["additionalProperties"]
    assert secret_value["x-kubernetes-preserve-unknown-fields"] is True
    assert "oneOf" not in secret_value
    volume = WORKLOAD["properties"]["volumes"]["items"]
    assert volume["oneOf"] == [
        {"required": ["hostPath"]},
        {"required": ["emptyDir"]},
        {"required": ["configMap"]},
        {"required": ["secret"]},
        {"required": ["persistentVolumeClaim"]},
        {"required": ["claim"]},
    ]


def test_a_unique_list_of_names_is_a_set() -> None:
    assert WORKLOAD["properties"]["dependsOn"] == {
        "description": WORKLOAD["properties"]["dependsOn"]["description"],
        "type": "array",
        "items": {
            "type": "string",
            "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?|[A-Z][A-Za-z0-9]*/[a-z0-9]([-.a-z0-9]*[a-z0-9])?"
            "|chart/[a-z0-9]([-a-z0-9]*[a-z0-9])?)$",
        },
        "x-kubernetes-list-type": "set",
    }


def test_structural_of_a_small_schema() -> None:
    assert structural(
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {"env": {"type": "object", "additionalProperties": {"type": "string"}}},
            "examples": [{}],
        }
    ) == {
        "type": "object",
        "properties": {"env": {"type": "object", "additionalProperties": {"type": "string"}}},
    }


def test_the_crd_names_printer_columns_and_status_subresource() -> None:
    crd = plan_crd()
    assert crd["metadata"]["name"] == "plans.planner.dev"
    spec = crd["spec"]
    assert spec["names"] == {"kind": "Plan", "listKind": "PlanList", "plural": "plans", "singular": "plan"}
    assert spec["scope"] == "Namespaced"
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1", True, True)
    assert version["subresources"] == {"status": {}}
    assert [(c["name"], c["jsonPath"]) for c in version["additionalPrinterColumns"]] == [
        ("Ready", '.status.conditions[?(@.type=="Ready")].status'),
        ("Status", '.status.conditions[?(@.type=="Ready")].message'),
        ("Applied-Gen", ".status.lastAppliedGeneration"),
        ("Revision", ".status.lastAppliedRevision"),
        ("Suspended", ".reconcile.suspend"),
        ("Age", ".metadata.creationTimestamp"),
    ]


def test_the_docs_show_the_crds_printer_columns() -> None:
    """Every `kubectl get plans` table in the docs has the CRD's columns, and cli.md names them all."""
    columns = [str(c["name"]).upper() for c in plan_crd()["spec"]["versions"][0]["additionalPrinterColumns"]]
    headers = [
        lines[index + 1].split()
        for doc in sorted((REPO / "docs").glob("*.md"))
        for lines in [doc.read_text().splitlines()]
        for index, line in enumerate(lines)
        if line.startswith("$ kubectl get plans") and " -o " not in line
    ]
    assert headers and all(header == ["NAME", *columns] for header in headers), headers
    cli = " ".join((REPO / "docs" / "cli.md").read_text().split())
    [named] = re.findall(r"`kubectl get plans` shows the (.*?) columns", cli)
    assert re.findall(r"[A-Z][A-Z-]+", named) == columns


def test_deploy_installs_the_generated_crd() -> None:
    committed = YAML(typ="safe").load((REPO / "deploy" / "crd.yaml").read_text())
    assert committed == plan_crd(), "deploy/crd.yaml is stale: run `make docs`"
