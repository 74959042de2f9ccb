"""A Plan object's status, as kstatus and Flux define it: what the controller writes to the status
subresource after each step of a reconcile (docs/controller.md, "Plan objects").

Four conditions: `Ready` (True once a generation is reconciled and converged; False with the reason it
failed; Unknown while in progress), and `Reconciling`, `Stalled` and `DriftConflict` (another writer
writes back a field after each correction), present only while True (kstatus' "abnormal-true"
conditions); a Plan with a Git source also has `SourceReady` (True with the revision fetched, else
False with why it could not be: unreachable, authentication refused, ref or path gone, plan invalid at
that commit), kept as it was by every status that does not fetch. Each condition carries the `observedGeneration` it speaks for, so `kubectl
wait --for=condition=Ready` waits for the generation it was given, not a previous one's Ready. A
condition's `lastTransitionTime` changes only when its status does. The functions are pure;
`StatusWriter` sends what they return to the status subresource as a merge patch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from planner.app.reconciling import PlanOutcome
from planner.controller.driftfields import DriftedField
from planner.controller.planref import object_key, patch_plan, plan_path, source_name
from planner.errors import ApiError, UnreachableError
from planner.kube.client import KubeClient
from planner.objects import Manifest, annotations_of, metadata_of
from planner.plan.git_source import SOURCE

READY, RECONCILING, STALLED = "Ready", "Reconciling", "Stalled"
DRIFT_CONFLICT, FIGHTING_WRITER = "DriftConflict", "FightingWriter"
SUCCEEDED, FAILED = "ReconciliationSucceeded", "ReconciliationFailed"
DEPENDENCY_NOT_READY, PROGRESSING = "DependencyNotReady", "Progressing"
PRUNE_FAILED = "PruneFailed"
SUSPENDED = "Suspended"
SOURCE_READY, SOURCE_SUCCEEDED = "SourceReady", "Succeeded"
ANNOTATION_REVISION = "planner.dev/revision"
ANNOTATION_REQUESTED_AT = "reconcile.planner.dev/requestedAt"

Truth = Literal["True", "False", "Unknown"]
Status = dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class Attempt:
    """One reconcile of a Plan object's `generation` and how it ended. `ready`/`reason`/`message` become
    the Ready condition; `stalled` says retrying cannot help until the Plan changes (it does not load);
    `applied` is what the reconcile converged (None: it did not), with planner's generation number
    when it recorded one. `drifted` is what drift it corrected (or found), with who wrote it;
    `conflict` says which fields another writer keeps writing back (empty: none)."""

    generation: int
    revision: str
    requested_at: str
    ready: Truth
    reason: str
    message: str
    stalled: bool = False
    applied: Applied | None = None
    error: str = ""
    drifted: tuple[DriftedField, ...] = ()
    conflict: str = ""
    source: SourceState | None = None  # a Git source's fetch and load (None: no source)


@dataclass(frozen=True)
class SourceState:
    """The `SourceReady` condition: `ready` with its reason and message."""

    ready: Truth
    reason: str
    message: str


@dataclass(frozen=True, kw_only=True)
class Applied:
    planner_generation: int | None
    objects: Mapping[str, int] = field(default_factory=dict)  # rendered objects by kind
    drift_found: int = 0
    drift_corrected: int = 0


def generation_of(plan: Manifest) -> int:
    return int(metadata_of(plan).get("generation") or 0)


def wants_reconcile(plan: Manifest) -> bool:
    """Whether the Plan asks for a reconcile now: a generation or revision not yet attempted (nor being
    reconciled: `Reconciling` True at it), a `requestedAt` not yet handled, or no Ready condition at
    all. A status write of the controller's own answers none of these, so it never queues the Plan
    again."""
    status = plan.get("status") or {}
    annotations = annotations_of(plan)
    reconciling = condition(status, RECONCILING) or {}
    handled = (
        reconciling.get("observedGeneration")
        if reconciling.get("status") == "True"
        else status.get("observedGeneration")
    )
    return (
        handled != generation_of(plan)
        or (
            SOURCE not in plan  # a Git source's revision is the fetch's, not the annotation's
            and annotations.get(ANNOTATION_REVISION, "") != status.get("lastAttemptedRevision", "")
        )
        or annotations.get(ANNOTATION_REQUESTED_AT, "") != status.get("lastHandledReconcileAt", "")
        or condition(status, READY) is None
    )


def condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for each in status.get("conditions") or ():
        if isinstance(each, Mapping) and each.get("type") == kind:
            return each
    return None


def progressing(plan: Manifest, now: str, message: str = "reconciliation in progress") -> Status:
    """The status while a new generation is being reconciled: Ready Unknown, Reconciling True."""
    return _reconciling(plan, now, ready="Unknown", reason=PROGRESSING, message=message)


def is_ready(plan: Manifest) -> bool:
    """Ready True for the Plan's current generation (what a dependent waits for)."""
    ready = condition(plan.get("status") or {}, READY) or {}
    return ready.get("status") == "True" and ready.get("observedGeneration") == generation_of(plan)


def suspended(plan: Manifest, now: str) -> Status:
    """The status of a suspended Plan (`reconcile.suspend`): Ready keeps its status and the generation
    it spoke for — the cluster is as the last reconcile left it, and `kubectl wait` for a newer
    generation must not end — with the reason Suspended and a message that says so."""
    previous: Mapping[str, Any] = plan.get("status") or {}
    ready = condition(previous, READY) or {}
    truth: Truth = (
        "True" if ready.get("status") == "True" else "False" if ready.get("status") == "False" else "Unknown"
    )
    message = str(ready.get("message") or "never reconciled")
    if ready.get("reason") != SUSPENDED:
        message = f"suspended (reconcile.suspend): not reconciled; the last reconcile: {message}"
    spoken_for = int(ready.get("observedGeneration") or 0)
    return {
        **_kept(previous),
        "conditions": [
            _condition(previous, READY, truth, SUSPENDED, message, spoken_for, now),
            *_source_kept(previous),
        ],
    }


def waiting(plan: Manifest, now: str, message: str) -> Status:
    """The status while a dependency is not Ready yet: Ready False (DependencyNotReady), Reconciling."""
    return _reconciling(plan, now, ready="False", reason=DEPENDENCY_NOT_READY, message=message)


def prune_failed(plan: Manifest, now: str, message: str) -> Status:
    """The status of a deleted Plan whose objects could not all be pruned (its finalizer stays): Ready
    False (PruneFailed), Reconciling."""
    return _reconciling(plan, now, ready="False", reason=PRUNE_FAILED, message=message)


def _reconciling(plan: Manifest, now: str, *, ready: Truth, reason: str, message: str) -> Status:
    """Ready `ready` and Reconciling True, both for `reason`, at the Plan's current generation."""
    previous: Mapping[str, Any] = plan.get("status") or {}
    generation = generation_of(plan)
    conditions = [
        _condition(previous, READY, ready, reason, message, generation, now),
        _condition(previous, RECONCILING, "True", reason, message, generation, now),
        *_source_kept(previous),
    ]
    return {**_kept(previous), "conditions": conditions}


def finished(previous: Mapping[str, Any], attempt: Attempt, now: str) -> Status:
    """The status once `attempt` has ended."""
    generation = attempt.generation
    conditions = [
        _condition(previous, READY, attempt.ready, attempt.reason, attempt.message, generation, now)
    ]
    if attempt.stalled:
        conditions.append(
            _condition(previous, STALLED, "True", attempt.reason, attempt.message, generation, now)
        )
    if attempt.conflict:
        conditions.append(
            _condition(previous, DRIFT_CONFLICT, "True", FIGHTING_WRITER, attempt.conflict, generation, now)
        )
    source = attempt.source
    if source is not None:
        conditions.append(
            _condition(previous, SOURCE_READY, source.ready, source.reason, source.message, generation, now)
        )
    else:
        conditions += _source_kept(previous)
    status: Status = {
        **_kept(previous),
        "observedGeneration": generation,
        "lastAttemptedRevision": attempt.revision,
        "lastHandledReconcileAt": attempt.requested_at,
        "lastError": attempt.error,
        "conditions": conditions,
    }
    if attempt.drifted:
        status["lastDrift"] = {
            "time": now,
            "fields": [
                {"object": each.object, "path": each.path, "writer": each.writer} for each in attempt.drifted
            ],
        }
    applied = attempt.applied
    if applied is not None:
        if applied.planner_generation is not None:
            status["lastAppliedGeneration"] = applied.planner_generation
        status["lastAppliedRevision"] = attempt.revision
        status["inventory"] = {
            "objects": dict(sorted(applied.objects.items())),
            "driftFound": applied.drift_found,
            "driftCorrected": applied.drift_corrected,
        }
    return status


def merge_patch(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON merge patch that turns `before` into `after`: a key `after` no longer has is set to null
    (a merge patch keeps what it does not name), maps are patched key by key, anything else replaced."""
    patch: dict[str, Any] = {key: None for key in before if key not in after}
    for key, value in after.items():
        old = before.get(key)
        patch[key] = (
            merge_patch(old, value) if isinstance(old, Mapping) and isinstance(value, Mapping) else value
        )
    return patch


def reconciled_generation(outcome: PlanOutcome) -> int | None:
    """planner's generation a reconcile left the plan at: the one it recorded, else (it wrote nothing)
    the one the cluster is at."""
    current = outcome.changeset.generation if outcome.changeset is not None else None
    return outcome.generation or (current.number if current is not None else None)


def drift_corrected(outcome: PlanOutcome) -> int:
    """The drift a reconcile put back (`PlanOutcome.drift_corrected`)."""
    return outcome.drift_corrected


def verdict(attempt: Callable[..., Attempt], manifests: Sequence[Manifest], outcome: PlanOutcome) -> Attempt:
    """The reconcile's verdict on a Plan that rendered `manifests`. One that found nothing to write
    waited for every object of the plan that was not ready (`planner.unready`), so `unchanged` means
    converged, also after a generation that failed."""
    if outcome.result == "failed":
        return attempt(ready="False", reason=FAILED, message=outcome.message, error=outcome.message)
    applied = Applied(
        planner_generation=reconciled_generation(outcome),
        objects=objects_by_kind(manifests),
        drift_found=outcome.drift,
        drift_corrected=drift_corrected(outcome),
    )
    return attempt(ready="True", reason=SUCCEEDED, message=outcome.message, applied=applied)


def objects_by_kind(manifests: Sequence[Manifest]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for manifest in manifests:
        kind = str(manifest.get("kind", ""))
        counts[kind] = counts.get(kind, 0) + 1
    return counts


_KEPT = (
    "observedGeneration",
    "lastAppliedGeneration",
    "lastAppliedRevision",
    "lastAttemptedRevision",
    "lastHandledReconcileAt",
    "lastError",
    "inventory",
    "lastDrift",
)


def _source_kept(previous: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The previous `SourceReady` condition, as it was (a status that did not fetch says nothing new)."""
    found = condition(previous, SOURCE_READY)
    return [dict(found)] if found is not None else []


def _kept(previous: Mapping[str, Any]) -> Status:
    return {key: previous[key] for key in _KEPT if key in previous}


def _condition(
    previous: Mapping[str, Any],
    kind: str,
    truth: Truth,
    reason: str,
    message: str,
    generation: int,
    now: str,
) -> dict[str, Any]:
    before = condition(previous, kind)
    changed = before is None or before.get("status") != truth
    return {
        "type": kind,
        "status": truth,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": now if changed or before is None else before.get("lastTransitionTime", now),
    }


def conditions_differ(plan: Manifest, status: Mapping[str, Any]) -> bool:
    """Whether `status` says something else than the Plan's conditions do (transition times aside)."""

    def shown(conditions: object) -> list[tuple[Any, ...]]:
        items = conditions if isinstance(conditions, list) else []
        fields = ("type", "status", "reason", "message", "observedGeneration")
        return [tuple(each.get(field) for field in fields) for each in items]

    return shown((plan.get("status") or {}).get("conditions")) != shown(status.get("conditions"))


def now() -> str:
    """A condition's time: the current second, in UTC."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class StatusWriter:
    """Writes a Plan's status subresource, from the status the watch last showed (`cached`: a Plan by its
    key, None when the watch does not have it)."""

    def __init__(
        self, client: KubeClient, *, cached: Callable[[str], Manifest | None], notice: Callable[[str], None]
    ) -> None:
        self.client, self.cached, self.notice = client, cached, notice

    def write(self, plan: Manifest, status: Status) -> Manifest | None:
        """`status` as a merge patch of the status subresource, from the status the watch last showed (the
        whole `conditions` list at once); the Plan as written. A Plan deleted meanwhile has no status to
        write; other failures are said and the next reconcile writes again (None for both)."""
        previous = self._freshest(plan).get("status") or {}
        try:
            return patch_plan(
                self.client, plan_path(plan) + "/status", {"status": merge_patch(previous, status)}
            )
        except (ApiError, UnreachableError) as failure:
            if getattr(failure, "http_status", 0) != 404:
                self.notice(f"{source_name(object_key(plan))}: could not write its status: {failure}")
            return None

    def write_if_changed(self, plan: Manifest, status: Status) -> None:
        """`status`, unless the Plan's conditions already say the same (a Plan left as it is: suspended,
        or still waiting for the same dependencies)."""
        if conditions_differ(plan, status):
            self.write(plan, status)

    def finish(self, plan: Manifest, attempt: Attempt) -> None:
        """The status once `attempt` has ended, its transition times from the freshest status."""
        self.write(plan, finished(self._freshest(plan).get("status") or {}, attempt, now()))

    def _freshest(self, plan: Manifest) -> Manifest:
        return self.cached(object_key(plan)) or plan
