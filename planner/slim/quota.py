"""ResourceQuota: what an object uses of a namespace's quotas, and the admission that refuses what exceeds one.

As the apiserver's ResourceQuota admission plugin: a create in a namespace with quotas adds the object's
usage (`pods: 1`, `count/deployments.apps: 1`, a pod's `requests.cpu`, a claim's `requests.storage`…)
to what the namespace already uses and is refused with 403 `exceeded quota: <quota>, requested: …,
used: …, limited: …` (each list only the exceeded resources, sorted, as `prettyPrint` writes them) when
a quota's `hard` would be passed; a pod that leaves out a compute resource a quota limits is refused
with `failed quota: <quota>: must specify …`. Usage is counted from the stored objects, so it is
right after deletes too; `status.used` is written back after each create and delete (`Api`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import Any

from planner import quantities
from planner.slim.admission import Admission, forbidden
from planner.slim.status_errors import Cause, Target

Obj = dict[str, Any]
Usage = dict[str, tuple[Decimal, str]]  # resource -> (value, quantity format)
QUOTA_KEY = "/resourcequotas"
COUNTED = {  # (group, plural) counted under a plain name besides `count/<plural>[.<group>]`
    ("", "pods"): "pods",
    ("", "services"): "services",
    ("", "configmaps"): "configmaps",
    ("", "secrets"): "secrets",
    ("", "persistentvolumeclaims"): "persistentvolumeclaims",
    ("", "replicationcontrollers"): "replicationcontrollers",
    ("", "resourcequotas"): "resourcequotas",
}
COMPUTE = ("cpu", "memory", "ephemeral-storage")
TERMINAL_PHASES = ("Succeeded", "Failed")
ONE: tuple[Decimal, str] = (Decimal(1), "DecimalSI")


def usage(group: str, plural: str, obj: Obj) -> Usage:
    """What one object uses, by quota resource name."""
    if plural == "pods" and not group and (obj.get("status") or {}).get("phase") in TERMINAL_PHASES:
        return {}
    used: Usage = {f"count/{plural}.{group}" if group else f"count/{plural}": ONE}
    if (group, plural) in COUNTED:
        used[COUNTED[(group, plural)]] = ONE
    spec = obj.get("spec") or {}
    if (group, plural) == ("", "pods"):
        used.update(_pod_compute(spec))
    elif (group, plural) == ("", "services"):
        kind = spec.get("type")
        if kind == "LoadBalancer":
            used["services.loadbalancers"] = ONE
        if kind in ("NodePort", "LoadBalancer"):
            used["services.nodeports"] = (Decimal(len(spec.get("ports") or [])), "DecimalSI")
    elif (group, plural) == ("", "persistentvolumeclaims"):
        storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
        if storage is not None:
            used["requests.storage"] = quantities.parse(str(storage))
            claim_class = spec.get("storageClassName")
            if claim_class:
                prefix = f"{claim_class}.storageclass.storage.k8s.io/"
                used[prefix + "requests.storage"] = used["requests.storage"]
                used[prefix + "persistentvolumeclaims"] = ONE
    return used


def _pod_compute(spec: Obj) -> Usage:
    """requests.X and limits.X (and X, the request): the sum over containers, at least each init
    container's, plus the pod's overhead — a pod's effective resources."""
    used: Usage = {}
    for level in ("requests", "limits"):
        for name in {n for c in _containers(spec) for n in ((c.get("resources") or {}).get(level) or {})}:
            total = _sum(_quantity(c, level, name) for c in spec.get("containers") or [])
            for init in spec.get("initContainers") or []:
                found = _quantity(init, level, name)
                if found is not None and total is not None and found[0] > total[0]:
                    total = found
            overhead = (spec.get("overhead") or {}).get(name)
            if overhead is not None:
                total = _sum([total, quantities.parse(str(overhead))])
            if total is not None:
                used[f"{level}.{name}"] = total
                if level == "requests" and name in COMPUTE:
                    used[name] = total
    return used


def _containers(spec: Obj) -> list[Obj]:
    return [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]


def _quantity(container: Obj, level: str, name: str) -> tuple[Decimal, str] | None:
    value = ((container.get("resources") or {}).get(level) or {}).get(name)
    return None if value is None else quantities.parse(str(value))


def _sum(values: Iterable[tuple[Decimal, str] | None]) -> tuple[Decimal, str] | None:
    present = [v for v in values if v is not None]
    if not present:
        return None
    family = "BinarySI" if any(f == "BinarySI" for _, f in present) else present[0][1]
    return sum((v for v, _ in present), Decimal(0)), family


def total(group: str, plural: str, objects: Iterable[Obj]) -> Usage:
    """What the objects of one kind in a namespace use together."""
    summed: Usage = {}
    for obj in objects:
        for name, value in usage(group, plural, obj).items():
            current = summed.get(name)
            summed[name] = value if current is None else _sum([current, value]) or value
    return summed


def _hard(quota: Obj) -> dict[str, tuple[Decimal, str]]:
    hard = (quota.get("spec") or {}).get("hard") or {}
    return {name: quantities.parse(str(value)) for name, value in hard.items()}


def _show(values: Mapping[str, tuple[Decimal, str]], names: Iterable[str]) -> str:
    return ",".join(f"{name}={quantities.formatted(*values[name])}" for name in sorted(names))


def charge(quotas: list[Obj], requested: Usage, existing: Usage, target: Target, obj: Obj) -> list[Obj]:
    """Admit an object that uses `requested` into a namespace whose objects of its kind use `existing`:
    the quotas it changes, with their new `status.used`; 403 when one would be exceeded."""
    changed: list[Obj] = []
    for quota in quotas:
        hard = _hard(quota)
        _require_compute(quota, hard, target, obj)
        touched = [name for name in requested if name in hard]
        if not touched:
            continue
        zero = (Decimal(0), "DecimalSI")
        after = {name: _sum([existing.get(name, zero), requested[name]]) or zero for name in touched}
        exceeded = [name for name in touched if after[name][0] > hard[name][0]]
        if exceeded:
            used = {name: existing.get(name, zero) for name in exceeded}
            detail = (
                f"exceeded quota: {quota['metadata']['name']}, requested: {_show(requested, exceeded)}, "
                f"used: {_show(used, exceeded)}, limited: {_show(hard, exceeded)}"
            )
            raise forbidden(target, detail)
        changed.append(with_used(quota, {name: quantities.formatted(*after[name]) for name in touched}))
    return changed


def _require_compute(quota: Obj, hard: Mapping[str, Any], target: Target, obj: Obj) -> None:
    """A pod must state every compute resource a quota limits, in each container."""
    if target.plural != "pods" or target.group:
        return
    missing: list[str] = []
    for name in sorted(hard):
        level, _, resource = name.partition(".")
        if name in COMPUTE:
            level, resource = "requests", name
        elif level not in ("requests", "limits") or resource not in COMPUTE:
            continue
        lacking = [
            str(c.get("name", ""))
            for c in (obj.get("spec") or {}).get("containers") or []
            if resource not in ((c.get("resources") or {}).get(level) or {})
        ]
        if lacking:
            missing.append(f"{name} for: {','.join(lacking)}")
    if missing:
        raise forbidden(
            target, f"failed quota: {quota['metadata']['name']}: must specify {'; '.join(missing)}"
        )


def with_used(quota: Obj, used: Mapping[str, str]) -> Obj:
    """The quota with `used` merged into its status (and `hard` copied from its spec)."""
    status = dict(quota.get("status") or {})
    status["hard"] = dict((quota.get("spec") or {}).get("hard") or {})
    status["used"] = {**(status.get("used") or {}), **used}
    status["used"] = {name: value for name, value in sorted(status["used"].items()) if name in status["hard"]}
    return {**quota, "status": status}


# --- the ResourceQuota itself ------------------------------------------------------------------------------

Lister = Callable[[str, str], list[Obj]]  # (group/plural key, namespace) -> stored objects


def kind_of(resource: str) -> tuple[str, str]:
    """The (group, plural) whose objects a quota resource counts."""
    if resource.startswith("count/"):
        plural, _, group = resource.removeprefix("count/").partition(".")
        return group, plural
    if resource in ("services", "services.loadbalancers", "services.nodeports"):
        return "", "services"
    if resource == "requests.storage" or ".storageclass.storage.k8s.io/" in resource:
        return "", "persistentvolumeclaims"
    for (group, plural), name in COUNTED.items():
        if resource == name:
            return group, plural
    return "", "pods"


def status_of(quota: Obj, listing: Lister) -> Obj:
    """A quota's status from scratch: `hard` from its spec, `used` counted from the namespace."""
    namespace = str((quota.get("metadata") or {}).get("namespace", ""))
    hard = (quota.get("spec") or {}).get("hard") or {}
    totals: dict[tuple[str, str], Usage] = {}
    used: dict[str, str] = {}
    for name in hard:
        group, plural = kind_of(name)
        if (group, plural) not in totals:
            totals[(group, plural)] = total(group, plural, listing(f"{group}/{plural}", namespace))
        value = totals[(group, plural)].get(name)
        used[name] = quantities.formatted(*value) if value is not None else "0"
    return {"hard": dict(hard), "used": dict(sorted(used.items()))} if hard else {}


def admit_quota(cluster: Admission, quota: Obj, old: Obj | None, target: Target) -> list[Cause]:
    """A ResourceQuota's status is filled in when it is written (the quota controller's first pass)."""
    quota["status"] = status_of(quota, cluster.list_in)
    return []
