"""Alternative representations a client can ask for with Accept: Table and PartialObjectMetadata.

`kubectl get` asks for `as=Table`. Per-kind columns are part 2's (`planner/slim/tables.py`): it sets
`TABLE_HOOK` to a function returning the Table for a resource, or None to fall back to the default
here, which is the apiserver's generic one (Name + Age), what kubectl shows for kinds it has no
columns for. `as=PartialObjectMetadataList` returns metadata only (golden
`partial_object_metadata_list.json`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from planner.slim.resources import ResourceType

Obj = dict[str, Any]


@dataclass(frozen=True)
class TableRequest:
    resource: ResourceType
    objects: list[Obj]
    list_metadata: Obj
    include_object: str  # "Metadata" (default), "Object" or "None"
    now: datetime


TableHook = Callable[[TableRequest], Obj | None]
TABLE_HOOK: TableHook | None = None


def table(request: TableRequest) -> Obj:
    if TABLE_HOOK is not None:
        rendered = TABLE_HOOK(request)
        if rendered is not None:
            return rendered
    return default_table(request)


def default_table(request: TableRequest) -> Obj:
    columns = [
        _column("Name", "string", "name", "Name must be unique within a namespace."),
        _column(
            "Age",
            "string",
            "",
            "CreationTimestamp is a timestamp representing the server time when this object was created.",
        ),
    ]
    rows = [
        {
            "cells": [
                o["metadata"].get("name", ""),
                age(o["metadata"].get("creationTimestamp"), request.now),
            ],
            "object": row_object(o, request.include_object),
        }
        for o in request.objects
    ]
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": request.list_metadata,
        "columnDefinitions": columns,
        "rows": rows,
    }


def _column(name: str, kind: str, fmt: str, description: str, priority: int = 0) -> Obj:
    return {"name": name, "type": kind, "format": fmt, "description": description, "priority": priority}


def row_object(obj: Obj, include: str) -> Obj | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return partial_metadata(obj)


def partial_metadata(obj: Obj) -> Obj:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata", {}),
    }


def partial_metadata_list(listing: Obj) -> Obj:
    return {
        "kind": "PartialObjectMetadataList",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": listing.get("metadata", {}),
        "items": [partial_metadata(o) for o in listing.get("items", [])],
    }


def age(timestamp: str | None, now: datetime) -> str:
    """kubectl's human duration: 119s, 5m3s, 3h10m, 2d5h, 400d, 3y20d."""
    if not timestamp:
        return "<unknown>"
    then = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    seconds = int((now - then).total_seconds())
    if seconds < 0:
        return "0s"
    return human_duration(seconds)


def human_duration(seconds: int) -> str:
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if seconds < 120:
        return f"{seconds}s"
    if minutes < 10:
        rest = seconds % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{days}d{rest}h" if rest else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    years = days // 365
    if days < 365 * 8:
        return f"{years}y{days % 365}d" if days % 365 else f"{years}y"
    return f"{years}y"
