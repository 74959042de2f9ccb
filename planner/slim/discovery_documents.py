"""Discovery documents built from the resource table: /api, /apis, group versions, aggregated, /version.

Shapes follow the golden recordings (legacy APIVersions/APIGroupList/APIResourceList and aggregated
APIGroupDiscoveryList v2beta1/v2) with every field the Python client insists on.
"""

from __future__ import annotations

from typing import Any

from planner.slim.customresources import Kinds
from planner.slim.resources import SUBRESOURCE_VERBS, ResourceType

Obj = dict[str, Any]

# v1.29.0's own /version. The server speaks v1.28.7's API (the golden recordings) but runs native
# sidecar containers (init containers with `restartPolicy: Always`), which v1.28 drops and v1.29 serves.
VERSION_INFO = {
    "major": "1",
    "minor": "29",
    "gitVersion": "v1.29.0",
    "gitCommit": "3f7a50f38688eb332e2a1b013678c6435d539ae6",
    "gitTreeState": "clean",
    "buildDate": "2023-12-13T08:50:10Z",
    "goVersion": "go1.21.5",
    "compiler": "gc",
    "platform": "linux/amd64",
}

SUBRESOURCE_KINDS = {  # subresource -> (group, version, kind, verbs) of what it serves
    "scale": ("autoscaling", "v1", "Scale", SUBRESOURCE_VERBS),
    "binding": ("", "", "Binding", ("create",)),
    "log": ("", "", "Pod", ("get",)),
    "token": ("authentication.k8s.io", "v1", "TokenRequest", ("create",)),
    "eviction": ("policy", "v1", "Eviction", ("create",)),
}


def api_versions(server_address: str) -> Obj:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group_entry(kinds: Kinds, group: str) -> Obj:
    versions = kinds.versions(group)
    entries = [{"groupVersion": f"{group}/{version}", "version": version} for version in versions]
    return {"name": group, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(kinds: Kinds) -> Obj:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group_entry(kinds, g) for g in kinds.groups()],
    }


def api_group(kinds: Kinds, group: str) -> Obj | None:
    if group not in kinds.groups():
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(kinds, group)}


def resource_list(kinds: Kinds, group: str, version: str) -> Obj | None:
    members = kinds.in_group_version(group, version)
    if not members:
        return None
    entries: list[Obj] = []
    for rt in members:
        entries.append(_resource_entry(rt))
        entries.extend(_subresource_entry(rt, sub) for sub in sorted(rt.subresources))
    if group == "" and version == "v1":
        entries.append(_binding_entry())
        entries.sort(key=lambda e: e["name"])
    listing: Obj = {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": members[0].group_version}
    if not group:
        del listing["apiVersion"]  # the core list has none (golden discovery_api_v1.json)
    listing["resources"] = entries
    return listing


def _resource_entry(rt: ResourceType) -> Obj:
    entry: Obj = {
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": list(rt.verbs),
        **_other_names(rt),
    }
    if rt.storage_version_hash:
        entry["storageVersionHash"] = rt.storage_version_hash
    return entry


def _subresource_entry(rt: ResourceType, sub: str) -> Obj:
    group, version, kind, verbs = SUBRESOURCE_KINDS.get(sub, ("", "", rt.kind, SUBRESOURCE_VERBS))
    entry: Obj = {"name": f"{rt.plural}/{sub}", "singularName": "", "namespaced": rt.namespaced}
    if group:
        entry["group"], entry["version"] = group, version
    entry["kind"] = kind
    entry["verbs"] = list(verbs)
    return entry


def _binding_entry() -> Obj:
    return {
        "name": "bindings",
        "singularName": "binding",
        "namespaced": True,
        "kind": "Binding",
        "verbs": ["create"],
    }


# --- aggregated discovery -----------------------------------------------------------------------------


def aggregated(kinds: Kinds, core: bool, version: str) -> Obj:
    """APIGroupDiscoveryList for /api (core) or /apis, in apidiscovery.k8s.io/<version>."""
    names = [""] if core else kinds.groups()
    items = [_aggregated_group(kinds, g) for g in names]
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"apidiscovery.k8s.io/{version}",
        "metadata": {},
        "items": items,
    }


def _aggregated_group(kinds: Kinds, group: str) -> Obj:
    return {
        "metadata": {"name": group, "creationTimestamp": None} if group else {"creationTimestamp": None},
        "versions": [
            _aggregated_version(kinds, group, version) for version in kinds.versions(group) or ["v1"]
        ],
    }


def _aggregated_version(kinds: Kinds, group: str, version: str) -> Obj:
    resources = [_aggregated_resource(rt) for rt in kinds.in_group_version(group, version)]
    if not group:
        binding = {
            "resource": "bindings",
            "responseKind": {"group": "", "version": "", "kind": "Binding"},
            "scope": "Namespaced",
            "singularResource": "binding",
            "verbs": ["create"],
        }
        resources = sorted([*resources, binding], key=lambda r: str(r["resource"]))
    return {"version": version, "resources": resources, "freshness": "Current"}


def _other_names(rt: ResourceType) -> Obj:
    """shortNames and categories, when the kind has any."""
    names: Obj = {}
    if rt.short_names:
        names["shortNames"] = list(rt.short_names)
    if rt.categories:
        names["categories"] = list(rt.categories)
    return names


def _aggregated_resource(rt: ResourceType) -> Obj:
    entry: Obj = {
        "resource": rt.plural,
        "responseKind": {"group": "", "version": "", "kind": rt.kind},
        "scope": "Namespaced" if rt.namespaced else "Cluster",
        "singularResource": rt.singular,
        "verbs": list(rt.verbs),
        **_other_names(rt),
    }
    if rt.subresources:
        entry["subresources"] = [_aggregated_sub(rt, s) for s in sorted(rt.subresources)]
    return entry


def _aggregated_sub(rt: ResourceType, sub: str) -> Obj:
    group, version, kind, verbs = SUBRESOURCE_KINDS.get(sub, ("", "", rt.kind, SUBRESOURCE_VERBS))
    return {
        "subresource": sub,
        "responseKind": {"group": group, "version": version, "kind": kind},
        "verbs": list(verbs),
    }
