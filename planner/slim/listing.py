"""The list verb: options, selection and paging with continue tokens.

`list_objects` selects a kind's objects by namespace, label and field selector (a `metadata.name`
field selector with a namespace is a single lookup) in the apiserver's order (namespace, then
name), and pages them with `limit`/`continue`; `remainingItemCount` is given only for unfiltered
lists, as the apiserver gives it. A continue token is what the apiserver sends: unpadded base64url of
`{"v":"meta.k8s.io/v1","rv":N,"start":"<namespace>/<name>\\u0000"}`. It records where the page ended;
the next page lists the current objects after that key (there is no snapshot history, see
docs/embedded-cluster.md).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from planner.slim import status_errors
from planner.slim.resources import ResourceType
from planner.slim.store import Store
from planner.slim.verbhelpers import Filter, parse_rv, resource_key

Obj = dict[str, Any]
ObjList = list[Obj]


@dataclass(frozen=True)
class ListOptions:
    label_selector: str | None = None
    field_selector: str | None = None
    limit: int = 0
    continue_token: str | None = None
    resource_version: str | None = None
    resource_version_match: str | None = None


def sort_key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))


def encode_continue(rv: int, last_key: str) -> str:
    token = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": last_key + "\x00"}, separators=(",", ":"))
    return base64.urlsafe_b64encode(token.encode()).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, str]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except ValueError as exc:
        raise status_errors.bad_request(f"invalid continue token: {exc}") from exc
    try:
        data = json.loads(raw.decode("utf-8"))
        return int(data["rv"]), str(data["start"]).rstrip("\x00")
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        first = raw[:1]
        shown = first.decode() if first and 32 <= first[0] < 127 else f"\\x{first[0]:02x}" if first else ""
        raise status_errors.bad_request(
            "invalid continue token: continue key is not valid: "
            f"invalid character '{shown}' looking for beginning of value"
        ) from exc


def list_of(rt: ResourceType, meta: Obj, items: ObjList) -> Obj:
    return {"kind": rt.list_kind, "apiVersion": rt.group_version, "metadata": meta, "items": items}


def list_objects(store: Store, rt: ResourceType, flt: Filter, options: ListOptions) -> Obj:
    list_rv = _list_revision(store, options)
    start = ""
    if options.continue_token:
        list_rv, start = decode_continue(options.continue_token)
    items = [o for o in _candidates(store, rt, flt) if (not start or sort_key(o) > start) and flt.matches(o)]
    meta: Obj = {"resourceVersion": str(list_rv)}
    if options.limit and len(items) > options.limit:
        remaining = len(items) - options.limit
        items = items[: options.limit]
        meta["continue"] = encode_continue(list_rv, sort_key(items[-1]))
        if flt.labels.empty and not flt.fields.terms:
            meta["remainingItemCount"] = remaining
    if rt.from_storage is not None:
        items = [rt.from_storage(o) for o in items]
    return list_of(rt, meta, items)


def _list_revision(store: Store, options: ListOptions) -> int:
    if options.continue_token and options.resource_version not in (None, ""):
        raise status_errors.bad_request("specifying resource version is not allowed when using continue")
    current = store.revision
    if options.resource_version_match == "Exact" and options.resource_version not in (None, "", "0"):
        requested = parse_rv(options.resource_version)
        if requested < current:
            raise status_errors.expired("The resourceVersion for the provided list is too old.")
    return current


def _candidates(store: Store, rt: ResourceType, flt: Filter) -> ObjList:
    name = flt.fields.exact_name()
    key = resource_key(rt)
    if name is not None and (flt.namespace is not None or not rt.namespaced):
        found = store.get(key, flt.namespace or "", name)  # cluster-scoped objects are stored under ""
        return [found] if found else []
    return store.list(key, flt.namespace)
