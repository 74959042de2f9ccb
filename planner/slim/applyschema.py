"""An applied configuration checked against the apply schema, as structured-merge-diff checks it.

Server-side apply converts the configuration to a typed value before merging: every field an object
does not declare (the first of each object: the walk stops there) and every scalar of the wrong type is
an error, with its apply path — list items by their keys (`containers[name="web"]`), set items by value,
atomic items by index. Quantities, IntOrStrings and timestamps take any scalar (their apply schema is
untyped).
"""

from __future__ import annotations

import json
from typing import Any

from planner.slim.decoding import go_value
from planner.slim.openapi.schemas import GoType, Kind, Schemas
from planner.slim.unstructured import go_kind


def apply_errors(schemas: Schemas, document: Any, into: GoType) -> list[str]:
    """What structured-merge-diff finds wrong with an applied configuration: undeclared fields (the
    first of each object) and values of the wrong type, each with its apply path."""
    errors: list[str] = []
    _typed(schemas, document, into, (), errors)
    return errors


# Where the walk is: a field's name, or a list item as (list type, index, item); spelled out as an
# apply path (`_spelled`) only when an error names it.
At = tuple[Any, ...]


def _typed(schemas: Schemas, value: Any, into: GoType, at: At, errors: list[str]) -> None:
    if value is None:
        return
    kind = into.kind
    if kind is Kind.STRUCT or kind is Kind.MAP:
        if not isinstance(value, dict):
            errors.append(f"{_spelled(at)}: expected map, got {_smd_value(value)}")
            return
        fields = schemas.fields(into) if kind is Kind.STRUCT else {}
        for key, item in value.items():
            field_type = fields.get(key) if kind is Kind.STRUCT else into.elem
            if field_type is None:
                errors.append(f"{_spelled((*at, key))}: field not declared in schema")
                return
            _typed(schemas, item, field_type, (*at, key), errors)
    elif kind is Kind.SLICE:
        if not isinstance(value, list):
            errors.append(f"{_spelled(at)}: expected list, got {_smd_value(value)}")
            return
        assert into.elem is not None
        for i, item in enumerate(value):
            _typed(schemas, item, into.elem, (*at, (into, i, item)), errors)
    elif (problem := _smd_scalar_problem(value, kind)) is not None:
        errors.append(f"{_spelled(at)}: {problem}")


def _spelled(at: At) -> str:
    return "".join(f".{step}" if isinstance(step, str) else _item_path(*step) for step in at)


def _item_path(into: GoType, index: int, item: Any) -> str:
    """A list item's apply path element: `[name="web"]` in a map list (keys sorted), `[="x"]` in a set,
    `[0]` otherwise (or when an item lacks a key, which the apiserver would default)."""
    semantics = into.list
    if semantics.type == "map" and isinstance(item, dict) and all(k in item for k in semantics.keys):
        keys = sorted(semantics.keys)
        return "[" + ",".join(f"{k}={_smd_json(item[k])}" for k in keys) + "]"
    if semantics.type == "set" and not isinstance(item, dict | list):
        return f"[={_smd_json(item)}]"
    return f"[{index}]"


def _smd_scalar_problem(value: Any, kind: Kind) -> str | None:
    if kind in (Kind.INT32, Kind.INT64, Kind.FLOAT64):
        if isinstance(value, int | float) and not isinstance(value, bool):
            return None
        return f"expected numeric (int or float), got {_go_type_name(value)}"
    if kind in (Kind.STRING, Kind.BYTES):
        return (
            None
            if isinstance(value, str)
            else f"expected string, got &value.valueUnstructured{{Value:{go_value(value)}}}"
        )
    if kind is Kind.BOOL:
        return None if isinstance(value, bool) else f"expected boolean, got &{{{go_value(value)}}}"
    return None  # Quantity, IntOrString, times and untyped values: any scalar


def _smd_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _smd_value(value: Any) -> str:
    return f"&{{{go_value(value)}}}"


_COMPOSITE_TYPE_NAMES = {"slice": "[]interface {}", "map": "map[string]interface {}"}


def _go_type_name(value: Any) -> str:
    """Go's %T of an unstructured value: its reflect.Kind, spelled out for slices and maps."""
    kind = go_kind(value)
    return _COMPOSITE_TYPE_NAMES.get(kind, kind)
