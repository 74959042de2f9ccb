"""The `Plan` CustomResourceDefinition, generated from the plan format's JSON Schema.

A plan file is the custom resource as it is: the CRD declares the plan's top-level fields (`workloads`,
`sandboxes`, ...) beside `metadata` and `status`, as ConfigMap declares `data`, so `kubectl apply -f
plan.yaml` stores it unchanged and `metadata.generation` counts changes to them. One schema serves the
loader, the docs and the API server.

The API server accepts only a *structural* OpenAPI v3 schema, so the conversion inlines `$ref`s and
drops what it forbids: `examples`, `propertyNames`, `additionalProperties: false` (the server prunes and,
with kubectl's strict field validation, rejects unknown fields anyway), `uniqueItems` (a scalar list
becomes `x-kubernetes-list-type: set`) and types inside `oneOf`. A value of several types becomes
`x-kubernetes-int-or-string` (string or integer) or keeps whatever it is given; the loader's own checks
still judge it when the controller reconciles the Plan. `metadata` keeps only `type: object`, as the
API server requires at the root.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from planner.plan.schema import plan_schema

GROUP = "planner.dev"
VERSION = "v1"
KIND = "Plan"
PLURAL = "plans"
CRD_NAME = f"{PLURAL}.{GROUP}"
DEFINITIONS = "#/definitions/"
DROPPED = frozenset({"$schema", "$id", "title", "examples", "propertyNames", "default", "uniqueItems"})
ROOT_FIELDS = ("apiVersion", "kind", "metadata")

Schema = dict[str, Any]


def _definition(reference: str) -> Mapping[str, Any]:
    if not reference.startswith(DEFINITIONS):
        raise ValueError(f"unsupported $ref {reference!r}: only {DEFINITIONS}<name> is inlined")
    definition: Mapping[str, Any] = plan_schema()["definitions"][reference.removeprefix(DEFINITIONS)]
    return definition


def _types(node: Mapping[str, Any]) -> list[str]:
    found = node.get("type")
    if found is None:
        return []
    return [found] if isinstance(found, str) else list(found)


def _one_of(branches: list[Mapping[str, Any]]) -> Schema | None:
    """`oneOf` survives only when its branches are value rules (`required` lists), not types."""
    if any("type" in branch or "properties" in branch for branch in branches):
        return None
    return {"oneOf": [structural(branch) for branch in branches]}


def structural(node: Mapping[str, Any]) -> Schema:
    """One JSON Schema node as a structural OpenAPI v3 node."""
    if "$ref" in node:
        return structural({**_definition(node["$ref"]), **{k: v for k, v in node.items() if k != "$ref"}})
    types = _types(node)
    if len(types) > 1 or ("oneOf" in node and _one_of(node["oneOf"]) is None):
        return _any_value(node, types)
    converted: Schema = {}
    for key, value in node.items():
        if key in DROPPED or key == "oneOf":
            continue
        if key == "properties":
            converted[key] = {name: structural(child) for name, child in value.items()}
        elif key == "items":
            converted[key] = structural(value)
        elif key == "additionalProperties":
            if isinstance(value, Mapping):
                converted[key] = structural(value)
        else:
            converted[key] = value
    if "oneOf" in node:
        converted.update(_one_of(node["oneOf"]) or {})
    if node.get("uniqueItems") and _types(node.get("items") or {}) in (["string"], ["integer"]):
        converted["x-kubernetes-list-type"] = "set"
    return converted


def _any_value(node: Mapping[str, Any], types: list[str]) -> Schema:
    described = {"description": node["description"]} if "description" in node else {}
    if sorted(types) == ["integer", "string"]:
        return {**described, "x-kubernetes-int-or-string": True}
    return {**described, "x-kubernetes-preserve-unknown-fields": True}


def _condition() -> Schema:
    text = {"type": "string"}
    return {
        "type": "object",
        "required": ["type", "status"],
        "properties": {
            "type": text,
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "reason": text,
            "message": text,
            "observedGeneration": {"type": "integer", "format": "int64"},
            "lastTransitionTime": {"type": "string", "format": "date-time"},
        },
    }


def status_schema() -> Schema:
    """What the controller reports on a Plan (docs/controller.md), as kstatus and Flux define it."""
    count = {"type": "integer", "format": "int64"}
    text = {"type": "string"}
    return {
        "description": "Written by planner controller: never part of a plan file.",
        "type": "object",
        "properties": {
            "observedGeneration": count,
            "conditions": {
                "type": "array",
                "items": _condition(),
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["type"],
            },
            "lastAppliedGeneration": count,
            "lastAppliedRevision": {"type": "string"},
            "lastAttemptedRevision": {"type": "string"},
            "lastHandledReconcileAt": {"type": "string"},
            "lastError": {"type": "string"},
            "lastDrift": {
                "description": "The drift the last reconcile that found some corrected (or left).",
                "type": "object",
                "properties": {
                    "time": {"type": "string", "format": "date-time"},
                    "fields": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"object": text, "path": text, "writer": text},
                        },
                    },
                },
            },
            "inventory": {
                "type": "object",
                "properties": {
                    "objects": {"type": "object", "additionalProperties": count},
                    "driftFound": count,
                    "driftCorrected": count,
                },
            },
        },
    }


def plan_openapi_schema() -> Schema:
    """The Plan's structural schema: the plan format, `metadata` left to the API server, and `status`."""
    root = plan_schema()
    properties = {name: structural(child) for name, child in root["properties"].items()}
    properties["apiVersion"] = {"type": "string"}
    properties["kind"] = {"type": "string"}
    properties["metadata"] = {"type": "object"}
    properties["status"] = status_schema()
    schema: Schema = {"type": "object", "description": root.get("description", ""), "properties": properties}
    required = [name for name in root.get("required", []) if name not in ROOT_FIELDS]
    if required:
        schema["required"] = required
    return schema


READY = '.status.conditions[?(@.type=="Ready")]'
PRINTER_COLUMNS = (
    {"name": "Ready", "type": "string", "jsonPath": f"{READY}.status"},
    {"name": "Status", "type": "string", "jsonPath": f"{READY}.message"},
    # planner's generation (`planner history`), not metadata.generation: so named.
    {
        "name": "Applied-Gen",
        "type": "integer",
        "jsonPath": ".status.lastAppliedGeneration",
        "description": "The planner generation last applied (planner history), not metadata.generation.",
    },
    {"name": "Revision", "type": "string", "jsonPath": ".status.lastAppliedRevision"},
    {"name": "Suspended", "type": "boolean", "jsonPath": ".reconcile.suspend"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
)


def plan_crd() -> Schema:
    """The CustomResourceDefinition `plans.planner.dev` (`planner crd | kubectl apply -f -`)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME, "labels": {"app.kubernetes.io/name": "planner"}},
        "spec": {
            "group": GROUP,
            "names": {"kind": KIND, "listKind": f"{KIND}List", "plural": PLURAL, "singular": "plan"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": plan_openapi_schema()},
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [dict(column) for column in PRINTER_COLUMNS],
                }
            ],
        },
    }
