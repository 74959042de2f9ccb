"""The controller's web view as data: which plans it knows, how each stands and its objects' health
(`objecthealth`).

Built from what the controller already keeps — each plan's rendering and last reconcile outcome, a Plan
object's status, the PVC and Pod watch caches — so the index costs no request; a plan's page reads its
generations' metadata once. `pages` turns these view models into HTML. Only names,
states, counts and planner's own messages go in, never an object's data: no Secret value can reach a page.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote, unquote

from planner.app.reconciling import PlanOutcome
from planner.app.rendering import RenderedPlan
from planner.controller import planstatus
from planner.controller.objecthealth import ObjectHealth, object_tree
from planner.diff import ChangeSet
from planner.generations import Listed
from planner.graph import ExecutionPlan, solve
from planner.monitor.pool_members import PoolStatus, cached_pool_counts
from planner.objects import Manifest

GENERATIONS_SHOWN = 10


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
    generation = planstatus.reconciled_generation(outcome)
    if outcome.result == "failed":
        return _State("False", planstatus.FAILED, outcome.message, outcome.drift, 0, generation)
    if outcome.result == "locked":
        return _State("Unknown", "Locked", outcome.message, generation=generation)
    corrected = planstatus.drift_corrected(outcome)
    return _State("True", planstatus.SUCCEEDED, outcome.message, outcome.drift, corrected, generation)


def _from_status(plan: Manifest) -> _State:
    """A Plan object's own status: the verdict its last reconcile wrote (whichever replica ran it)."""
    status = plan.get("status") or {}
    ready = planstatus.condition(status, planstatus.READY) or {}
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
    "Overview",
    "PlanView",
    "addressed_plan",
    "overview",
    "plan_path",
    "plan_view",
    "pool_statuses",
]
