"""StatefulSet → ordinal Pods and their claims, as kube-controller-manager's statefulset controller.

Pods are `<set>-<ordinal>` with the labels `controller-revision-hash` (the revision's name),
`statefulset.kubernetes.io/pod-name` and `apps.kubernetes.io/pod-index`, hostname = pod name and
subdomain = `serviceName`; each `volumeClaimTemplates` entry becomes a claim `<template>-<set>-<i>`
mounted in place of the template's volume of that name. Under OrderedReady, pods are created in
ordinal order, each only once the one before is Running and Ready, and removed from the highest
ordinal down, one at a time; Parallel creates and removes them all at once. RollingUpdate replaces
pods whose revision is not the update revision from the highest ordinal down to `partition`, one at
a time, each once the one above is healthy; OnDelete only creates deleted pods at the new revision.
Claims stay on scale-down and on delete unless `persistentVolumeClaimRetentionPolicy` says Delete
(the claim then gets the pod, or the set, as owner, and the garbage collector removes it).
"""

from __future__ import annotations

import copy
from typing import Any

from planner.slim import status_errors
from planner.slim.controllers.base import (
    BURST_PODS,
    KindController,
    deleting,
    from_template,
    key,
    name_of,
    ns_of,
    rt,
    uid_of,
)
from planner.slim.controllers.deployments import pod_ready, ready_since
from planner.slim.controllers.revisions import (
    REVISION_LABEL,
    revision_template,
    sync_revisions,
    truncate_history,
)
from planner.slim.reconcilers import RETRY_SECONDS

Obj = dict[str, Any]
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
COMPONENT = "statefulset-controller"


def ordinal_of(set_name: str, pod_name: str) -> int | None:
    """The ordinal a pod name carries for this set (`web-3` → 3), or None when it is not one of its."""
    prefix, _, number = pod_name.rpartition("-")
    if prefix != set_name or not number.isdigit() or (number != "0" and number.startswith("0")):
        return None
    return int(number)


def claim_name(template: str, set_name: str, ordinal: int) -> str:
    return f"{template}-{set_name}-{ordinal}"


def claim_volumes(volumes: list[Obj], claims: list[Obj], set_name: str, ordinal: int) -> list[Obj]:
    """A pod's volumes with each claim template's volume mounting that ordinal's claim instead."""
    names = {c["metadata"]["name"] for c in claims}
    kept = [v for v in volumes if v.get("name") not in names]
    return kept + [
        {
            "name": c["metadata"]["name"],
            "persistentVolumeClaim": {"claimName": claim_name(c["metadata"]["name"], set_name, ordinal)},
        }
        for c in claims
    ]


def update_revision_for(ordinal: int, strategy: Obj) -> bool:
    """Whether a pod created now at `ordinal` gets the update revision (else the current one): under
    RollingUpdate, ordinals below `partition` stay at the current revision."""
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return True
    return ordinal >= partition_of(strategy)


def partition_of(strategy: Obj) -> int:
    return int((strategy.get("rollingUpdate") or {}).get("partition") or 0)


def rolling_targets(ordinals: list[int], partition: int) -> list[int]:
    """The ordinals a rolling update visits, in its order: highest first, down to `partition`."""
    return sorted((o for o in ordinals if o >= partition), reverse=True)


def running_and_ready(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and pod_ready(pod)


def _claim_owner(owner: Obj, kind: str, api_version: str) -> Obj:
    """The plain owner reference (no controller, nothing blocked) a retention policy puts on a claim."""
    return {"apiVersion": api_version, "kind": kind, "name": name_of(owner), "uid": uid_of(owner)}


class StatefulSetController(KindController):
    kind = "StatefulSet"
    recorder = COMPONENT
    controls = ("Pod", "ControllerRevision")

    def _pods(self, sts: Obj) -> dict[int, Obj]:
        """The set's pods by ordinal (a pod it controls whose name is no ordinal of it is ignored)."""
        found = {}
        for pod in self.controlled.of("Pod", sts):
            ordinal = ordinal_of(name_of(sts), name_of(pod))
            if ordinal is not None:
                found[ordinal] = pod
        return found

    def reconcile(self, sts: Obj, now: float) -> float | None:
        pods = self._pods(sts)
        revisions = self.controlled.of("ControllerRevision", sts)
        update, history = sync_revisions(self.writer, sts, "StatefulSet", revisions)
        if update is None:
            return now + RETRY_SECONDS
        status = sts.get("status") or {}
        current = next((r for r in history if name_of(r) == status.get("currentRevision")), update)
        retry = self._reconcile(sts, pods, current, update)
        due = self._write_status(sts, current, update, now)
        live = {str(p["metadata"].get("labels", {}).get(REVISION_LABEL)) for p in pods.values()}
        truncate_history(self.writer, sts, history, live | {name_of(current), name_of(update)})
        return min((t for t in (due, now + RETRY_SECONDS if retry else None) if t is not None), default=None)

    # --- pods ---------------------------------------------------------------------------------------

    def _reconcile(self, sts: Obj, pods: dict[int, Obj], current: Obj, update: Obj) -> bool:
        """One step of the set's pod management; True when a creation failed (retry)."""
        spec = sts.get("spec") or {}
        replicas = int(spec.get("replicas", 1))
        ordered = spec.get("podManagementPolicy", "OrderedReady") != "Parallel"
        strategy = spec.get("updateStrategy") or {}
        created = 0
        for ordinal in range(replicas):
            if created == BURST_PODS:
                return True  # the rest at the next sync
            pod = pods.get(ordinal)
            if pod is not None and (pod.get("status") or {}).get("phase") == "Failed" and not deleting(pod):
                self._delete_pod(sts, pod)
                pod = None
                if ordered:
                    return False
            if pod is None:
                revision = update if update_revision_for(ordinal, strategy) else current
                if not self._create_pod(sts, ordinal, revision):
                    return True
                if ordered:
                    return False
                created += 1
                continue
            if ordered and (deleting(pod) or not running_and_ready(pod)):
                return False
        condemned = sorted((o for o in pods if o >= replicas), reverse=True)
        for ordinal in condemned:
            pod = pods[ordinal]
            if deleting(pod):
                if ordered:
                    return False
                continue
            self._condemn(sts, pod, ordinal)
            if ordered:
                return False
        if strategy.get("type", "RollingUpdate") == "RollingUpdate":
            self._roll(sts, pods, name_of(update), partition_of(strategy), replicas)
        return False

    def _roll(self, sts: Obj, pods: dict[int, Obj], update: str, partition: int, replicas: int) -> None:
        for ordinal in rolling_targets([o for o in pods if o < replicas], partition):
            pod = pods[ordinal]
            if pod["metadata"].get("labels", {}).get(REVISION_LABEL) != update and not deleting(pod):
                self._delete_pod(sts, pod)
                return
            if not running_and_ready(pod):
                return

    def _create_pod(self, sts: Obj, ordinal: int, revision: Obj) -> bool:
        name = f"{name_of(sts)}-{ordinal}"
        spec = sts.get("spec") or {}
        template = revision_template(revision)
        labels = {
            **((template.get("metadata") or {}).get("labels") or {}),
            REVISION_LABEL: name_of(revision),
            POD_NAME_LABEL: name,
            POD_INDEX_LABEL: str(ordinal),
        }
        pod = from_template(sts, "StatefulSet", template, "Pod", name=name, labels=labels)
        pod_spec = pod["spec"]
        pod_spec["hostname"] = name
        if spec.get("serviceName"):
            pod_spec["subdomain"] = spec["serviceName"]
        claims = spec.get("volumeClaimTemplates") or []
        if claims:
            pod_spec["volumes"] = claim_volumes(pod_spec.get("volumes") or [], claims, name_of(sts), ordinal)
            for claim in claims:
                if not self._ensure_claim(sts, claim, ordinal, name):
                    return False
        where = f"Pod {name} in StatefulSet {name_of(sts)}"
        return self._create(sts, pod, f"create {where}", f"create {where} successful")

    def _ensure_claim(self, sts: Obj, template: Obj, ordinal: int, pod_name: str) -> bool:
        name = claim_name(template["metadata"]["name"], name_of(sts), ordinal)
        if self.api.store.get(key("PersistentVolumeClaim"), ns_of(sts), name) is not None:
            return True
        spec = sts.get("spec") or {}
        meta = copy.deepcopy(template.get("metadata") or {})
        selector_labels = (spec.get("selector") or {}).get("matchLabels") or {}
        meta |= {"name": name, "labels": {**(meta.get("labels") or {}), **selector_labels}}
        meta.pop("creationTimestamp", None)
        policy = spec.get("persistentVolumeClaimRetentionPolicy") or {}
        if policy.get("whenDeleted") == "Delete":
            meta["ownerReferences"] = [_claim_owner(sts, "StatefulSet", "apps/v1")]
        body = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": meta,
            "spec": copy.deepcopy(template.get("spec") or {}),
        }
        failed = f"create Claim {name} for Pod {pod_name} in StatefulSet {name_of(sts)}"
        return self._create(
            sts, body, failed, f"create Claim {name} Pod {pod_name} in StatefulSet {name_of(sts)} success"
        )

    def _create(self, sts: Obj, body: Obj, failed: str, created: str) -> bool:
        """Create a pod or claim of the set, recording `created`, or `failed` with the API's reason when
        it refuses; one that is there already (409) counts as created, with no Event."""
        try:
            self.api.create(rt(body["kind"]), ns_of(sts), body, self.writer.options)
        except status_errors.StatusError as exc:
            if exc.code == 409:
                return True
            self.event(
                sts, "Warning", "FailedCreate", f"{failed} failed error: {exc.body.get('message', '')}"
            )
            return False
        self.event(sts, "Normal", "SuccessfulCreate", created)
        return True

    def _condemn(self, sts: Obj, pod: Obj, ordinal: int) -> None:
        """Remove a pod beyond `replicas`; under `whenScaled: Delete` its claims go with it (the pod
        becomes their only owner, so that the set, if it owns them too, does not keep them)."""
        spec = sts.get("spec") or {}
        if (spec.get("persistentVolumeClaimRetentionPolicy") or {}).get("whenScaled") == "Delete":
            for template in spec.get("volumeClaimTemplates") or []:
                name = claim_name(template["metadata"]["name"], name_of(sts), ordinal)
                claim = self.api.store.get(key("PersistentVolumeClaim"), ns_of(sts), name)
                if claim is None:
                    continue
                refs = claim["metadata"].get("ownerReferences") or []
                if any(r.get("uid") == uid_of(pod) for r in refs):
                    continue
                updated = copy.deepcopy(claim)
                kept = [r for r in refs if r.get("uid") != uid_of(sts)]
                updated["metadata"]["ownerReferences"] = [*kept, _claim_owner(pod, "Pod", "v1")]
                self.writer.update("PersistentVolumeClaim", updated)
        self._delete_pod(sts, pod)

    def _delete_pod(self, sts: Obj, pod: Obj) -> None:
        self.writer.delete("Pod", pod)
        message = f"delete Pod {name_of(pod)} in StatefulSet {name_of(sts)} successful"
        self.event(sts, "Normal", "SuccessfulDelete", message)

    # --- status -------------------------------------------------------------------------------------

    def _write_status(self, sts: Obj, current: Obj, update: Obj, now: float) -> float | None:
        """Counts over the pods as they stand after this pass's writes (read back from the store)."""
        pods = list(self._pods(sts).values())
        spec = sts.get("spec") or {}
        min_ready = self.scale(float(spec.get("minReadySeconds", 0)))
        created = [p for p in pods if (p.get("status") or {}).get("phase")]
        ready = [p for p in created if running_and_ready(p)]
        ready_at = [t + min_ready for t in (ready_since(p) for p in ready) if t is not None]
        live = [p for p in created if not deleting(p)]
        revision_of = [p["metadata"].get("labels", {}).get(REVISION_LABEL) for p in live]
        status: Obj = {
            "observedGeneration": sts["metadata"].get("generation", 1),
            "replicas": len(created),
            "readyReplicas": len(ready),
            "currentReplicas": revision_of.count(name_of(current)),
            "updatedReplicas": revision_of.count(name_of(update)),
            "currentRevision": name_of(current),
            "updateRevision": name_of(update),
            "collisionCount": int((sts.get("status") or {}).get("collisionCount", 0)),
            "availableReplicas": sum(1 for t in ready_at if t <= now),
        }
        rolling = (spec.get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate"
        if rolling and status["updatedReplicas"] == status["replicas"] == status["readyReplicas"]:
            # the rollout is complete: the update revision becomes the current one
            status["currentRevision"] = status["updateRevision"]
            status["currentReplicas"] = status["updatedReplicas"]
        status = {
            k: v
            for k, v in status.items()
            if v not in (0, "") or k in ("replicas", "availableReplicas", "collisionCount")
        }
        self.writer.write_status("StatefulSet", sts, status)
        pending = [t for t in ready_at if t > now]
        return min(pending) if pending else None
