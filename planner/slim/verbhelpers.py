"""Helpers every verb shares: decoding, the store key of a kind, scoping, error targets, type fields,
resourceVersion checks, filters.

`decode` is the one place a parsed request body becomes an object of a kind (kind and apiVersion
checked, a body in a version other than the stored one converted to it); the HTTP layer turns bytes
into the parsed body, decoded as the kind's Go type (`media.decode_body`). Objects are
stored without `kind`/`apiVersion` (list items omit them, as the apiserver's do) and get them back
on the way out (`with_type`); a `Filter` is a parsed namespace + label + field selector, matched
against many objects by lists and watches alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from planner.slim import status_errors
from planner.slim.meta import json_copy, prune_empty
from planner.slim.resources import ResourceType, by_kind
from planner.slim.selectors import FieldSelector, LabelSelector, parse_field_selector, parse_label_selector
from planner.slim.status_errors import Target

Obj = dict[str, Any]


def resource_key(rt: ResourceType) -> str:
    return rt.stored_in or f"{rt.group}/{rt.plural}"


def scope(rt: ResourceType, namespace: str | None) -> str:
    return (namespace or "") if rt.namespaced else ""


def error_target(rt: ResourceType, name: str) -> Target:
    return Target(rt.group, rt.plural, rt.kind, name)


def with_type(rt: ResourceType, obj: Obj) -> Obj:
    """A stored object (or one in the stored version) as `rt` serves it: converted when `rt` is another
    version of the kind, with `rt`'s kind and apiVersion (an object already in `rt`'s version is only
    labelled)."""
    if rt.from_storage is not None and obj.get("apiVersion") != rt.group_version:
        obj = rt.from_storage(obj)
    return labelled(rt, obj)


def labelled(rt: ResourceType, obj: Obj) -> Obj:
    """The object with `rt`'s kind and apiVersion, unconverted: for objects the API already served
    (list items carry no type fields)."""
    return {
        "kind": rt.kind,
        "apiVersion": rt.group_version,
        **{k: v for k, v in obj.items() if k not in ("kind", "apiVersion")},
    }


def omit_empty(rt: ResourceType, obj: Obj, *, decoded: bool = True) -> Obj:
    """A copy of `obj` as `rt` stores it: a Go struct's omitempty values left out; a custom resource
    (unstructured) keeps its values as sent, only its metadata is a Go struct."""
    if rt.structured:
        pruned: Obj = prune_empty(obj, decoded=decoded)
        return pruned
    out = {k: v if k == "metadata" else json_copy(v) for k, v in obj.items()}
    if isinstance(out.get("metadata"), dict):
        out["metadata"] = prune_empty(out["metadata"], decoded=decoded)
    return out


def omit_empty_in(rt: ResourceType, obj: Obj, keys: tuple[str, ...]) -> Obj:
    """`omit_empty` of `obj` whose members other than `keys` are already as `rt` stores them (a
    stored object's): only those members are copied and pruned, the others are shared."""
    out = dict(obj)
    for key in keys:
        value = out.get(key)
        if isinstance(value, dict):
            out[key] = (
                prune_empty(value, key=key, decoded=True)
                if rt.structured or key == "metadata"
                else json_copy(value)
            )
    return out


def strip_type(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}


def decode(rt: ResourceType, body: Any) -> Obj:
    """A request body (already parsed from JSON) as a new object of `rt`: it must be an object of
    that kind and version (or name none); 400 otherwise."""
    if not isinstance(body, dict):
        raise status_errors.bad_request(f"the object provided is unrecognized (must be of type {rt.kind})")
    obj = omit_empty(rt, body, decoded=False)  # a new tree: the caller's body is never changed
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    if (kind and kind != rt.kind) or (api_version and api_version != rt.group_version):
        raise status_errors.bad_request(
            _kind_mismatch(rt, str(kind or rt.kind), str(api_version or rt.group_version))
        )
    obj["kind"], obj["apiVersion"] = rt.kind, rt.group_version
    if rt.to_storage is not None:
        obj = rt.to_storage(obj)
        obj["apiVersion"] = by_kind(rt.kind).group_version
    return dict(obj)


def _kind_mismatch(rt: ResourceType, kind: str, api_version: str) -> str:
    version = api_version.rsplit("/", 1)[-1]
    internal_group = rt.group.split(".")[0] if rt.group else "core"
    return (
        f'{kind} in version "{version}" cannot be handled as a {rt.kind}: converting ({version}.{kind}) to '
        f"({internal_group}.{rt.kind}): unknown conversion"
    )


def parse_rv(text: str | None) -> int:
    try:
        return int(text or "0")
    except ValueError as exc:
        raise status_errors.bad_request(f'invalid resource version "{text}"') from exc


def check_rv(rt: ResourceType, wanted: Any, old: Obj, name: str) -> None:
    if wanted not in (None, "") and str(wanted) != old["metadata"].get("resourceVersion"):
        raise status_errors.stale(error_target(rt, name))


@dataclass(frozen=True)
class WriteOptions:
    """What a write request asks besides its body: `?dryRun=All`, `?fieldManager=`, `?force=true`,
    `?fieldValidation=` (None: an in-process writer, whose objects are not decoded from bytes) and the
    list its warnings are added to."""

    dry_run: bool = False
    field_manager: str | None = None
    force: bool = False
    field_validation: str | None = None
    warnings: list[str] | None = None


DEFAULT_WRITE_OPTIONS = WriteOptions()


@dataclass
class Filter:
    namespace: str | None
    labels: LabelSelector
    fields: FieldSelector
    getters: dict[str, Any] = field(default_factory=dict)

    def matches(self, obj: Obj | None) -> bool:
        if obj is None:
            return False
        meta = obj.get("metadata") or {}
        if self.namespace is not None and meta.get("namespace", "") != self.namespace:
            return False
        return self.labels.matches(meta.get("labels")) and self.fields.matches(obj, self.getters)


def filter_for(rt: ResourceType, namespace: str | None, labels: str | None, fields: str | None) -> Filter:
    """The request's namespace and selectors, parsed (400 on a bad one) against `rt`'s field selectors."""
    getters = rt.field_selectors
    return Filter(
        namespace if rt.namespaced else None,
        parse_label_selector(labels),
        parse_field_selector(fields, getters),
        getters,
    )
