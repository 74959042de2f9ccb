"""Deployment → ReplicaSet → Pods, as kube-controller-manager's deployment and replicaset controllers.

The deployment controller owns one ReplicaSet per distinct pod template, named
`<deployment>-<pod-template-hash>`, and rolls from the old ones to the new one honouring
maxSurge/maxUnavailable (or all at once under Recreate); it writes the revision annotations — a
ReplicaSet that becomes the new one again (`kubectl rollout undo`) gets the next revision and keeps its
earlier ones in `revision-history` — the status counts and the Available/Progressing/ReplicaFailure conditions, including
`ProgressDeadlineExceeded` once `progressDeadlineSeconds` (scaled) pass without progress. The
replicaset controller creates and deletes Pods `<rs>-<5 chars>` to match `spec.replicas` and
reports replicas, ready and available counts.

The hash is FNV-32a over the template's canonical JSON (the real controller hashes a Go dump of the
struct, so names differ from a real cluster's but are equally stable), encoded with the apiserver's
"safe" alphabet.
"""

from __future__ import annotations

import copy
import json
import math
import time
from typing import Any

from planner.slim.controllers.base import (
    BURST_PODS,
    KindController,
    deleting,
    from_template,
    key,
    name_of,
    ns_of,
    owner_reference,
    uid_of,
)
from planner.slim.meta import epoch_of, rfc3339
from planner.slim.reconcilers import RETRY_SECONDS

Obj = dict[str, Any]
HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
MAX_REVISION_HISTORY_CHARS = 2000  # the controller's cap on revision-history
DESIRED = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def template_hash(template: Obj, collisions: int = 0) -> str:
    text = json.dumps(template, sort_keys=True, separators=(",", ":")) + (
        str(collisions) if collisions else ""
    )
    value = 0x811C9DC5
    for byte in text.encode():
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(SAFE_ALPHABET[ord(c) % len(SAFE_ALPHABET)] for c in str(value))


def _without_hash(template: Obj) -> Obj:
    """The template with its `pod-template-hash` label dropped; shares every part it does not change."""
    metadata = template.get("metadata") or {}
    labels = metadata.get("labels") or {}
    if HASH_LABEL not in labels:
        return template
    unhashed = {k: v for k, v in labels.items() if k != HASH_LABEL}
    return {**template, "metadata": {**metadata, "labels": unhashed}}


def resolve_fraction(value: Any, total: int, *, round_up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        exact = int(value[:-1]) * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return int(value or 0)


def surge_and_unavailable(deployment: Obj) -> tuple[int, int]:
    spec = deployment.get("spec") or {}
    replicas = int(spec.get("replicas", 1))
    strategy = spec.get("strategy") or {}
    if strategy.get("type") == "Recreate":
        return 0, replicas
    rolling = strategy.get("rollingUpdate") or {}
    surge = resolve_fraction(rolling.get("maxSurge", "25%"), replicas, round_up=True)
    unavailable = resolve_fraction(rolling.get("maxUnavailable", "25%"), replicas, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def _replicas(obj: Obj) -> int:
    return int((obj.get("spec") or {}).get("replicas", 0))


def _status_count(obj: Obj, field: str) -> int:
    return int((obj.get("status") or {}).get(field, 0))


def pod_ready(pod: Obj) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def ready_since(pod: Obj) -> float | None:
    """When a ready pod became Ready (its condition's transition time), else None."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("status") == "True":
            return epoch_of(condition.get("lastTransitionTime")) or 0.0
    return None


def pod_active(pod: Obj) -> bool:
    return not deleting(pod) and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


class ReplicaSetController(KindController):
    kind = "ReplicaSet"
    controls = ("Pod",)
    recorder = "replicaset-controller"

    def reconcile(self, rs: Obj, now: float) -> float | None:
        """Create or delete pods to match spec.replicas; when to look again (a pod becomes available,
        or a failed creation is retried)."""
        pods = self.controlled.of("Pod", rs)
        active = [p for p in pods if pod_active(p)]
        wanted = _replicas(rs)
        failure: str | None = None
        if len(active) < wanted and not self._namespace_terminating(ns_of(rs)):
            for _ in range(min(wanted - len(active), BURST_PODS)):
                failure = self._create_pod(rs) or failure
        elif len(active) > wanted:
            for pod in sorted(active, key=_deletion_rank)[: min(len(active) - wanted, BURST_PODS)]:
                self.writer.delete("Pod", pod)
                self.event(rs, "Normal", "SuccessfulDelete", f"Deleted pod: {name_of(pod)}")
        more = abs(wanted - len(active)) > BURST_PODS  # the rest at the next sync
        min_ready = self.scale(float((rs.get("spec") or {}).get("minReadySeconds", 0)))
        available_at = [t + min_ready for t in (ready_since(p) for p in active) if t is not None]
        available = sum(1 for t in available_at if t <= now)
        self._write_status(rs, active, failure, available)
        due = [t for t in available_at if t > now] + ([now + RETRY_SECONDS] if failure or more else [])
        return min(due) if due else None

    def _namespace_terminating(self, namespace: str) -> bool:
        found = self.api.store.get(key("Namespace"), "", namespace)
        return found is None or deleting(found)

    def _create_pod(self, rs: Obj) -> str | None:
        template = (rs.get("spec") or {}).get("template") or {}
        pod = from_template(rs, "ReplicaSet", template, "Pod", generateName=f"{name_of(rs)}-")
        return self.create_pod(rs, pod)

    def _write_status(self, rs: Obj, active: list[Obj], failure: str | None, available: int) -> None:
        ready = sum(1 for p in active if pod_ready(p))
        status: Obj = {
            "replicas": len(active),
            "fullyLabeledReplicas": len(active),
            "readyReplicas": ready,
            "availableReplicas": available,
            "observedGeneration": rs["metadata"].get("generation", 1),
        }
        old_conditions = (rs.get("status") or {}).get("conditions") or []
        if failure:
            kept = next((c for c in old_conditions if c.get("type") == "ReplicaFailure"), None)
            status["conditions"] = [
                {
                    "type": "ReplicaFailure",
                    "status": "True",
                    "lastTransitionTime": (kept or {}).get("lastTransitionTime") or rfc3339(time.time()),
                    "reason": "FailedCreate",
                    "message": failure,
                }
            ]
        elif old_conditions and len(active) >= _replicas(rs):
            status["conditions"] = []
        else:
            status["conditions"] = old_conditions
        status = {k: v for k, v in status.items() if v not in (0, [], None) or k in ("replicas",)}
        self.writer.write_status("ReplicaSet", rs, status)


def _revision(rs: Obj) -> int:
    try:
        return int((rs["metadata"].get("annotations") or {}).get(REVISION, "0"))
    except ValueError:
        return 0


def max_revision(sets: list[Obj]) -> int:
    return max((_revision(rs) for rs in sets), default=0)


def _history(history: str, revision: str) -> str:
    """`revision-history` with `revision` appended, its oldest entries dropped to stay under the cap."""
    entries = [entry for entry in history.split(",") if entry]
    while entries and len(",".join([*entries, revision])) > MAX_REVISION_HISTORY_CHARS:
        entries.pop(0)
    return ",".join([*entries, revision])


def _deletion_rank(pod: Obj) -> tuple[int, int, str]:
    """Unscheduled before scheduled, not ready before ready, newest first (as the controller ranks)."""
    scheduled = 1 if (pod.get("spec") or {}).get("nodeName") else 0
    created = str(pod["metadata"].get("creationTimestamp", ""))
    return scheduled, 1 if pod_ready(pod) else 0, "".join(chr(255 - ord(c)) for c in created)


class DeploymentController(KindController):
    kind = "Deployment"
    controls = ("ReplicaSet",)
    recorder = "deployment-controller"

    # --- one deployment ------------------------------------------------------------------------------

    def reconcile(self, deployment: Obj, now: float) -> float | None:
        sets = self.controlled.of("ReplicaSet", deployment)
        template = (deployment.get("spec") or {}).get("template") or {}
        new = next(
            (
                rs
                for rs in sets
                if _without_hash((rs.get("spec") or {}).get("template") or {}) == _without_hash(template)
            ),
            None,
        )
        old = [rs for rs in sets if rs is not new]
        new = self._create_replica_set(deployment, old) if new is None else self._renumber(new, old)
        if new is None:
            return None
        if not (deployment.get("spec") or {}).get("paused"):
            self._roll(deployment, new, old)
            self._prune_history(deployment, old)
        return self._write_status(deployment, new, old, now)

    def _create_replica_set(self, deployment: Obj, old: list[Obj]) -> Obj | None:
        spec = deployment.get("spec") or {}
        collisions = int((deployment.get("status") or {}).get("collisionCount", 0))
        template = copy.deepcopy(_without_hash(spec.get("template") or {}))
        digest = template_hash(template, collisions)
        template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = digest
        selector = copy.deepcopy(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})[HASH_LABEL] = digest
        labels = dict(template["metadata"]["labels"])
        revision = 1 + max_revision(old)
        surge, _ = surge_and_unavailable(deployment)
        live_old = sum(_replicas(rs) for rs in old)
        recreate = (spec.get("strategy") or {}).get("type") == "Recreate"
        if not live_old:
            start = _replicas(deployment)
        else:
            start = (
                0
                if recreate
                else min(_replicas(deployment), max(_replicas(deployment) + surge - live_old, 0))
            )
        body: Obj = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{name_of(deployment)}-{digest}",
                "labels": labels,
                "annotations": {
                    DESIRED: str(_replicas(deployment)),
                    MAX_REPLICAS: str(_replicas(deployment) + surge),
                    REVISION: str(revision),
                },
                "ownerReferences": [owner_reference(deployment, "Deployment", "apps/v1")],
            },
            "spec": {"replicas": start, "selector": selector, "template": template},
        }
        if spec.get("minReadySeconds"):
            body["spec"]["minReadySeconds"] = spec["minReadySeconds"]
        created = self.writer.create("ReplicaSet", ns_of(deployment), body)
        if created is not None:
            self.event(
                deployment,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled up replica set {name_of(created)} to {start}",
            )
        return created

    def _renumber(self, new: Obj, old: list[Obj]) -> Obj | None:
        """An existing ReplicaSet that is the new one again (a rollback) takes the next revision; the one
        it had goes to the end of its revision history."""
        annotations = dict(new["metadata"].get("annotations") or {})
        current = _revision(new)
        wanted = max_revision(old) + 1
        if current >= wanted:
            return new
        annotations[REVISION] = str(wanted)
        if REVISION in (new["metadata"].get("annotations") or {}):
            annotations[REVISION_HISTORY] = _history(annotations.get(REVISION_HISTORY, ""), str(current))
        updated = copy.deepcopy(new)
        updated["metadata"]["annotations"] = annotations
        return self.writer.update("ReplicaSet", updated)

    # --- rolling ------------------------------------------------------------------------------------

    def _roll(self, deployment: Obj, new: Obj, old: list[Obj]) -> None:
        replicas = _replicas(deployment)
        surge, unavailable = surge_and_unavailable(deployment)
        strategy = ((deployment.get("spec") or {}).get("strategy") or {}).get("type", "RollingUpdate")
        live_old = [rs for rs in old if _replicas(rs) > 0]
        if strategy == "Recreate":
            for rs in live_old:
                self._scale(deployment, rs, 0, surge)
            if not any(_status_count(rs, "replicas") for rs in old):
                self._scale(deployment, new, replicas, surge)
            else:
                self._scale(deployment, new, 0, surge)
            return
        if not live_old:
            self._scale(deployment, new, replicas, surge)
            return
        total = _replicas(new) + sum(_replicas(rs) for rs in live_old)
        if _replicas(new) < replicas and total < replicas + surge:
            self._scale(deployment, new, min(replicas, _replicas(new) + replicas + surge - total), surge)
        self._scale_down_old(deployment, new, live_old, replicas - unavailable, surge)

    def _scale_down_old(
        self, deployment: Obj, new: Obj, old: list[Obj], min_available: int, surge: int
    ) -> None:
        all_pods = _replicas(new) + sum(_replicas(rs) for rs in old)
        new_unavailable = _replicas(new) - _status_count(new, "availableReplicas")
        budget = max(all_pods - min_available - new_unavailable, 0)
        targets = {uid_of(rs): _replicas(rs) for rs in old}
        for rs in old:  # first the old pods that are not available anyway
            unhealthy = _replicas(rs) - _status_count(rs, "availableReplicas")
            cut = min(max(unhealthy, 0), budget)
            targets[uid_of(rs)] -= cut
            budget -= cut
        available = _status_count(new, "availableReplicas") + sum(
            _status_count(rs, "availableReplicas") for rs in old
        )
        extra = max(available - min_available, 0)
        for rs in old:
            cut = min(targets[uid_of(rs)], extra)
            targets[uid_of(rs)] -= cut
            extra -= cut
        for rs in old:
            if targets[uid_of(rs)] != _replicas(rs):
                self._scale(deployment, rs, targets[uid_of(rs)], surge)

    def _scale(self, deployment: Obj, rs: Obj, replicas: int, surge: int) -> None:
        annotations = rs["metadata"].get("annotations") or {}
        wanted_annotations = {
            **annotations,
            DESIRED: str(_replicas(deployment)),
            MAX_REPLICAS: str(_replicas(deployment) + surge),
        }
        if _replicas(rs) == replicas and annotations == wanted_annotations:
            return
        updated = copy.deepcopy(rs)
        updated["metadata"]["annotations"] = wanted_annotations
        previous = _replicas(rs)
        updated["spec"]["replicas"] = replicas
        if self.writer.update("ReplicaSet", updated) is not None and previous != replicas:
            direction = "up" if replicas > previous else "down"
            self.event(
                deployment,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled {direction} replica set {name_of(rs)} to {replicas} from {previous}",
            )

    def _prune_history(self, deployment: Obj, old: list[Obj]) -> None:
        limit = int((deployment.get("spec") or {}).get("revisionHistoryLimit", 10))
        idle = [
            rs for rs in old if _replicas(rs) == 0 and _status_count(rs, "replicas") == 0 and not deleting(rs)
        ]
        idle.sort(key=_revision)
        for rs in idle[: max(len(idle) - limit, 0)]:
            self.writer.delete("ReplicaSet", rs)

    # --- status -------------------------------------------------------------------------------------

    def _write_status(self, deployment: Obj, new: Obj, old: list[Obj], now: float) -> float | None:
        sets = [new, *old]
        replicas = _replicas(deployment)
        _, unavailable = surge_and_unavailable(deployment)
        counts = {
            "replicas": sum(_status_count(rs, "replicas") for rs in sets),
            "updatedReplicas": _status_count(new, "replicas"),
            "readyReplicas": sum(_status_count(rs, "readyReplicas") for rs in sets),
            "availableReplicas": sum(_status_count(rs, "availableReplicas") for rs in sets),
        }
        counts["unavailableReplicas"] = max(replicas - counts["availableReplicas"], 0)
        old_status = deployment.get("status") or {}
        progressed = any(old_status.get(k, 0) != v for k, v in counts.items()) or old_status.get(
            "observedGeneration"
        ) != deployment["metadata"].get("generation")
        conditions = {c.get("type"): c for c in old_status.get("conditions") or []}
        stamp = rfc3339(now)
        available = counts["availableReplicas"] >= replicas - unavailable
        conditions["Available"] = _condition(
            conditions.get("Available"),
            "Available",
            available,
            "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
            "Deployment has minimum availability."
            if available
            else "Deployment does not have minimum availability.",
            stamp,
            touch=False,
        )
        due = self._progressing(deployment, new, conditions, counts, progressed=progressed, now=now)
        self._replica_failure(new, conditions, stamp)
        status: Obj = {"observedGeneration": deployment["metadata"].get("generation", 1), **counts}
        if old_status.get("collisionCount"):
            status["collisionCount"] = old_status["collisionCount"]
        status = {k: v for k, v in status.items() if v != 0 or k == "observedGeneration"}
        status["conditions"] = [
            conditions[k] for k in ("Available", "Progressing", "ReplicaFailure") if k in conditions
        ]
        # The revision annotation goes through /status with the status, as the real controller writes it.
        revision = (new["metadata"].get("annotations") or {}).get(REVISION, "1")
        self.writer.write_status("Deployment", deployment, status, annotations={REVISION: revision})
        return due

    def _progressing(
        self,
        deployment: Obj,
        new: Obj,
        conditions: dict[str, Obj],
        counts: dict[str, int],
        *,
        progressed: bool,
        now: float,
    ) -> float | None:
        replicas = _replicas(deployment)
        name = name_of(new)
        stamp = rfc3339(now)
        previous = conditions.get("Progressing")
        complete = (
            counts["updatedReplicas"] == replicas
            and counts["replicas"] == replicas
            and counts["availableReplicas"] >= replicas
            and _status_count(new, "replicas") == replicas
        )
        if complete:
            conditions["Progressing"] = _condition(
                previous,
                "Progressing",
                True,
                "NewReplicaSetAvailable",
                f'ReplicaSet "{name}" has successfully progressed.',
                stamp,
                touch=progressed or (previous or {}).get("reason") != "NewReplicaSetAvailable",
            )
            return None
        deadline_seconds = (deployment.get("spec") or {}).get("progressDeadlineSeconds", 600)
        last_update = epoch_of((previous or {}).get("lastUpdateTime")) if previous else None
        if previous and previous.get("reason") == "ProgressDeadlineExceeded" and not progressed:
            return None
        if progressed or last_update is None:
            first = last_update is None  # the first write after the ReplicaSet was made, as recorded
            conditions["Progressing"] = _condition(
                previous,
                "Progressing",
                True,
                "NewReplicaSetCreated" if first else "ReplicaSetUpdated",
                f'Created new replica set "{name}"' if first else f'ReplicaSet "{name}" is progressing.',
                stamp,
                touch=True,
            )
            return now + self.scale(float(deadline_seconds))
        deadline = last_update + self.scale(float(deadline_seconds))
        if now >= deadline:
            conditions["Progressing"] = _condition(
                previous,
                "Progressing",
                False,
                "ProgressDeadlineExceeded",
                f'ReplicaSet "{name}" has timed out progressing.',
                stamp,
                touch=True,
            )
            self.event(
                deployment,
                "Warning",
                "ProgressDeadlineExceeded",
                f'ReplicaSet "{name}" has timed out progressing.',
            )
            return None
        return deadline

    def _replica_failure(self, new: Obj, conditions: dict[str, Obj], stamp: str) -> None:
        failure = next(
            (
                c
                for c in (new.get("status") or {}).get("conditions") or []
                if c.get("type") == "ReplicaFailure"
            ),
            None,
        )
        if failure is None:
            conditions.pop("ReplicaFailure", None)
            return
        conditions["ReplicaFailure"] = _condition(
            conditions.get("ReplicaFailure"),
            "ReplicaFailure",
            True,
            "FailedCreate",
            str(failure.get("message", "")),
            stamp,
            touch=False,
        )


def _condition(
    old: Obj | None, kind: str, ok: bool, reason: str, message: str, stamp: str, *, touch: bool
) -> Obj:
    status = "True" if ok else "False"
    same = old is not None and old.get("status") == status and old.get("reason") == reason
    if same and not touch and old is not None:
        return old
    transition = old.get("lastTransitionTime") if old is not None and old.get("status") == status else stamp
    update = stamp if (touch or not same) else (old or {}).get("lastUpdateTime", stamp)
    return {
        "type": kind,
        "status": status,
        "lastUpdateTime": update,
        "lastTransitionTime": transition,
        "reason": reason,
        "message": message,
    }
