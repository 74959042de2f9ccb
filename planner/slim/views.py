"""Alternative representations a client can ask for with Accept: Table and PartialObjectMetadata.

`kubectl get` asks for `as=Table` and prints the server's columns verbatim; the per-kind printers are
`printers.py`'s, this module adapts the API core's lists, objects and watch events to them. Watch
events as Tables carry the column definitions in the first event only (later ones have
`columnDefinitions: null`), as the apiserver's watch encoder sends them. `as=PartialObjectMetadata`
(`List`) returns metadata only (golden `partial_object_metadata_list.json`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from planner.slim import printers
from planner.slim.resources import ResourceType
from planner.slim.verbhelpers import labelled

Obj = dict[str, Any]


@dataclass(frozen=True)
class TableRequest:
    resource: ResourceType
    objects: list[Obj]
    list_metadata: Obj
    include_object: str  # "Metadata" (default), "Object" or "None"
    now: datetime


def table(request: TableRequest) -> Obj:
    meta = request.list_metadata
    return printers.to_table(
        request.resource.printer,
        [labelled(request.resource, o) for o in request.objects],
        now=request.now,
        include_object=request.include_object,
        resource_version=str(meta.get("resourceVersion", "")),
        continue_token=meta.get("continue"),
        remaining_item_count=meta.get("remainingItemCount"),
    )


class TableWatch:
    """Turns one watch stream's events into Table events; headers only in the first."""

    def __init__(self, resource: ResourceType, include_object: str) -> None:
        self.resource = resource
        self.include_object = include_object
        self.headers_sent = False

    def event(self, event: Obj) -> Obj:
        obj = event.get("object") or {}
        if event.get("type") in ("ERROR", "BOOKMARK") or obj.get("kind") != self.resource.kind:
            return event
        rv = str((obj.get("metadata") or {}).get("resourceVersion", ""))
        rendered = table(
            TableRequest(self.resource, [obj], {"resourceVersion": rv}, self.include_object, _now())
        )
        if self.headers_sent:
            rendered["columnDefinitions"] = None
        self.headers_sent = True
        return {"type": event["type"], "object": rendered}


def _now() -> datetime:
    return datetime.now(UTC)


def partial_metadata(obj: Obj) -> Obj:
    return printers.partial_object_metadata(obj)


def partial_metadata_list(listing: Obj) -> Obj:
    meta = listing.get("metadata") or {}
    return printers.partial_object_metadata_list(
        listing.get("items") or [],
        kind=str(listing.get("kind", "")).removesuffix("List") or None,
        resource_version=str(meta.get("resourceVersion", "")),
        continue_token=meta.get("continue"),
        remaining_item_count=meta.get("remainingItemCount"),
    )
