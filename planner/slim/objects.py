"""Helpers every verb shares: the store key of a kind, scoping, error targets, type fields, filters.

Objects are stored without `kind`/`apiVersion` (list items omit them, as the apiserver's do) and get
them back on the way out; a `Filter` is a parsed namespace + label + field selector, matched against
many objects by lists and watches alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from planner.slim import errors
from planner.slim.errors import Target
from planner.slim.resources import ResourceType
from planner.slim.selectors import FieldSelector, LabelSelector

Obj = dict[str, Any]


def resource_key(rt: ResourceType) -> str:
    return f"{rt.group}/{rt.plural}"


def scope(rt: ResourceType, namespace: str | None) -> str:
    return (namespace or "") if rt.namespaced else ""


def error_target(rt: ResourceType, name: str) -> Target:
    return Target(rt.group, rt.plural, rt.kind, name)


def with_type(rt: ResourceType, obj: Obj) -> Obj:
    return {
        "kind": rt.kind,
        "apiVersion": rt.group_version,
        **{k: v for k, v in obj.items() if k not in ("kind", "apiVersion")},
    }


def strip_type(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}


def parse_rv(text: str | None) -> int:
    try:
        return int(text or "0")
    except ValueError as exc:
        raise errors.bad_request(f'invalid resource version "{text}"') from exc


def check_rv(rt: ResourceType, wanted: Any, old: Obj, name: str) -> None:
    if wanted not in (None, "") and str(wanted) != old["metadata"].get("resourceVersion"):
        raise errors.stale(error_target(rt, name))


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
