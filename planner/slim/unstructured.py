"""A strategic merge patch's result read into the kind's Go type, as `runtime.DefaultUnstructuredConverter`
does it.

The apiserver applies a strategic merge patch to the object as a map and converts the map into the Go
struct field by field, without JSON in between. Its type errors are its own (`unrecognized type:
int32` for a string replica count, `cannot convert int64 to string`, `cannot restore slice from
string`), the first one fails, and the unknown fields it meets are collected with their paths and
sorted. JSON's four scalar groups do not mix, except ints into floats and whole floats into ints.
"""

from __future__ import annotations

from typing import Any

from planner.slim.decoding import (
    INT_RANGES,
    Fatal,
    Findings,
    bad_base64_offset,
    custom_unmarshal_error,
    json_type,
)
from planner.slim.openapi.schemas import GoType, Kind, Schemas


def from_unstructured(schemas: Schemas, document: Any, into: GoType) -> Findings:
    """Convert the patched map into `into` as the unstructured converter does: the first error fails,
    else the unknown fields (sorted) and the converted value (without them)."""
    unknown: list[str] = []
    try:
        value = _convert(schemas, document, into, "", unknown)
    except Fatal as exc:
        return Findings(error=str(exc))
    return Findings(strict=sorted(set(unknown)), value=value)


def _convert(schemas: Schemas, value: Any, into: GoType, path: str, unknown: list[str]) -> Any:
    if value is None:
        return None
    kind = into.kind
    if kind is Kind.STRUCT:
        if not isinstance(value, dict):
            raise Fatal(f"cannot restore struct from: {go_kind(value)}")
        fields = schemas.fields(into)
        out: dict[str, Any] = {}
        for key, item in value.items():
            key_path = f"{path}.{key}" if path else key
            if key in fields:
                out[key] = _convert(schemas, item, fields[key], key_path, unknown)
            else:
                unknown.append(f'unknown field "{key_path}"')
        return out
    if kind in (Kind.SLICE, Kind.BYTES):
        return _convert_slice(schemas, value, into, path, unknown)
    if kind is Kind.MAP:
        if not isinstance(value, dict):
            raise Fatal(f"cannot restore map from {go_kind(value)}")
        assert into.elem is not None
        return {key: _convert(schemas, item, into.elem, path, unknown) for key, item in value.items()}
    if kind in (Kind.QUANTITY, Kind.INT_OR_STRING, Kind.TIME, Kind.MICRO_TIME):
        problem = custom_unmarshal_error(value, kind)
    elif kind is not Kind.ANY:
        problem = _conversion_problem(value, into)
    else:
        problem = None
    if problem is not None:
        raise Fatal(problem)
    return value


def _convert_slice(schemas: Schemas, value: Any, into: GoType, path: str, unknown: list[str]) -> Any:
    if into.kind is Kind.BYTES and isinstance(value, str):
        offset = bad_base64_offset(value)
        if offset is not None:
            raise Fatal(f"error decoding from json: illegal base64 data at input byte {offset}")
        return value
    if not isinstance(value, list):
        raise Fatal(f"cannot restore slice from {go_kind(value)}")
    if into.elem is None:
        return value
    return [_convert(schemas, item, into.elem, f"{path}[{i}]", unknown) for i, item in enumerate(value)]


def _conversion_problem(value: Any, into: GoType) -> str | None:
    """How the converter fails to set a scalar: JSON's four groups (bool, int, float, string) do not mix,
    except ints into floats and whole floats into ints."""
    target = into.kind
    kind_name = into.kind.value
    if isinstance(value, bool):
        return None if target is Kind.BOOL else f"unrecognized type: {kind_name}"
    if isinstance(value, int):
        if target in (Kind.INT32, Kind.INT64, Kind.FLOAT64):
            return None
        if target is Kind.STRING:
            return f"cannot convert int64 to {into.go_name}"
        return f"unrecognized type: {kind_name}"
    if isinstance(value, float):
        if target is Kind.FLOAT64 or (target in INT_RANGES and value.is_integer()):
            return None
        if target in INT_RANGES:
            return f"cannot convert float64 to {into.go_name}"
        return f"unrecognized type: {kind_name}"
    if isinstance(value, str) and target is Kind.STRING:
        return None
    return f"unrecognized type: {kind_name}"


# reflect.Kind of an unstructured value, by its JSON type.
_GO_KINDS = {
    "null": "map",
    "boolean": "bool",
    "integer": "int64",
    "number": "float64",
    "string": "string",
    "array": "slice",
    "object": "map",
}


def go_kind(value: Any) -> str:
    """reflect.Kind of an unstructured value."""
    return _GO_KINDS[json_type(value)]
