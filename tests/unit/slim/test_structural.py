"""A custom kind's structural schema: pruning, defaulting, validation causes, apply list types and the
printer columns' JSONPath subset, each against hand-written expectations."""

from __future__ import annotations

from typing import Any

import pytest

from planner.slim import structural
from planner.slim.mergekeys import ATOMIC, OBJECT_META, SET, KeyedList, Struct

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["spec"],
    "properties": {
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string", "maxLength": 5},
                "replicas": {"type": "integer", "default": 1, "minimum": 0},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "port": {"x-kubernetes-int-or-string": True},
                "note": {"type": "string", "nullable": True},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "items": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["id"],
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string"},
                            "weight": {"type": "integer", "default": 10},
                        },
                    },
                },
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "hosts": {"type": "array", "items": {"type": "string"}},
                "selector": {
                    "type": "object",
                    "x-kubernetes-map-type": "atomic",
                    "additionalProperties": {"type": "string"},
                },
            },
        },
    },
}


def test_prune_drops_undeclared_fields_and_keeps_metadata_and_preserved_ones() -> None:
    obj = {
        "apiVersion": "x.io/v1",
        "kind": "Thing",
        "metadata": {"name": "t", "labels": {"a": "b"}},
        "spec": {
            "name": "n",
            "bogus": 1,
            "labels": {"any": "key"},
            "free": {"whatever": {"deep": [1]}},
            "items": [{"id": "a", "junk": True}],
            "replicas": None,
            "note": None,
        },
        "extra": {"top": 1},
    }
    dropped = structural.prune(obj, SCHEMA)
    assert dropped == ["spec.bogus", "spec.items[0].junk", "extra"]
    assert obj == {
        "apiVersion": "x.io/v1",
        "kind": "Thing",
        "metadata": {"name": "t", "labels": {"a": "b"}},
        "spec": {
            "name": "n",
            "labels": {"any": "key"},
            "free": {"whatever": {"deep": [1]}},
            "items": [{"id": "a"}],
            "note": None,
        },
    }


def test_default_fills_missing_properties_at_every_depth() -> None:
    obj: dict[str, Any] = {"spec": {"name": "n", "items": [{"id": "a"}, {"id": "b", "weight": 3}]}}
    structural.default(obj, SCHEMA)
    assert obj == {
        "spec": {"name": "n", "replicas": 1, "items": [{"id": "a", "weight": 10}, {"id": "b", "weight": 3}]}
    }


def _causes(obj: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c.reason, c.field, c.message) for c in structural.validator(SCHEMA)(obj)]


def test_validation_causes_are_the_apiservers() -> None:
    obj = {"metadata": {"name": "x"}, "spec": {"name": "toolong", "replicas": -1, "mode": "c", "port": True}}
    assert _causes(obj) == [
        ("FieldValueNotSupported", "spec.mode", 'Unsupported value: "c": supported values: "a", "b"'),
        (
            "FieldValueInvalid",
            "spec.name",
            'Invalid value: "toolong": spec.name in body should be at most 5 chars long',
        ),
        (
            "FieldValueTypeInvalid",
            "spec.port",
            'Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"',
        ),
        (
            "FieldValueInvalid",
            "spec.replicas",
            "Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
        ),
    ]


def test_required_fields_and_valid_objects() -> None:
    assert _causes({"metadata": {}, "spec": {}}) == [("FieldValueRequired", "spec.name", "Required value")]
    assert _causes({"metadata": {}}) == [("FieldValueRequired", "spec", "Required value")]
    assert _causes({"spec": {"name": "ok", "port": "http", "note": None}}) == []
    assert _causes({"spec": {"name": "ok", "port": 8080}}) == []
    assert _causes({"spec": {"name": 5}}) == [
        (
            "FieldValueTypeInvalid",
            "spec.name",
            'Invalid value: "integer": spec.name in body must be of type string: "integer"',
        )
    ]
    assert _causes({"spec": {"name": "ok", "note": 1}})[0][2].endswith('must be of type string: "integer"')


def test_the_apply_schema_follows_the_list_and_map_types() -> None:
    merge = structural.merge_schema(SCHEMA)
    assert merge.fields["metadata"] == OBJECT_META
    spec = merge.fields["spec"]
    assert isinstance(spec, Struct)
    assert spec.fields["items"] == KeyedList(patch_key=None, apply_keys=("id",), item=Struct())
    assert spec.fields["tags"] is SET
    assert spec.fields["hosts"] is ATOMIC
    assert spec.fields["selector"] is ATOMIC
    assert "name" not in spec.fields  # scalars merge as the apiserver merges unknown fields
    assert spec.fields["labels"] == Struct({}, None)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (".spec.replicas", [3]),
        (".metadata.labels['app.kubernetes.io/name']", ["web"]),
        ('.status.conditions[?(@.type=="Ready")].status', ["True"]),
        (".status.conditions[0].type", ["Ready"]),
        (".status.conditions[-1].type", ["Synced"]),
        (".status.conditions[*].type", ["Ready", "Synced"]),
        (".spec.missing", []),
        ("{.spec.replicas}", [3]),
    ],
)
def test_json_path_finds_what_printer_columns_ask_for(path: str, expected: list[Any]) -> None:
    obj = {
        "metadata": {"labels": {"app.kubernetes.io/name": "web"}},
        "spec": {"replicas": 3},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}, {"type": "Synced", "status": "False"}]
        },
    }
    assert structural.json_path(obj, path) == expected
