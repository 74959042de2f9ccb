"""What a write changes in other objects: quota usage, and disruption budgets' status.

The apiserver's quota admission writes a ResourceQuota's `status.used` as it admits a create (as
`kube-apiserver`), and the resourcequota and disruption controllers of kube-controller-manager recount
after deletes and pod changes. Here the API core does all three as part of the write that causes them
(`Api` calls these functions), so the counts are right with or without the simulation. Each first
asks the store whether the namespace has a quota or a budget at all — one dictionary lookup — so
namespaces without them, and an idle cluster, pay nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from planner import quantities
from planner.slim import budgets, quota
from planner.slim.deleting import DeleteOptions
from planner.slim.meta import json_copy, now_rfc3339
from planner.slim.resources import ResourceType, by_kind
from planner.slim.status_errors import Target
from planner.slim.verbhelpers import WriteOptions, resource_key

if TYPE_CHECKING:
    from planner.slim.api import Api

Obj = dict[str, Any]
APISERVER = WriteOptions(field_manager="kube-apiserver")
CONTROLLER = WriteOptions(field_manager="kube-controller-manager")


def charge_quota(api: Api, rt: ResourceType, obj: Obj, target: Target) -> list[Obj]:
    """The quotas a new object changes, with their new usage; 403 when one would be exceeded."""
    namespace = str(obj["metadata"].get("namespace") or "")
    if not rt.namespaced or not namespace:
        return []
    quotas = api.store.list(quota.QUOTA_KEY, namespace)
    if not quotas:
        return []
    requested = quota.usage(rt.group, rt.plural, obj)
    existing = quota.total(rt.group, rt.plural, api.store.list(resource_key(rt), namespace))
    return quota.charge(quotas, requested, existing, target, obj)


def record_quotas(api: Api, changed: list[Obj], options: WriteOptions = APISERVER) -> None:
    rt = by_kind("ResourceQuota")
    for new in changed:
        meta = new["metadata"]
        old = api.store.get(resource_key(rt), str(meta.get("namespace")), str(meta["name"]))
        if old is not None and old.get("status") != new.get("status"):
            api.write_status_of(rt, old, {**old, "status": new["status"]}, options)


def recount_quotas(api: Api, rt: ResourceType, namespace: str) -> None:
    """After an object of `rt` left `namespace`: its quotas' usage of that kind, counted again."""
    if not rt.namespaced or not namespace:
        return
    quotas = api.store.list(quota.QUOTA_KEY, namespace)
    if not quotas:
        return
    existing = quota.total(rt.group, rt.plural, api.store.list(resource_key(rt), namespace))
    changed = []
    for found in quotas:
        hard = (found.get("spec") or {}).get("hard") or {}
        kinds = {name: quota.kind_of(name) for name in hard}
        used = {
            name: quantities.formatted(*existing[name]) if name in existing else "0"
            for name, kind in kinds.items()
            if kind == (rt.group, rt.plural)
        }
        if used:
            changed.append(quota.with_used(found, used))
    record_quotas(api, changed, CONTROLLER)


def refresh_budgets(api: Api, rt: ResourceType, namespace: str) -> None:
    """After a pod or a controller in `namespace` changed: the status of its budgets."""
    if resource_key(rt) not in budgets.WATCHED_KEYS or not namespace:
        return
    found = api.store.list(budgets.BUDGET_KEY, namespace)
    if not found:
        return
    pods = api.store.list("/pods", namespace)
    budget_rt = by_kind("PodDisruptionBudget")
    for budget in found:
        status = budgets.status_of(budget, pods, api.admission.find, now_rfc3339())
        if status != budget.get("status"):
            api.write_status_of(budget_rt, budget, {**budget, "status": status}, CONTROLLER)


def evict(api: Api, namespace: str, name: str, eviction: Any, options: WriteOptions) -> Obj:
    """POST pods/<name>/eviction: delete the pod unless a disruption budget forbids it (429)."""
    pod_rt = by_kind("Pod")
    pod = api.stored(pod_rt, namespace, name)
    if not budgets.evictable_at_once(pod):
        budget = budgets.check_eviction(pod, api.store.list(budgets.BUDGET_KEY, namespace))
        if budget is not None and not options.dry_run:
            budget_rt = by_kind("PodDisruptionBudget")
            api.write_status_of(
                budget_rt, budget, budgets.after_eviction(budget, name, now_rfc3339()), APISERVER
            )
        if not options.dry_run:
            _mark_disruption_target(api, pod)
    if not options.dry_run:
        sent = eviction.get("deleteOptions") if isinstance(eviction, dict) else None
        api.delete(pod_rt, namespace, name, DeleteOptions.from_body(sent, {}) if sent else None)
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def _mark_disruption_target(api: Api, pod: Obj) -> None:
    new = json_copy(pod)
    conditions = [
        c for c in (new.get("status") or {}).get("conditions") or [] if c.get("type") != "DisruptionTarget"
    ]
    conditions.append(
        {
            "type": "DisruptionTarget",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": now_rfc3339(),
            "reason": "EvictionByEvictionAPI",
            "message": "Eviction API: evicting",
        }
    )
    new.setdefault("status", {})["conditions"] = conditions
    api.write_status_of(by_kind("Pod"), pod, new, APISERVER)
