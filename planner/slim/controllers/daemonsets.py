"""DaemonSet → one Pod per eligible node, as kube-controller-manager's daemonset controller.

A node is eligible when the pod template's node selector and required node affinity match it and the
template, with the tolerations the controller adds to every daemon pod (not-ready, unreachable,
disk/memory/pid pressure, unschedulable; network-unavailable for host-network pods), tolerates its
NoSchedule and NoExecute taints. Pods `<ds>-<5 chars>` carry `controller-revision-hash` (the
revision's hash) and `pod-template-generation`, and are pinned to their node by a required
`metadata.name` node affinity, left to the scheduler to bind, as the real controller does. Extra
pods on a node and pods on ineligible nodes are deleted, failed ones replaced. RollingUpdate
replaces old pods with at most `maxUnavailable` unavailable at once, or, with `maxSurge`, starts the
new pod beside the old one and deletes the old one once the new one is available; OnDelete waits
for old pods to be deleted.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from planner.slim.api import Api
from planner.slim.controllers.base import (
    KindController,
    deleting,
    from_template,
    key,
    keys_of,
    name_of,
    ns_of,
)
from planner.slim.controllers.deployments import ready_since
from planner.slim.controllers.revisions import (
    REVISION_LABEL,
    revision_hash,
    revision_template,
    sync_revisions,
    truncate_history,
)
from planner.slim.defaults import TEMPLATE_GENERATION
from planner.slim.reconcilers import RETRY_SECONDS, Key, Scale
from planner.slim.scheduling import node_fits, untolerated_taint
from planner.slim.store import WatchEvent

Obj = dict[str, Any]
GENERATION_LABEL = "pod-template-generation"
COMPONENT = "daemonset-controller"


def template_generation(ds: Obj) -> str:
    """What the real controller labels pods with: the strategy's templateGeneration."""
    return str(((ds["metadata"].get("annotations") or {}).get(TEMPLATE_GENERATION)) or 1)


DAEMON_TOLERATIONS = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)
HOST_NETWORK_TOLERATION = ("node.kubernetes.io/network-unavailable", "NoSchedule")


def with_daemon_tolerations(pod_spec: Obj) -> Obj:
    """The pod spec with the tolerations the controller adds (an existing one for the key is kept)."""
    tolerations = list(pod_spec.get("tolerations") or [])
    wanted = list(DAEMON_TOLERATIONS) + ([HOST_NETWORK_TOLERATION] if pod_spec.get("hostNetwork") else [])
    for taint_key, effect in wanted:
        if not any(t.get("key") == taint_key and t.get("effect") == effect for t in tolerations):
            tolerations.append({"key": taint_key, "operator": "Exists", "effect": effect})
    return {**pod_spec, "tolerations": tolerations}


def pinned_to(pod_spec: Obj, node: str) -> Obj:
    """The pod spec with its required node affinity replaced by one naming `node`."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    affinity = copy.deepcopy(pod_spec.get("affinity") or {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [term]}
    return {**pod_spec, "affinity": affinity}


def target_node(pod: Obj) -> str | None:
    """The node a daemon pod is for: its nodeName once bound, else the one its affinity names."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in required.get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("operator") == "In" and field.get("values"):
                return str(field["values"][0])
    return None


def should_run(template: Obj, node: Obj) -> bool:
    pod = {"spec": with_daemon_tolerations(template.get("spec") or {})}
    return node_fits(pod, node) and untolerated_taint(pod, node) is None


def scaled_budget(value: Any, total: int) -> int:
    """maxUnavailable/maxSurge as a number of nodes (percentages of the desired count, rounded up)."""
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * total / 100)
    return int(value or 0)


def _created(pod: Obj) -> str:
    return str(pod["metadata"].get("creationTimestamp", ""))


class DaemonSetController(KindController):
    kind = "DaemonSet"
    recorder = COMPONENT
    controls = ("Pod", "ControllerRevision")

    def __init__(self, api: Api, scale: Scale) -> None:
        super().__init__(api, scale)
        self.watches = (*self.watches, key("Node"))

    def observe(self, event: WatchEvent) -> list[Key]:
        if event.resource == key("Node"):
            return self._on_node_change(event)
        return super().observe(event)

    def _on_node_change(self, event: WatchEvent) -> list[Key]:
        """A node added, removed or relabelled may change where every DaemonSet runs; a lease-like
        status update of an existing node does not."""
        old, new = event.old, event.obj
        if old is not None and event.type != "DELETED":
            same = old["metadata"].get("labels") == new["metadata"].get("labels") and (
                old.get("spec") or {}
            ).get("taints") == (new.get("spec") or {}).get("taints")
            if same:
                return []
        return keys_of(self.api.store, key("DaemonSet"))

    def reconcile(self, ds: Obj, now: float) -> float | None:
        update, history = sync_revisions(
            self.writer,
            ds,
            "DaemonSet",
            self.controlled.of("ControllerRevision", ds),
            hash_label=REVISION_LABEL,
        )
        if update is None:
            return now + RETRY_SECONDS
        digest = revision_hash(update)
        template = (ds.get("spec") or {}).get("template") or {}
        nodes = {name_of(n): n for n in self.api.store.list(key("Node"), None)}
        eligible = {name for name, node in nodes.items() if should_run(template, node)}
        by_node = self._pods_by_node(ds)
        self._manage(ds, update, digest, eligible, by_node, now)
        by_node = self._pods_by_node(ds)
        due = self._write_status(ds, digest, eligible, by_node, now)
        live = {
            str(p["metadata"].get("labels", {}).get(REVISION_LABEL)) for ps in by_node.values() for p in ps
        }
        truncate_history(
            self.writer, ds, history, {name_of(r) for r in history if revision_hash(r) in live | {digest}}
        )
        return due

    def _pods_by_node(self, ds: Obj) -> dict[str, list[Obj]]:
        by_node: dict[str, list[Obj]] = {}
        for pod in self.controlled.of("Pod", ds):
            node = target_node(pod)
            if node is not None:
                by_node.setdefault(node, []).append(pod)
        for pods in by_node.values():
            pods.sort(key=_created)
        return by_node

    # --- pods ---------------------------------------------------------------------------------------

    def _manage(
        self, ds: Obj, update: Obj, digest: str, eligible: set[str], by_node: dict[str, list[Obj]], now: float
    ) -> None:
        spec = ds.get("spec") or {}
        strategy = spec.get("updateStrategy") or {}
        rolling = strategy.get("type", "RollingUpdate") == "RollingUpdate"
        surge = (
            scaled_budget((strategy.get("rollingUpdate") or {}).get("maxSurge"), len(eligible))
            if rolling
            else 0
        )
        for node in sorted(set(by_node) - eligible):
            for pod in by_node[node]:
                if not deleting(pod):
                    self._delete(ds, pod)
        for node in sorted(eligible):
            pods = [p for p in by_node.get(node, []) if not deleting(p)]
            for pod in [p for p in pods if (p.get("status") or {}).get("phase") == "Failed"]:
                self._delete(ds, pod)
                pods.remove(pod)
            if not pods:
                self._create(ds, update, digest, node)
                continue
            self._keep_one(ds, pods, digest, surge > 0, now)
        if rolling:
            self._roll(ds, update, digest, eligible, by_node, now)

    def _keep_one(self, ds: Obj, pods: list[Obj], digest: str, surging: bool, now: float) -> None:
        """Delete all but the oldest pod on a node; while surging, an old pod and a new one may share
        it until the new one is available."""
        if len(pods) <= 1:
            return
        keep = [pods[0]]
        if surging:
            new = [p for p in pods if _hash_of(p) == digest]
            old = [p for p in pods if _hash_of(p) != digest]
            keep = new[:1] if new and self._available(ds, new[0], now) else new[:1] + old[:1]
        for pod in pods:
            if pod not in keep:
                self._delete(ds, pod)

    def _roll(
        self, ds: Obj, update: Obj, digest: str, eligible: set[str], by_node: dict[str, list[Obj]], now: float
    ) -> None:
        rolling = ((ds.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}
        desired = len(eligible)
        max_surge = scaled_budget(rolling.get("maxSurge"), desired)
        max_unavailable = scaled_budget(rolling.get("maxUnavailable", 1), desired)
        if max_surge == 0 and max_unavailable == 0:
            max_unavailable = 1
        unavailable = 0
        old_available: list[Obj] = []
        surging_nodes = 0
        surge_candidates: list[str] = []
        for node in sorted(eligible):
            pods = [p for p in by_node.get(node, []) if not deleting(p)]
            new = [p for p in pods if _hash_of(p) == digest]
            old = [p for p in pods if _hash_of(p) != digest]
            if not pods:
                unavailable += 1
                continue
            if new and old:
                surging_nodes += 1
                continue
            if new:
                unavailable += 0 if self._available(ds, new[0], now) else 1
                continue
            if not self._available(ds, old[0], now):
                self._delete(ds, old[0])  # an unavailable old pod costs nothing to replace
                unavailable += 1
            elif max_surge:
                surge_candidates.append(node)
            else:
                old_available.append(old[0])
        if max_surge:
            for node in surge_candidates[: max(max_surge - surging_nodes, 0)]:
                self._create(ds, update, digest, node)
            return
        for pod in old_available[: max(max_unavailable - unavailable, 0)]:
            self._delete(ds, pod)

    def _available(self, ds: Obj, pod: Obj, now: float) -> bool:
        since = ready_since(pod)
        min_ready = self.scale(float((ds.get("spec") or {}).get("minReadySeconds", 0)))
        return since is not None and since + min_ready <= now

    def _create(self, ds: Obj, update: Obj, digest: str, node: str) -> None:
        template = revision_template(update)
        labels = {
            **((template.get("metadata") or {}).get("labels") or {}),
            REVISION_LABEL: digest,
            GENERATION_LABEL: template_generation(ds),
        }
        pod = from_template(ds, "DaemonSet", template, "Pod", generateName=f"{name_of(ds)}-", labels=labels)
        pod["spec"] = pinned_to(with_daemon_tolerations(pod["spec"]), node)
        created = self.writer.create("Pod", ns_of(ds), pod)
        if created is not None:
            self.event(ds, "Normal", "SuccessfulCreate", f"Created pod: {name_of(created)}")

    def _delete(self, ds: Obj, pod: Obj) -> None:
        self.writer.delete("Pod", pod)
        self.event(ds, "Normal", "SuccessfulDelete", f"Deleted pod: {name_of(pod)}")

    # --- status -------------------------------------------------------------------------------------

    def _write_status(
        self, ds: Obj, digest: str, eligible: set[str], by_node: dict[str, list[Obj]], now: float
    ) -> float | None:
        scheduled = ready = available = updated = 0
        waiting: list[float] = []
        min_ready = self.scale(float((ds.get("spec") or {}).get("minReadySeconds", 0)))
        generation = template_generation(ds)
        for node in eligible:
            pods = by_node.get(node) or []
            if not pods:
                continue
            scheduled += 1
            pod = pods[0]
            since = ready_since(pod)
            if since is not None:
                ready += 1
                if since + min_ready <= now:
                    available += 1
                else:
                    waiting.append(since + min_ready)
            labels = pod["metadata"].get("labels") or {}
            if labels.get(REVISION_LABEL) == digest or labels.get(GENERATION_LABEL) == generation:
                updated += 1
        status: Obj = {
            "currentNumberScheduled": scheduled,
            "numberMisscheduled": sum(1 for node, pods in by_node.items() if node not in eligible and pods),
            "desiredNumberScheduled": len(eligible),
            "numberReady": ready,
            "observedGeneration": ds["metadata"].get("generation", 1),
            "updatedNumberScheduled": updated,
            "numberAvailable": available,
            "numberUnavailable": len(eligible) - available,
        }
        if (ds.get("status") or {}).get("collisionCount") is not None:
            status["collisionCount"] = ds["status"]["collisionCount"]
        optional = ("updatedNumberScheduled", "numberAvailable", "numberUnavailable")
        status = {k: v for k, v in status.items() if k not in optional or v}
        self.writer.write_status("DaemonSet", ds, status)
        return min(waiting) if waiting else None


def _hash_of(pod: Obj) -> str:
    return str((pod["metadata"].get("labels") or {}).get(REVISION_LABEL, ""))
