"""PodDisruptionBudgets: their status, and whether an eviction may take a pod.

The status is the disruption controller's (`pkg/controller/disruption`): the pods the selector matches
in the namespace; `currentHealthy` those Ready and not being deleted; `expectedPods` and
`desiredHealthy` from an integer `minAvailable` (the matched pods, and the number itself) or else from
the scale of the pods' controllers (a ReplicaSet's — its Deployment's when it has one —, a
StatefulSet's or a ReplicationController's `spec.replicas`) with `maxUnavailable` or a percentage
(rounded up); `disruptionsAllowed` = healthy − desired (0 when negative or nothing is expected) and the
`DisruptionAllowed` condition (`SufficientPods`/`InsufficientPods`). `Api` writes it whenever a budget
or the pods and controllers of a namespace with budgets change (`accounting.refresh_budgets`).

The Eviction subresource (`pods/<name>/eviction`, what `kubectl drain` posts) answers as the
apiserver's: a pod not Running, or being deleted, goes at once; a pod matched by no budget too, and an
unready one when its budget is met (or says `unhealthyPodEvictionPolicy: AlwaysAllow`); otherwise
the eviction takes one allowed disruption or is refused with 429 TooManyRequests ("Cannot evict
pod as it would violate the pod's disruption budget.", cause `DisruptionBudget` "The disruption
budget w needs 2 healthy pods and has 2 currently"), which kubectl drain retries every 5 s.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from planner.slim.admission import Admission
from planner.slim.meta import now_rfc3339
from planner.slim.selectors import selector_from_label_selector
from planner.slim.status_errors import Cause, StatusError, Target, status_body

Obj = dict[str, Any]
Finder = Callable[[str, str, str], Obj | None]  # (kind, namespace, name)
BUDGET_KEY = "policy/poddisruptionbudgets"
SCALED = {"ReplicaSet", "StatefulSet", "ReplicationController"}
WATCHED_KEYS = (
    "/pods",
    "apps/replicasets",
    "apps/deployments",
    "apps/statefulsets",
    "/replicationcontrollers",
)


def selects(budget: Obj, pod: Obj) -> bool:
    selector = (budget.get("spec") or {}).get("selector")
    if selector is None:
        return False
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return selector_from_label_selector(selector).matches(labels)


def is_healthy(pod: Obj) -> bool:
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _scale_of(pod: Obj, find: Finder) -> tuple[str, int] | None:
    """(controller uid, replicas) of the pod's scalable controller, if it has one."""
    namespace = str(pod["metadata"].get("namespace", ""))
    owner = next((o for o in pod["metadata"].get("ownerReferences") or [] if o.get("controller")), None)
    if owner is None or owner.get("kind") not in SCALED:
        return None
    controller = find(str(owner["kind"]), namespace, str(owner.get("name", "")))
    if controller is None:
        return None
    if owner["kind"] == "ReplicaSet":
        parent = next(
            (o for o in controller["metadata"].get("ownerReferences") or [] if o.get("controller")), None
        )
        if parent is not None and parent.get("kind") == "Deployment":
            deployment = find("Deployment", namespace, str(parent.get("name", "")))
            if deployment is not None:
                controller = deployment
    return str(controller["metadata"].get("uid")), int((controller.get("spec") or {}).get("replicas") or 0)


def _scaled(value: Any, total: int) -> int:
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * total / 100)
    return int(value)


def counts(budget: Obj, pods: list[Obj], find: Finder) -> tuple[int, int, int]:
    """(expected, desired healthy, current healthy) for a budget over the namespace's pods."""
    spec = budget.get("spec") or {}
    matched = [p for p in pods if selects(budget, p)]
    healthy = sum(1 for p in matched if is_healthy(p))
    minimum = spec.get("minAvailable")
    if minimum is not None and not isinstance(minimum, str):
        return len(matched), int(minimum), healthy
    scales = dict(s for s in (_scale_of(p, find) for p in matched) if s is not None)
    expected = sum(scales.values())
    if minimum is not None:
        return expected, _scaled(minimum, expected), healthy
    unavailable = spec.get("maxUnavailable")
    desired = expected - _scaled(unavailable, expected) if unavailable is not None else expected
    return expected, max(0, desired), healthy


def status_of(budget: Obj, pods: list[Obj], find: Finder, now: str) -> Obj:
    expected, desired, healthy = counts(budget, pods, find)
    allowed = healthy - desired if expected > 0 and healthy > desired else 0
    generation = int((budget.get("metadata") or {}).get("generation") or 1)
    old = budget.get("status") or {}
    reason = "SufficientPods" if allowed > 0 else "InsufficientPods"
    condition = {
        "type": "DisruptionAllowed",
        "status": "True" if allowed > 0 else "False",
        "observedGeneration": generation,
        "lastTransitionTime": now,
        "reason": reason,
        "message": "",
    }
    previous = next((c for c in old.get("conditions") or [] if c.get("type") == "DisruptionAllowed"), None)
    if previous is not None and previous.get("status") == condition["status"]:
        condition["lastTransitionTime"] = previous.get("lastTransitionTime", now)
    return {
        "observedGeneration": generation,
        "disruptionsAllowed": allowed,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "conditions": [condition],
    }


def admit_budget(cluster: Admission, budget: Obj, old: Obj | None, target: Target) -> list[Cause]:
    """A written budget's status is computed at once (the disruption controller's next pass)."""
    pods = cluster.list_in("/pods", str(budget["metadata"].get("namespace", "")))
    budget["status"] = status_of(budget, pods, cluster.find, now_rfc3339())
    return []


# --- eviction ----------------------------------------------------------------------------------------------


def evictable_at_once(pod: Obj) -> bool:
    """A pod that is not running, or already going, is evicted whatever the budgets say."""
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed", "Pending") or bool(pod["metadata"].get("deletionTimestamp"))


def too_many_requests(message: str, causes: list[Obj]) -> StatusError:
    body = status_body(429, "TooManyRequests", message, {"causes": causes})
    return StatusError(429, body)


def check_eviction(pod: Obj, budgets: list[Obj]) -> Obj | None:
    """The budget an eviction of `pod` takes a disruption from (None: no budget covers it); raises
    the apiserver's 429 or 500 when the eviction may not happen."""
    covering = [b for b in budgets if selects(b, pod)]
    if not covering:
        return None
    if len(covering) > 1:
        message = (
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
        )
        raise StatusError(500, status_body(500, "InternalError", message, None))
    budget = covering[0]
    status = budget.get("status") or {}
    name = budget["metadata"]["name"]
    if int(status.get("observedGeneration") or 0) < int(budget["metadata"].get("generation") or 0):
        cause = {
            "reason": "DisruptionBudget",
            "message": f"The disruption budget {name} is still being processed by the server.",
        }
        raise too_many_requests("Cannot evict pod as it would violate the pod's disruption budget.", [cause])
    if not is_healthy(pod):
        always = (budget.get("spec") or {}).get("unhealthyPodEvictionPolicy") == "AlwaysAllow"
        if always or int(status.get("currentHealthy") or 0) >= int(status.get("desiredHealthy") or 0):
            return None  # an unready pod goes without taking a disruption (IfHealthyBudget: if the budget is met)
    if int(status.get("disruptionsAllowed") or 0) <= 0:
        detail = (
            f"The disruption budget {name} needs {int(status.get('desiredHealthy') or 0)} healthy pods "
            f"and has {int(status.get('currentHealthy') or 0)} currently"
        )
        cause = {"reason": "DisruptionBudget", "message": detail}
        raise too_many_requests("Cannot evict pod as it would violate the pod's disruption budget.", [cause])
    return budget


def after_eviction(budget: Obj, pod_name: str, now: str) -> Obj:
    """The budget's status once an eviction took one of its disruptions."""
    status = dict(budget.get("status") or {})
    status["disruptionsAllowed"] = int(status.get("disruptionsAllowed") or 0) - 1
    status["disruptedPods"] = {**(status.get("disruptedPods") or {}), pod_name: now}
    return {**budget, "status": status}
