"""The garbage collector: ownerReference cascades and the finalizers only controllers remove.

Each pass indexes every object by uid, then:
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
from planner.slim.controllers.base import CONTROLLER_MANAGER, Writer, deleting, key, name_of, ns_of, uid_of
from planner.slim.objects import resource_key
from planner.slim.resources import RESOURCES, ResourceType
from planner.slim.runtime import CONTROLLERS

Obj = dict[str, Any]
PVC_PROTECTION = "kubernetes.io/pvc-protection"
JOB_TRACKING = "batch.kubernetes.io/job-tracking"
Entry = tuple[ResourceType, Obj]


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
    watches: tuple[str, ...] = tuple(resource_key(r) for r in RESOURCES if r.kind != "Event")
    min_interval: float = 0.1

    def __init__(self, api: Api) -> None:
        self.api = api
        self.writer = Writer(api, "generic-garbage-collector")
        self.pvc_writer = Writer(api, CONTROLLER_MANAGER)

    def reconcile(self, now: float) -> float | None:
        entries = self._all()
        by_uid = {uid_of(obj): (rt, obj) for rt, obj in entries}
        dependents: dict[str, list[Entry]] = {}
        for rt, obj in entries:
            for ref in obj["metadata"].get("ownerReferences") or []:
                dependents.setdefault(str(ref.get("uid")), []).append((rt, obj))
        for rt, obj in entries:
            self._collect(rt, obj, by_uid, dependents.get(uid_of(obj), []))
        return None

    def _all(self) -> list[Entry]:
        store = self.api.store
        return [
            (rt, obj) for rt in RESOURCES if rt.kind != "Event" for obj in store.list(resource_key(rt), None)
        ]

    def _collect(self, rt: ResourceType, obj: Obj, by_uid: dict[str, Entry], dependents: list[Entry]) -> None:
        finalizers = obj["metadata"].get("finalizers") or []
        if deleting(obj) and "orphan" in finalizers:
            self._orphan(rt, obj, dependents)
        elif deleting(obj) and "foregroundDeletion" in finalizers:
            self._foreground(rt, obj, dependents)
        owners = [str(r.get("uid")) for r in obj["metadata"].get("ownerReferences") or []]
        if owners and not deleting(obj) and not any(uid in by_uid for uid in owners):
            self.writer.delete(rt.kind, obj, policy="Background")
        if self._claim_released(rt, obj):
            self.pvc_writer.remove_finalizer(rt.kind, obj, PVC_PROTECTION)
        if rt.kind == "Pod" and JOB_TRACKING in finalizers:
            job = by_uid.get(next(iter(owners), ""))
            if job is None or job[0].kind != "Job":
                self.pvc_writer.remove_finalizer(rt.kind, obj, JOB_TRACKING)

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
            self.writer.update(rt.kind, stripped)
        self.writer.remove_finalizer(owner_rt.kind, owner, "orphan")

    def _foreground(self, rt: ResourceType, owner: Obj, dependents: list[Entry]) -> None:
        blocking = False
        for dependent_rt, dependent in dependents:
            if not deleting(dependent):
                self.writer.delete(dependent_rt.kind, dependent, policy="Foreground")
            refs = dependent["metadata"].get("ownerReferences") or []
            if any(r.get("uid") == uid_of(owner) and r.get("blockOwnerDeletion") for r in refs):
                blocking = True
        if not blocking:
            self.writer.remove_finalizer(rt.kind, owner, "foregroundDeletion")
