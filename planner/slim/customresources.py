"""Custom resources: the kinds the stored CustomResourceDefinitions add, served like built-in ones.

Each served version of an Established CRD becomes a `ResourceType` (`custom_types`), so routing,
discovery, OpenAPI, the API core's write pipeline, lists, watches and RBAC serve it with no path of
their own: the hooks carry what differs. Its objects are unstructured (`structured` False: empty values
kept, JSON only, strategic merge patch refused); the version's schema prunes unknown fields, fills
defaults and validates (`structural.py`) and gives server-side apply its list types; `metadata.generation`
counts every change but metadata's (and status's, with a status subresource), as the apiserver's
custom resource strategy does; `additionalPrinterColumns` (Age when there are none) are its Table.

All versions of a CRD share one store key: with conversion strategy None an object differs between
versions only in its `apiVersion`, which objects are stored without.

`Kinds` is what one API serves: the built-in table plus the custom types of the CRDs in its store,
recomputed when the store's revision moved and the CRDs changed, so a CRD's create, update or delete
(and a restart of a persistent server) is reflected at the next request.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from datetime import datetime
from functools import partial
from typing import Any

from planner.slim import crds, structural
from planner.slim.columns import GENERIC, NAME, Column, since
from planner.slim.printers import Printer
from planner.slim.resources import (
    ALL_VERBS,
    RESOURCES,
    STORED,
    ResourceType,
    by_kind,
    groups,
    lookup,
    version_priority,
    versions,
)
from planner.slim.store import Store

Obj = dict[str, Any]
CRD = by_kind(crds.KIND)
CRD_KEY = f"{CRD.group}/{CRD.plural}"


def custom_types(crd: Obj) -> list[ResourceType]:
    """The kinds an Established CRD serves, one per served version, preferred version first."""
    if not crds.established(crd) or (crd.get("metadata") or {}).get("deletionTimestamp"):
        return []
    served = [v for v in crds.versions_of(crd) if v.get("served") is True]
    return [_custom_type(crd, v) for v in sorted(served, key=lambda v: version_priority(str(v.get("name"))))]


def _custom_type(crd: Obj, version: Obj) -> ResourceType:
    spec = crds.spec_of(crd)
    names = (crd.get("status") or {}).get("acceptedNames") or {}
    schema = (version.get("schema") or {}).get("openAPIV3Schema") or {"type": "object"}
    has_status = "status" in (version.get("subresources") or {})
    group, kind = str(spec.get("group")), str(names.get("kind"))
    return ResourceType(
        group,
        str(version.get("name")),
        kind,
        str(names.get("plural")),
        str(names.get("singular") or kind.lower()),
        namespaced=spec.get("scope") == "Namespaced",
        short_names=tuple(names.get("shortNames") or ()),
        categories=tuple(names.get("categories") or ()),
        verbs=ALL_VERBS,
        subresources=("status",) if has_status else (),
        has_status=has_status,
        tracks_generation=True,
        storage_version_hash=_storage_version_hash(group, crds.storage_version(crd) or "", kind),
        defaulter=partial(_prune_and_default, schema),
        validator=structural.validator(schema),
        structured=False,
        schema=schema,
        custom_merge_schema=structural.merge_schema(schema),
        custom_printer=_printer(version),
        generation_of=partial(_generation_source, has_status),
    )


def _storage_version_hash(group: str, version: str, kind: str) -> str:
    """The apiserver's hash of the storage version: first 8 bytes of sha256("<group>/<version>/<kind>")."""
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def _prune_and_default(schema: Obj, obj: Obj) -> None:
    structural.prune(obj, schema)
    structural.default(obj, schema)


def _generation_source(has_status: bool, obj: Obj) -> Obj:
    ignored = ("metadata", "kind", "apiVersion", *(("status",) if has_status else ()))
    return {k: v for k, v in obj.items() if k not in ignored}


# --- Table --------------------------------------------------------------------------------------------


def _printer(version: Obj) -> Printer:
    declared = [c for c in version.get("additionalPrinterColumns") or [] if isinstance(c, dict)]
    paths = [str(c.get("jsonPath") or "") for c in declared]
    columns = [
        Column(
            str(c.get("name")),
            str(c.get("type") or "string"),
            str(c.get("description") or f"Custom resource definition column (in JSONPath format): {path}"),
            int(c.get("priority") or 0),
            str(c.get("format") or ""),
        )
        for c, path in zip(declared, paths, strict=True)
    ]
    if not declared:  # the apiserver's default: Age
        columns, paths = list(GENERIC[1:]), [".metadata.creationTimestamp"]
    return Printer((NAME, *columns), partial(_cells, list(zip(columns, paths, strict=True))))


def _cells(columns: list[tuple[Column, str]], obj: Obj, now: datetime) -> list[Any]:
    cells: list[Any] = [(obj.get("metadata") or {}).get("name", "")]
    for column, path in columns:
        try:
            found = structural.json_path(obj, path)
        except ValueError:
            found = []
        cells.append(_cell(column, found, now))
    return cells


def _cell(column: Column, found: list[Any], now: datetime) -> Any:
    if not found or found[0] is None:
        return None
    if column.type == "date":
        return since(found[0], now)
    if len(found) > 1:
        return ",".join(str(v) for v in found)
    value = found[0]
    if column.type == "string" and not isinstance(value, str):
        return (
            value
            if isinstance(value, dict | list)
            else str(value).lower()
            if isinstance(value, bool)
            else str(value)
        )
    return value


# --- what one API serves ------------------------------------------------------------------------------


class Kinds:
    """The kinds an API serves: `RESOURCES` and the custom types of the CRDs in `store`."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._revision = -1
        self._crds: tuple[tuple[str, str], ...] = ()
        self._custom: tuple[ResourceType, ...] = ()
        self._served: tuple[ResourceType, ...] = RESOURCES
        self._by_path: dict[tuple[str, str, str], ResourceType] = {}
        self.generation = 0  # bumped whenever the custom kinds change

    def custom(self) -> tuple[ResourceType, ...]:
        if self._store.revision != self._revision:
            self._refresh()
        return self._custom

    def _refresh(self) -> None:
        self._revision = self._store.revision
        found = self._store.list(CRD_KEY, None)
        seen = tuple((str(c["metadata"]["name"]), str(c["metadata"].get("resourceVersion"))) for c in found)
        if seen == self._crds:
            return
        self._crds = seen
        self._custom = tuple(t for crd in found for t in custom_types(crd))
        self._served = (*RESOURCES, *self._custom)
        self._by_path = {(r.group, r.version, r.plural): r for r in self._custom}
        self.generation += 1

    def served(self) -> tuple[ResourceType, ...]:
        self.custom()
        return self._served

    def stored(self) -> tuple[ResourceType, ...]:
        """One type per stored resource: the built-in stored versions and each custom kind once."""
        custom = {f"{r.group}/{r.plural}": r for r in reversed(self.custom())}
        return (*STORED, *custom.values())

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        found = lookup(group, version, plural)
        if found is None:
            self.custom()
            found = self._by_path.get((group, version, plural))
        return found

    def groups(self) -> list[str]:
        return groups(self.served())

    def versions(self, group: str) -> list[str]:
        return versions(group, self.served())

    def in_group_version(self, group: str, version: str) -> Sequence[ResourceType]:
        return sorted(
            (r for r in self.served() if r.group == group and r.version == version), key=lambda r: r.plural
        )
