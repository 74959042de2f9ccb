"""A custom resource's structural schema at work: pruning, defaulting, validation and merge keys.

The `openAPIV3Schema` of a CRD version drives what the apiextensions-apiserver does to its objects:

- pruning (`prune`): fields the schema does not declare are dropped, except below
  `x-kubernetes-preserve-unknown-fields: true` (and `apiVersion`/`kind`/`metadata` at the root and in
  `x-kubernetes-embedded-resource` objects); `null` in a field that is not `nullable` is dropped too
  (or replaced by the field's default). The dropped paths are returned, for `?fieldValidation=`;
- defaulting (`default`): a `default` fills a missing property, at any depth the object reaches;
- validation (`validator`): the OpenAPI v3 subset CRDs allow (types, `required`, `enum`, bounds,
  lengths, `pattern`, item counts, `nullable`, `x-kubernetes-int-or-string`), checked with
  `jsonschema`'s draft 4 validator (OpenAPI 3.0's dialect) and reported as the apiserver's causes
  (`spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"`,
  naming the type it got);
- merge keys (`merge_schema`): the server-side apply schema, from `x-kubernetes-list-type` (`map` with
  `x-kubernetes-list-map-keys`, `set`, `atomic`) and `x-kubernetes-map-type`; a list without a list
  type is atomic, as the apiserver treats it.

Left out, as `docs/embedded-cluster.md` says: CEL rules (`x-kubernetes-validations`), `format`
checks, and defaulting when an object is read back.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import jsonschema

from planner.slim import validators
from planner.slim.decoding import json_type
from planner.slim.mergekeys import ATOMIC, OBJECT_META, SET, Atomic, Field, KeyedList, Struct
from planner.slim.status_errors import Cause

Obj = dict[str, Any]
Schema = dict[str, Any]
_ROOT_FIELDS = ("apiVersion", "kind", "metadata")


def _properties(schema: Schema) -> dict[str, Schema]:
    found = schema.get("properties")
    return found if isinstance(found, dict) else {}


def _additional(schema: Schema) -> Schema | None:
    found = schema.get("additionalProperties")
    return found if isinstance(found, dict) else None


def _items(schema: Schema) -> Schema | None:
    found = schema.get("items")
    return found if isinstance(found, dict) else None


# --- pruning and defaulting ---------------------------------------------------------------------------


def prune(obj: Obj, schema: Schema) -> list[str]:
    """Drop what `schema` does not declare from `obj` (in place); the dropped fields' paths."""
    dropped: list[str] = []
    _prune_object(obj, schema, "", dropped, root=True)
    return dropped


def _prune_object(obj: Obj, schema: Schema, path: str, dropped: list[str], *, root: bool = False) -> None:
    properties, additional = _properties(schema), _additional(schema)
    preserve = schema.get("x-kubernetes-preserve-unknown-fields") is True
    kept = _ROOT_FIELDS if root or schema.get("x-kubernetes-embedded-resource") else ()
    for key in list(obj):
        where = f"{path}.{key}" if path else key
        if key in kept:  # ObjectMeta and the type fields are the apiserver's, whatever the schema says
            continue
        child = properties.get(key) or additional
        if child is None:
            if not preserve:
                del obj[key]
                dropped.append(where)
            continue
        if obj[key] is None and child.get("nullable") is not True:
            del obj[key]
            continue
        _prune_value(obj[key], child, where, dropped)


def _prune_value(value: Any, schema: Schema, path: str, dropped: list[str]) -> None:
    if isinstance(value, dict):
        if _properties(schema) or _additional(schema) or schema.get("type") == "object":
            _prune_object(value, schema, path, dropped)
    elif isinstance(value, list):
        items = _items(schema)
        if items is not None:
            for index, item in enumerate(value):
                _prune_value(item, items, f"{path}[{index}]", dropped)


def default(obj: Obj, schema: Schema) -> None:
    """Fill missing properties that declare a `default` (in place)."""
    for key, child in _properties(schema).items():
        if key not in obj and "default" in child:
            obj[key] = copy.deepcopy(child["default"])
    for key, value in obj.items():
        declared = _properties(schema).get(key) or _additional(schema)
        if declared is None:
            continue
        if isinstance(value, dict):
            default(value, declared)
        elif isinstance(value, list) and (items := _items(declared)) is not None:
            for item in value:
                if isinstance(item, dict):
                    default(item, items)


# --- validation ---------------------------------------------------------------------------------------


def validator(schema: Schema) -> Callable[[Obj], list[Cause]]:
    """The causes of a 422 for an object against `schema` (metadata is validated as every kind's is)."""
    checker = jsonschema.Draft4Validator(json_schema(schema, root=True))

    def validate(obj: Obj) -> list[Cause]:
        checked = {k: v for k, v in obj.items() if k != "metadata"}
        errors = sorted(checker.iter_errors(checked), key=lambda e: [str(step) for step in e.absolute_path])
        return [_cause(error) for error in errors]

    return validate


def json_schema(schema: Schema, *, root: bool = False) -> Schema:
    """The OpenAPI v3 schema as draft 4 JSON Schema: `nullable` admits null, int-or-string admits
    either, Kubernetes' extensions and `format` are left out."""
    out: Schema = {}
    for key, value in schema.items():
        if key.startswith("x-kubernetes-") or key in (
            "nullable",
            "format",
            "default",
            "description",
            "example",
        ):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {
                name: json_schema(child) for name, child in value.items() if not (root and name == "metadata")
            }
        elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
            out[key] = json_schema(value)
        elif key in ("allOf", "anyOf", "oneOf") and isinstance(value, list):
            out[key] = [json_schema(child) for child in value if isinstance(child, dict)]
        else:
            out[key] = value
    if root:
        out["required"] = [r for r in out.get("required") or [] if r != "metadata"] or None
        if out["required"] is None:
            del out["required"]
    if schema.get("x-kubernetes-int-or-string") is True:
        out["type"] = ["integer", "string"]
    if schema.get("nullable") is True and "type" in out:
        types = out["type"] if isinstance(out["type"], list) else [out["type"]]
        out["type"] = [*types, "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
    return out


def _cause(error: jsonschema.ValidationError) -> Cause:
    path = _path(error.absolute_path)
    if error.validator == "required":
        missing = str(error.message).split("'")[1] if "'" in error.message else ""
        return validators.required(f"{path}.{missing}" if path else missing, "")
    if error.validator == "enum":
        return validators.not_supported(path, error.instance, [str(v) for v in error.validator_value])
    if error.validator == "type":
        wanted = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        shown = json_type(error.instance)
        types = ",".join(str(t) for t in wanted if t != "null")
        detail = f'{path} in body must be of type {types}: "{shown}"'
        return Cause("FieldValueTypeInvalid", f'Invalid value: "{shown}": {detail}', path)
    return validators.invalid_value(path, error.instance, f"{path} in body {_detail(error)}")


def _detail(error: jsonschema.ValidationError) -> str:
    limit = error.validator_value
    details = {
        "minimum": f"should be greater than or equal to {limit}",
        "maximum": f"should be less than or equal to {limit}",
        "minLength": f"should be at least {limit} chars long",
        "maxLength": f"should be at most {limit} chars long",
        "minItems": f"should have at least {limit} items",
        "maxItems": f"should have at most {limit} items",
        "pattern": f"should match '{limit}'",
        "minProperties": f"should have at least {limit} properties",
        "maxProperties": f"should have at most {limit} properties",
    }
    return details.get(str(error.validator), str(error.message))


def _path(steps: Any) -> str:
    out = ""
    for step in steps:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out


# --- server-side apply --------------------------------------------------------------------------------


def merge_schema(schema: Schema) -> Struct:
    """The apply schema of a custom kind: its metadata as every object's, the rest from `schema`."""
    root = _struct(schema)
    return Struct({**root.fields, "metadata": OBJECT_META}, root.values)


def _struct(schema: Schema) -> Struct:
    fields = {
        name: found for name, child in _properties(schema).items() if (found := _field(child)) is not None
    }
    additional = _additional(schema)
    return Struct(fields, _field(additional) if additional is not None else None)


def _field(schema: Schema) -> Field | None:
    """None: a scalar or an untyped value (merged as the apiserver merges unknown fields)."""
    if schema.get("type") == "array":
        return _list(schema)
    if schema.get("x-kubernetes-map-type") == "atomic":
        return ATOMIC
    if _properties(schema) or _additional(schema) is not None:
        return _struct(schema)
    return None


def _list(schema: Schema) -> Field:
    kind = schema.get("x-kubernetes-list-type")
    if kind == "set":
        return SET
    if kind == "map":
        keys = tuple(str(k) for k in schema.get("x-kubernetes-list-map-keys") or ())
        items = _items(schema) or {}
        item: Struct | Atomic = ATOMIC if items.get("x-kubernetes-map-type") == "atomic" else _struct(items)
        return KeyedList(patch_key=None, apply_keys=keys or None, item=item)
    return ATOMIC


# --- JSONPath (printer columns) -----------------------------------------------------------------------


def json_path(obj: Any, path: str) -> list[Any]:
    """The values `path` (the subset of JSONPath printer columns use: `.a.b`, `[0]`, `[*]`,
    `['a.b']`, `[?(@.type=="Ready")]`) finds in `obj`."""
    found = [obj]
    for step in _steps(path.strip().removeprefix("{").removesuffix("}").strip()):
        found = [child for value in found for child in step(value)]
    return found


Step = Any


def _steps(path: str) -> Iterator[Step]:
    index = 0
    while index < len(path):
        char = path[index]
        if char == "$" and index == 0:
            index += 1
        elif char == ".":
            end = index + 1
            while end < len(path) and path[end] not in ".[":
                end += 1
            yield _key(path[index + 1 : end])
            index = end
        elif char == "[":
            end = path.index("]", index)
            if path[index + 1 : index + 3] == "?(":
                end = path.index(")]", index) + 1
            yield _bracket(path[index + 1 : end])
            index = end + 1
        else:
            raise ValueError(f"unexpected {char!r} in JSONPath {path!r}")


def _key(name: str) -> Step:
    def step(value: Any) -> list[Any]:
        if not name:
            return [value]
        return [value[name]] if isinstance(value, dict) and name in value else []

    return step


def _bracket(inside: str) -> Step:
    if inside == "*":
        return lambda value: (
            list(value)
            if isinstance(value, list)
            else list(value.values())
            if isinstance(value, dict)
            else []
        )
    if inside[:1] in "'\"":
        return _key(inside[1:-1])
    if inside.startswith("?(@."):
        field, _, wanted = inside[4:-1].partition("==")
        expected = wanted.strip().strip("'\"")

        def matching(value: Any) -> list[Any]:
            items = value if isinstance(value, list) else []
            return [i for i in items if isinstance(i, dict) and str(i.get(field.strip())) == expected]

        return matching
    position = int(inside)
    return lambda value: (
        [value[position]] if isinstance(value, list) and -len(value) <= position < len(value) else []
    )
