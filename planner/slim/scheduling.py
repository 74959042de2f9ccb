"""The scheduler's and kubelet's admission checks for one pod, as pure functions over the store.

`unschedulable_reason` answers what the default scheduler would say about placing a pod on the one
simulated node (node selector, required node affinity, missing or unbound immediate PVCs);
`missing_dependency` answers why the kubelet cannot start its containers yet (a ConfigMap, Secret or
PVC its volumes or environment name is missing, or its claim is not bound). Both return None when the
pod may proceed, else the reason, message and Event the real components use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]
Lookup = Callable[[str, str], Obj | None]  # (kind, name) → object in the pod's namespace
PREEMPTION = "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."


@dataclass(frozen=True)
class Blocked:
    reason: str  # the container waiting reason (ContainerCreating, CreateContainerConfigError)
    event_reason: str  # FailedMount, Failed, FailedScheduling
    message: str


def _matches_expression(labels: dict[str, str], expression: Obj) -> bool:
    key, operator = expression.get("key", ""), expression.get("operator", "In")
    values = [str(v) for v in expression.get("values") or []]
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and values:
        try:
            left, right = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return left > right if operator == "Gt" else left < right
    return False


def _term_matches(node: Obj, term: Obj) -> bool:
    labels = node["metadata"].get("labels") or {}
    fields = {"metadata.name": node["metadata"]["name"]}
    return all(_matches_expression(labels, e) for e in term.get("matchExpressions") or []) and all(
        _matches_expression(fields, e) for e in term.get("matchFields") or []
    )


def node_fits(pod: Obj, node: Obj) -> bool:
    spec = pod.get("spec") or {}
    labels = node["metadata"].get("labels") or {}
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        or {}
    ).get("nodeSelectorTerms")
    return not required or any(_term_matches(node, term) for term in required)


def claim_names(pod: Obj) -> list[str]:
    return [
        str(v["persistentVolumeClaim"]["claimName"])
        for v in (pod.get("spec") or {}).get("volumes") or []
        if (v.get("persistentVolumeClaim") or {}).get("claimName")
    ]


def unschedulable_reason(
    pod: Obj, nodes: list[Obj], lookup: Lookup, waits_for_consumer: Callable[[Obj], bool]
) -> str | None:
    count = len(nodes)
    for claim in claim_names(pod):
        found = lookup("PersistentVolumeClaim", claim)
        if found is None:
            return f'0/{count} nodes are available: persistentvolumeclaim "{claim}" not found. {PREEMPTION}'
        bound = (found.get("status") or {}).get("phase") == "Bound"
        if not bound and not waits_for_consumer(found):
            return f"0/{count} nodes are available: pod has unbound immediate PersistentVolumeClaims. {PREEMPTION}"
    if not any(node_fits(pod, node) for node in nodes):
        return (
            f"0/{count} nodes are available: {count} node(s) didn't match Pod's node affinity/selector. "
            f"{PREEMPTION}"
        )
    return None


def _volume_blocker(volume: Obj, lookup: Lookup) -> Blocked | None:
    name = volume.get("name", "")
    sources: list[tuple[str, Obj]] = []
    if "configMap" in volume:
        sources.append(("configMap", volume["configMap"]))
    if "secret" in volume:
        sources.append(("secret", {**volume["secret"], "name": volume["secret"].get("secretName")}))
    for projected in (volume.get("projected") or {}).get("sources") or []:
        sources += [(k, projected[k]) for k in ("configMap", "secret") if k in projected]
    for kind, source in sources:
        if source.get("optional"):
            continue
        api_kind = "ConfigMap" if kind == "configMap" else "Secret"
        if lookup(api_kind, str(source.get("name", ""))) is None:
            noun = "configmap" if kind == "configMap" else "secret"
            message = (
                f'MountVolume.SetUp failed for volume "{name}" : {noun} "{source.get("name")}" not found'
            )
            return Blocked("ContainerCreating", "FailedMount", message)
    claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
    if claim:
        found = lookup("PersistentVolumeClaim", str(claim))
        if found is None:
            message = f'Unable to attach or mount volumes: persistentvolumeclaim "{claim}" not found'
            return Blocked("ContainerCreating", "FailedMount", message)
        if (found.get("status") or {}).get("phase") != "Bound":
            message = f'Unable to attach or mount volumes: persistentvolumeclaim "{claim}" is not bound'
            return Blocked("ContainerCreating", "FailedMount", message)
    return None


def _env_refs(container: Obj) -> list[tuple[str, str]]:
    refs: list[tuple[str, str]] = []
    for env in container.get("env") or []:
        source = env.get("valueFrom") or {}
        for kind, field in (("ConfigMap", "configMapKeyRef"), ("Secret", "secretKeyRef")):
            ref = source.get(field)
            if ref and not ref.get("optional"):
                refs.append((kind, str(ref.get("name", ""))))
    for env_from in container.get("envFrom") or []:
        for kind, field in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
            ref = env_from.get(field)
            if ref and not ref.get("optional"):
                refs.append((kind, str(ref.get("name", ""))))
    return refs


def missing_dependency(pod: Obj, lookup: Lookup) -> Blocked | None:
    spec = pod.get("spec") or {}
    for volume in spec.get("volumes") or []:
        blocked = _volume_blocker(volume, lookup)
        if blocked is not None:
            return blocked
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        for kind, name in _env_refs(container):
            if lookup(kind, name) is None:
                message = f'Error: {kind.lower()} "{name}" not found'
                return Blocked("CreateContainerConfigError", "Failed", message)
    return None


def tolerates(toleration: Obj, taint: Obj) -> bool:
    """Whether one toleration tolerates one taint (an empty key with Exists tolerates every taint)."""
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    operator = toleration.get("operator") or "Equal"
    if not toleration.get("key"):
        return operator == "Exists"
    if toleration.get("key") != taint.get("key"):
        return False
    return operator == "Exists" or str(toleration.get("value") or "") == str(taint.get("value") or "")


def untolerated_taint(pod: Obj, node: Obj) -> Obj | None:
    """The first NoSchedule or NoExecute taint of the node the pod does not tolerate, if any."""
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not any(
            tolerates(t, taint) for t in tolerations
        ):
            return dict(taint)
    return None
