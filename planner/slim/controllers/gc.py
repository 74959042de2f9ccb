"""The garbage collector: ownerReference cascades and the finalizers only controllers remove.

Keys are objects of every kind but Event. An event on an object dirties the object itself, its
owners (a Foreground owner waits for its blocking dependents) and, once it is deleted or being
deleted, its dependents; a Pod event also dirties the claims the pod names (pvc-protection). The
collector keeps two indexes from the events: object keys by uid, and dependents by owner uid.
Syncing one object:
- an owner deleted with `orphan` has its dependents' references to it stripped, then the finalizer
  dropped;
- an owner deleted with `foregroundDeletion` has its dependents deleted, and loses the finalizer once
  no dependent with `blockOwnerDeletion` is left;
- an object none of whose owners exists any more is deleted (Background: the deleted owner's
  dependents go after it);
- a deleted PVC loses `kubernetes.io/pvc-protection` once no running pod uses it;
- a pod loses `batch.kubernetes.io/job-tracking` when its Job is gone (the job controller removes it
  in the normal case, after counting the pod).
"""

from __future__ import annotations

import copy
from typing import Any

from planner.slim.api import Api
from planner.slim.controllers.base import (
    CONTROLLER_MANAGER,
    Index,
    Writer,
    deleting,
    event_states,
    key,
    name_of,
    ns_of,
    own_key,
    uid_of,
)
from planner.slim.reconcilers import CONTROLLERS, Key
from planner.slim.resources import ResourceType
from planner.slim.scheduling import claim_names
from planner.slim.store import EVERY_RESOURCE, WatchEvent
from planner.slim.verbhelpers import resource_key

Obj = dict[str, Any]
PVC_PROTECTION = "kubernetes.io/pvc-protection"
JOB_TRACKING = "batch.kubernetes.io/job-tracking"
Entry = tuple[ResourceType, Obj]


def owner_uids(obj: Obj) -> list[str]:
    """For an Index of dependents by owner uid."""
    return [str(ref.get("uid")) for ref in obj["metadata"].get("ownerReferences") or []]


def _actionable(obj: Obj) -> bool:
    metadata = obj["metadata"]
    return bool(
        metadata.get("ownerReferences") or metadata.get("finalizers") or metadata.get("deletionTimestamp")
    )


def pods_using_claim(api: Api, namespace: str, claim: str) -> list[Obj]:
    """Pods in `namespace` not yet finished whose volumes name the claim."""
    using = []
    for pod in api.store.list(key("Pod"), namespace):
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        for volume in (pod.get("spec") or {}).get("volumes") or []:
            if (volume.get("persistentVolumeClaim") or {}).get("claimName") == claim:
                using.append(pod)
                break
    return using


class GarbageCollector:
    component: str = CONTROLLERS
    watches: tuple[str, ...] = (EVERY_RESOURCE,)  # custom resources come and go with their CRDs
    min_interval: float = 0.1

    def __init__(self, api: Api) -> None:
        self.api = api
        self.writer = Writer(api, "generic-garbage-collector")
        self.pvc_writer = Writer(api, CONTROLLER_MANAGER)
        self.uids: dict[str, Key] = {}
        self.dependents = Index(owner_uids)
        self._collected: dict[str, ResourceType] = {}
        self._kinds_seen = -1

    def collected(self) -> dict[str, ResourceType]:
        """The resources collected (everything stored but Events), by store key."""
        self.api.kinds.custom()
        if self.api.kinds.generation != self._kinds_seen:
            self._kinds_seen = self.api.kinds.generation
            self._collected = {resource_key(r): r for r in self.api.kinds.stored() if r.kind != "Event"}
        return self._collected

    def observe(self, event: WatchEvent) -> list[Key]:
        if event.resource not in self.collected():
            return []
        self._track_uid(event)
        self.dependents.observe(event)
        keys = {own_key(event)}
        for state in event_states(event):
            keys.update(k for uid in owner_uids(state) if (k := self.uids.get(uid)) is not None)
        if event.type == "DELETED" or deleting(event.obj):
            keys.update(self.dependents.keys(uid_of(event.obj)))
        if event.resource == key("Pod"):
            keys.update(
                Key(key("PersistentVolumeClaim"), event.namespace, claim)
                for state in event_states(event)
                for claim in claim_names(state)
            )
        return sorted(keys)

    def resync(self) -> list[Key]:
        """Rebuild the indexes and return every object the collector could act on: one with owners,
        finalizers or a deletionTimestamp (the rest it never touches, so resyncing them is waste)."""
        self.dependents.rebuild(self.api.store, self.collected())
        self.uids = {}
        actionable: list[Key] = []
        for resource in self.collected():
            for obj in self.api.store.list(resource, None):
                object_key = Key(resource, ns_of(obj), name_of(obj))
                self.uids[uid_of(obj)] = object_key
                if _actionable(obj):
                    actionable.append(object_key)
        return actionable

    def sync(self, object_key: Key, now: float) -> float | None:
        obj = self.api.store.get(*object_key)
        resource = self.collected().get(object_key.resource)
        if obj is not None and resource is not None:
            self._collect(resource, obj, self._dependents_of(uid_of(obj)))
        return None

    def _track_uid(self, event: WatchEvent) -> None:
        uid = uid_of(event.obj)
        if event.type != "DELETED":
            self.uids[uid] = own_key(event)
        elif self.uids.get(uid) == own_key(event):
            del self.uids[uid]

    def _live(self, uid: str) -> Entry | None:
        """The stored object with this uid, with its resource type (None when it is gone)."""
        found_key = self.uids.get(uid)
        found = self.api.store.get(*found_key) if found_key is not None else None
        resource = self.collected().get(found_key.resource) if found_key is not None else None
        if found_key is None or found is None or resource is None or uid_of(found) != uid:
            return None
        return resource, found

    def _dependents_of(self, uid: str) -> list[Entry]:
        found: list[Entry] = []
        for dependent_key in self.dependents.keys(uid):
            dependent = self.api.store.get(*dependent_key)
            resource = self.collected().get(dependent_key.resource)
            if dependent is not None and resource is not None and uid in owner_uids(dependent):
                found.append((resource, dependent))
        return found

    def _collect(self, rt: ResourceType, obj: Obj, dependents: list[Entry]) -> None:
        finalizers = obj["metadata"].get("finalizers") or []
        if deleting(obj) and "orphan" in finalizers:
            self._orphan(rt, obj, dependents)
        elif deleting(obj) and "foregroundDeletion" in finalizers:
            self._foreground(rt, obj, dependents)
        owners = owner_uids(obj)
        if owners and not deleting(obj) and not any(self._live(uid) for uid in owners):
            self.writer.delete(rt, obj, policy="Background")
        if self._claim_released(rt, obj):
            self.pvc_writer.remove_finalizer(rt, obj, PVC_PROTECTION)
        if rt.kind == "Pod" and JOB_TRACKING in finalizers:
            job = self._live(next(iter(owners), ""))
            if job is None or job[0].kind != "Job":
                self.pvc_writer.remove_finalizer(rt, obj, JOB_TRACKING)

    def _claim_released(self, rt: ResourceType, obj: Obj) -> bool:
        """A deleted PVC whose pvc-protection may go: no unfinished pod uses it any more."""
        if rt.kind != "PersistentVolumeClaim" or not deleting(obj):
            return False
        if PVC_PROTECTION not in (obj["metadata"].get("finalizers") or []):
            return False
        return not pods_using_claim(self.api, ns_of(obj), name_of(obj))

    def _orphan(self, owner_rt: ResourceType, owner: Obj, dependents: list[Entry]) -> None:
        for rt, dependent in dependents:
            stripped = copy.deepcopy(dependent)
            refs = [
                r for r in stripped["metadata"].get("ownerReferences") or [] if r.get("uid") != uid_of(owner)
            ]
            stripped["metadata"]["ownerReferences"] = refs
            self.writer.update(rt, stripped)
        self.writer.remove_finalizer(owner_rt, owner, "orphan")

    def _foreground(self, rt: ResourceType, owner: Obj, dependents: list[Entry]) -> None:
        blocking = False
        for dependent_rt, dependent in dependents:
            if not deleting(dependent):  # Foreground only when it has dependents itself, as the real GC
                policy = "Foreground" if self._dependents_of(uid_of(dependent)) else "Background"
                self.writer.delete(dependent_rt, dependent, policy=policy)
            refs = dependent["metadata"].get("ownerReferences") or []
            if any(r.get("uid") == uid_of(owner) and r.get("blockOwnerDeletion") for r in refs):
                blocking = True
        if not blocking:
            self.writer.remove_finalizer(rt, owner, "foregroundDeletion")
