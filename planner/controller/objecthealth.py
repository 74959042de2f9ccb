"""A plan's objects and their health, for the controller's web view: its rendered objects as a tree
under the workload or sandbox that rendered each, judged from the PVC and Pod watch caches (no request).
Only kinds, names, states and counts go in, never an object's data."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from planner.app.reconciling import PlanOutcome
from planner.kinds import JOB, PERSISTENT_VOLUME_CLAIM, POD
from planner.monitor.mapping import pod_ready
from planner.objects import LABEL_WORKLOAD, Manifest, labels_of, metadata_of, stateful_claims
from planner.wait.reasons import selects_pods

_WORST_FIRST = ("Failed", "NotFound", "Terminating", "InProgress", "Unknown", "Current")


@dataclass(frozen=True, kw_only=True)
class ObjectHealth:
    """One object of a plan and its health (a readiness verdict), with the objects it owns beneath it."""

    kind: str
    name: str
    status: str
    message: str = ""
    children: tuple[ObjectHealth, ...] = ()


def _key(obj: Mapping[str, object]) -> tuple[str, str]:
    metadata = metadata_of(obj)
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


def _phase(pod: Manifest) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _pod_health(pod: Manifest) -> tuple[str, str]:
    phase = _phase(pod)
    if metadata_of(pod).get("deletionTimestamp"):
        return "Terminating", phase
    if phase == "Failed":
        return "Failed", phase
    if phase == "Succeeded" or pod_ready(pod):
        return "Current", phase
    return "InProgress", f"{phase}, not Ready"


def _claim_health(claim: Manifest) -> tuple[str, str]:
    phase = str((claim.get("status") or {}).get("phase") or "Pending")
    return {"Bound": "Current", "Lost": "Failed"}.get(phase, "InProgress"), phase


def _cached(
    obj: Manifest | None, health: Callable[[Manifest], tuple[str, str]], kind: str, name: str
) -> ObjectHealth:
    if obj is None:
        return ObjectHealth(kind=kind, name=name, status="NotFound", message="not in the watch cache")
    status, message = health(obj)
    return ObjectHealth(kind=kind, name=name, status=status, message=message)


def _selected(manifest: Manifest, pods: Iterable[Manifest]) -> list[Manifest]:
    """The Pods of a workload: those of its namespace its selector's matchLabels select."""
    spec = manifest.get("spec") or {}
    if manifest.get("kind") == JOB.kind:  # rendered without a selector: the server makes one
        wanted: Mapping[str, object] = {"job-name": metadata_of(manifest).get("name")}
    else:
        wanted = (spec.get("selector") or {}).get("matchLabels") or {}
    namespace = _key(manifest)[0]
    return [
        pod
        for pod in pods
        if wanted
        and _key(pod)[0] == namespace
        and all(labels_of(pod).get(label) == value for label, value in wanted.items())
    ]


def _workload(
    manifest: Manifest, kind: str, name: str, claims: list[Manifest], pods: list[Manifest]
) -> ObjectHealth:
    selected = sorted(_selected(manifest, pods), key=_key)
    pod_nodes = [_cached(pod, _pod_health, POD.kind, _key(pod)[1]) for pod in selected]
    claim_nodes = [
        _cached(claim, _claim_health, PERSISTENT_VOLUME_CLAIM.kind, _key(claim)[1])
        for claim in stateful_claims(manifest, claims)
    ]
    if kind == JOB.kind:
        status, message = _job_health(manifest, [_phase(pod) for pod in selected])
    else:
        status, message = _pods_health([node.status for node in pod_nodes])
    return ObjectHealth(
        kind=kind, name=name, status=status, message=message, children=(*pod_nodes, *claim_nodes)
    )


def _pods_health(pod_states: Sequence[str]) -> tuple[str, str]:
    if any(state == "Failed" for state in pod_states):
        status = "Failed"
    elif pod_states and all(state == "Current" for state in pod_states):
        status = "Current"
    else:
        status = "InProgress"
    ready = sum(1 for state in pod_states if state == "Current")
    return status, f"{ready}/{len(pod_states)} pods ready"


def _job_health(job: Manifest, pod_phases: Sequence[str]) -> tuple[str, str]:
    """A Job from its pods' phases, as the Job controller judges it: complete once `completions` pods
    succeeded, failed once more than `backoffLimit` pods failed (a failed pod before that is retried)."""
    spec = job.get("spec") or {}
    completions = int(spec.get("completions") or 1)
    backoff_limit = 6 if spec.get("backoffLimit") is None else int(spec["backoffLimit"])  # the API's default
    succeeded = pod_phases.count("Succeeded")
    failed = pod_phases.count("Failed")
    retried = f", {failed} failed" if failed else ""
    if succeeded >= completions:
        return "Current", f"Complete {succeeded}/{completions}{retried}"
    if failed > backoff_limit:
        return "Failed", f"Failed: {failed} pods failed (backoffLimit {backoff_limit})"
    if not pod_phases:
        return "InProgress", "no pods"
    return "InProgress", f"Running: {succeeded}/{completions} succeeded{retried}"


@dataclass(frozen=True)
class _Caches:
    claims: list[Manifest]
    pods: list[Manifest]
    claims_by_key: Mapping[tuple[str, str], Manifest]
    pods_by_key: Mapping[tuple[str, str], Manifest]


def _object(manifest: Manifest, converged: bool, caches: _Caches) -> ObjectHealth:
    kind, key = str(manifest.get("kind")), _key(manifest)
    if kind == POD.kind:
        return _cached(caches.pods_by_key.get(key), _pod_health, kind, key[1])
    if kind == PERSISTENT_VOLUME_CLAIM.kind:
        return _cached(caches.claims_by_key.get(key), _claim_health, kind, key[1])
    if kind == JOB.kind or selects_pods(manifest):
        return _workload(manifest, kind, key[1], caches.claims, caches.pods)
    return ObjectHealth(kind=kind, name=key[1], status="Current" if converged else "Unknown")


def _worst(objects: Iterable[ObjectHealth]) -> str:
    states = {obj.status for obj in objects}
    return next((state for state in _WORST_FIRST if state in states), "Unknown")


def object_tree(
    manifests: Sequence[Manifest],
    outcome: PlanOutcome | None,
    claims: list[Manifest],
    pods: list[Manifest],
    *,
    sandboxes: frozenset[str] = frozenset(),
) -> tuple[ObjectHealth, ...]:
    """The plan's rendered objects, each with its health, grouped under the workload or sandbox
    (`sandboxes` names those) that rendered it, which is as healthy as its least healthy object. Pods
    and PVCs are judged from the watch caches, controllers from their Pods (listed beneath them, with
    a StatefulSet's PVCs; a Job is complete once they succeeded); any other object is Current once a
    reconcile converged (the apply waited for it), Unknown before."""
    converged = outcome is not None and outcome.result in ("applied", "unchanged")
    caches = _Caches(claims, pods, {_key(c): c for c in claims}, {_key(p): p for p in pods})
    tree: list[ObjectHealth | str] = []  # an owner's name holds its place until its objects are in
    owned: dict[str, list[ObjectHealth]] = {}
    for manifest in manifests:
        node = _object(manifest, converged, caches)
        owner = labels_of(manifest).get(LABEL_WORKLOAD)
        if owner is None:
            tree.append(node)
            continue
        if str(owner) not in owned:
            tree.append(str(owner))
        owned.setdefault(str(owner), []).append(node)
    return tuple(
        ObjectHealth(
            kind="sandbox" if item in sandboxes else "workload",
            name=item,
            status=_worst(owned[item]),
            children=tuple(owned[item]),
        )
        if isinstance(item, str)
        else item
        for item in tree
    )
