"""The controller's web view as data: which plans it knows, how each stands and its objects' health.

Built from what the controller already keeps — each plan's rendering and last reconcile outcome, a Plan
object's status, the PVC and Pod watch caches — so the index costs no request; a plan's page reads its
generations' metadata once. `planner.output.webview` turns these view models into HTML. Only names,
states, counts and planner's own messages go in, never an object's data: no Secret value can reach a page.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote, unquote

from planner.app.reconciling import PlanOutcome
from planner.app.rendering import RenderedPlan
from planner.controller import planstatus
from planner.diff import ChangeSet
from planner.generations import Listed
from planner.graph import ExecutionPlan, solve
from planner.kinds import PERSISTENT_VOLUME_CLAIM, POD
from planner.monitor.mapping import pod_ready
from planner.monitor.pools import PoolStatus, cached_pool_counts
from planner.objects import LABEL_WORKLOAD, Manifest, labels_of, metadata_of, stateful_claims

GENERATIONS_SHOWN = 10
_SELECTING_KINDS = frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"})
_WORST_FIRST = ("Failed", "NotFound", "Terminating", "InProgress", "Unknown", "Current")


@dataclass(frozen=True, kw_only=True)
class ObjectHealth:
    """One object of a plan and its health (a readiness verdict), with the objects it owns beneath it."""

    kind: str
    name: str
    status: str
    message: str = ""
    children: tuple[ObjectHealth, ...] = ()


@dataclass(frozen=True, kw_only=True)
class LastApply:
    """The last reconcile that wrote something: its changes and the tasks an apply of them runs."""

    execution: ExecutionPlan
    changeset: ChangeSet
    finished: datetime


@dataclass(frozen=True, kw_only=True)
class PlanView:
    name: str
    namespace: str
    source: str  # a plan file's path, or `plan/<name> -n <namespace>`
    ready: str  # True, False or Unknown, as the Ready condition says
    reason: str = ""
    message: str = ""
    last_reconcile: datetime | None = None
    drift_found: int = 0  # by the last reconcile that found drift
    drift_corrected: int = 0
    drift_at: datetime | None = None  # when that reconcile finished (None: not known here)
    generation: int | None = None
    generations: tuple[Listed, ...] = ()
    objects: tuple[ObjectHealth, ...] = ()
    last_apply: LastApply | None = None

    @property
    def path(self) -> str:
        return plan_path(self.namespace, self.name)

    @property
    def drifted(self) -> bool:
        """Drift found and left as it is (the reconcile failed, or only checked)."""
        return self.drift_found > self.drift_corrected

    @property
    def corrected(self) -> bool:
        """Drift found and all of it put back."""
        return 0 < self.drift_found == self.drift_corrected


@dataclass(frozen=True, kw_only=True)
class Overview:
    identity: str
    leading: bool
    plans: tuple[PlanView, ...]
    pools: tuple[PoolStatus, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Pages:
    """How the view models become pages (the CLI gives `planner.output.webview`'s renderers)."""

    index: Callable[[Overview], str]
    plan: Callable[[PlanView], str]


@dataclass(frozen=True, kw_only=True)
class Known:
    """A plan as the controller keeps it: its source, its rendering (None: it does not load, and
    `problem` says why), its last reconcile's outcome, and for a Plan object the object from the watch."""

    source: str
    name: str
    namespace: str
    rendered: RenderedPlan | None = None
    problem: str = ""
    outcome: PlanOutcome | None = None
    applied: PlanOutcome | None = None  # the last outcome that wrote something
    plan_object: Manifest | None = None


def plan_path(namespace: str, name: str) -> str:
    return f"/plans/{quote(namespace, safe='')}/{quote(name, safe='')}"


def addressed_plan(path: str) -> tuple[str, str] | None:
    """(namespace, name) of a plan page's path `/plans/<namespace>/<name>`; None for any other path."""
    parts = path.split("/")
    if len(parts) != 4 or parts[:2] != ["", "plans"] or not parts[3]:
        return None
    return unquote(parts[2]), unquote(parts[3])


# --- a plan's state ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _State:
    ready: str
    reason: str = ""
    message: str = ""
    drift_found: int = 0
    drift_corrected: int = 0
    generation: int | None = None


def _from_outcome(outcome: PlanOutcome | None) -> _State:
    if outcome is None:
        return _State("Unknown", "NotReconciledYet", "no reconcile since the controller started")
    current = outcome.changeset.generation if outcome.changeset is not None else None
    generation = outcome.generation or (current.number if current is not None else None)
    if outcome.result == "failed":
        return _State("False", planstatus.FAILED, outcome.message, outcome.drift, 0, generation)
    if outcome.result == "locked":
        return _State("Unknown", "Locked", outcome.message, generation=generation)
    corrected = outcome.drift if outcome.result == "applied" else 0
    return _State("True", planstatus.SUCCEEDED, outcome.message, outcome.drift, corrected, generation)


def _from_status(plan: Manifest) -> _State:
    """A Plan object's own status: the verdict its last reconcile wrote (whichever replica ran it)."""
    status = plan.get("status") or {}
    ready = planstatus.condition(status, "Ready") or {}
    inventory = status.get("inventory") or {}
    generation = status.get("lastAppliedGeneration")
    return _State(
        str(ready.get("status") or "Unknown"),
        str(ready.get("reason") or ""),
        str(ready.get("message") or ""),
        int(inventory.get("driftFound") or 0),
        int(inventory.get("driftCorrected") or 0),
        int(generation) if isinstance(generation, int) else None,
    )


def _finished(outcome: PlanOutcome) -> datetime | None:
    return datetime.fromtimestamp(outcome.finished, UTC) if outcome.finished else None


def _drift(state: _State, known: Known) -> tuple[int, int, datetime | None]:
    """(found, corrected, when) of the last reconcile that found drift: the last reconcile's, when it
    found any; else what the last apply since the controller started corrected — so a correction stays
    in view after the reconciles that find the cluster as applied."""
    outcome, applied = known.outcome, known.applied
    if state.drift_found:
        at = _finished(outcome) if outcome is not None and outcome.drift else None
        return state.drift_found, state.drift_corrected, at
    if applied is not None and applied.drift:
        return applied.drift, applied.drift, _finished(applied)
    return 0, 0, None


def _state(known: Known) -> _State:
    if known.plan_object is not None and known.plan_object.get("status"):
        state = _from_status(known.plan_object)
        if state.generation is None:  # none applied yet (a first apply that failed): the one it is at
            state = dataclasses.replace(state, generation=_from_outcome(known.outcome).generation)
        return state
    if known.problem:
        return _State("False", "LoadFailed", known.problem)
    return _from_outcome(known.outcome)


# --- objects and their health ----------------------------------------------------------------------


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
    if manifest.get("kind") == "Job":
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
    if kind == "Job":
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
    if kind in _SELECTING_KINDS:
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


# --- the view models ---------------------------------------------------------------------------------


def _last_apply(known: Known, timeout: float | None) -> LastApply | None:
    applied, rendered = known.applied, known.rendered
    if applied is None or applied.changeset is None or rendered is None:
        return None
    execution = solve(applied.changeset, timeouts=rendered.timeouts, default_timeout=timeout)
    finished = datetime.fromtimestamp(applied.finished, UTC)
    return LastApply(execution=execution, changeset=applied.changeset, finished=finished)


def plan_view(
    known: Known,
    claims: list[Manifest],
    pods: list[Manifest],
    *,
    generations: Sequence[Listed] = (),
    with_objects: bool = False,
    timeout: float | None = None,
) -> PlanView:
    """One plan's view; `with_objects`: its objects' tree and its last apply (drawn with the waits'
    `timeout` an apply has) too, as its own page shows them."""
    state = _state(known)
    outcome = known.outcome
    last = _finished(outcome) if outcome is not None else None
    drift_found, drift_corrected, drift_at = _drift(state, known)
    objects = (
        object_tree(
            known.rendered.manifests,
            outcome,
            claims,
            pods,
            sandboxes=frozenset(sandbox.name for sandbox in known.rendered.plan.sandboxes),
        )
        if with_objects and known.rendered is not None
        else ()
    )
    latest = generations[-1].number if generations else None
    return PlanView(
        name=known.name,
        namespace=known.namespace,
        source=known.source,
        ready=state.ready,
        reason=state.reason,
        message=state.message,
        last_reconcile=last,
        drift_found=drift_found,
        drift_corrected=drift_corrected,
        drift_at=drift_at,
        generation=state.generation if state.generation is not None else latest,
        generations=tuple(reversed(generations[-GENERATIONS_SHOWN:])),
        objects=objects,
        last_apply=_last_apply(known, timeout) if with_objects else None,
    )


def pool_statuses(
    plans: Iterable[RenderedPlan], claims: list[Manifest], pods: list[Manifest]
) -> tuple[PoolStatus, ...]:
    """Each warm pool the plans declare, its members counted from the watch caches."""
    counts = cached_pool_counts(claims, pods)
    found = []
    for rendered in plans:
        for pool in rendered.plan.warm_pools:
            ready, unclaimed, claimed = counts.get((rendered.namespace, pool.name), (0, 0, 0))
            found.append(
                PoolStatus(
                    namespace=rendered.namespace,
                    pool=pool.name,
                    size=pool.size,
                    ready=ready,
                    unclaimed=unclaimed,
                    claimed=claimed,
                )
            )
    return tuple(sorted(found, key=lambda p: (p.namespace, p.pool)))


def overview(
    identity: str, leading: bool, known: Sequence[Known], claims: list[Manifest], pods: list[Manifest]
) -> Overview:
    plans = sorted(known, key=lambda k: (k.namespace, k.name, k.source))
    return Overview(
        identity=identity,
        leading=leading,
        plans=tuple(plan_view(k, claims, pods) for k in plans),
        pools=pool_statuses((k.rendered for k in plans if k.rendered is not None), claims, pods),
    )


__all__ = [
    "GENERATIONS_SHOWN",
    "Known",
    "LastApply",
    "ObjectHealth",
    "Overview",
    "Pages",
    "PlanView",
    "addressed_plan",
    "object_tree",
    "overview",
    "plan_path",
    "plan_view",
    "pool_statuses",
]
