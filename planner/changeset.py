"""The ChangeSet: which objects change, how, and why — the types `diff` produces and every later stage
reads (`graph.solve` orders them, `plan` prints them, a saved plan records them).

They live below `diff` so the modules that refine a diff's result (sandbox transitions, data-loss
checks) can name them without importing the diff itself; `planner.diff` re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from planner.objects import Manifest, ObjectRef
from planner.state.applyset import CurrentGeneration, RunRecord

Action = Literal["create", "update", "replace", "delete", "noop"]
Transition = Literal["pause", "resume", "rebase", "fork", "already-ran", "adopt"]
Cause = Literal["drift", "pending"]

SENSITIVE = "(sensitive)"


@dataclass(frozen=True, kw_only=True)
class FieldChange:
    """One declared field that differs: `path` like `.spec.template.spec.containers[name=web].image`.

    `before` is None when the live object lacks the field, `after` None when the plan drops it. `manager`
    names another field manager that owns the live value (drift by `kubectl edit`, or a takeover). A
    takeover of a field whose value does not change has `before == after`. Secret values never appear:
    they read `(sensitive)`.
    """

    path: str
    before: Any
    after: Any
    manager: str | None = None
    # `file:line:column` of the plan value that set `after`, when one did (`planner.provenance`).
    origin: str | None = None

    @property
    def is_takeover(self) -> bool:
        return self.manager is not None and self.before == self.after


@dataclass(frozen=True, kw_only=True)
class Change:
    ref: ObjectRef
    action: Action
    # Hidden from repr: a Secret's manifests hold its values, and a repr ends up in logs and tracebacks.
    desired: Manifest | None = field(repr=False)
    live: Manifest | None = field(repr=False)
    fields: tuple[FieldChange, ...] = ()
    reason: str = ""
    transition: Transition | None = None
    drift: bool = False  # the cluster moved away from what was applied (see `cause`)
    # With `drift`: the plan changed too, so the change is both (someone edited a field the plan
    # declares, and the plan changed since the last apply): counted as drift and as pending.
    pending_too: bool = False
    owner: str | None = None  # the workload or sandbox of the plan this object belongs to, if any
    # Why the live object is not ready, for an object the plan leaves as it is (`planner.unready`):
    # apply waits for it as for one it writes, and `plan` counts it as work.
    unready: str | None = None
    # With `unready`: the live object has failed (a Job's Failed condition), which no wait changes: its
    # wait fails at once, `--no-wait` or not, and skips what depends on it.
    failed: bool = False
    # What the plan declares that this change does not make so, and planner does not write (a
    # StatefulSet's existing claims smaller than its template now): the plan says so rather than that
    # the cluster matches.
    unmet: str | None = None

    @property
    def cause(self) -> Cause | None:
        """Why a change is there: `drift` (the cluster moved away from what was applied) or `pending`
        (the plan changed since the last apply; also when it both drifted and is pending, which
        `causes` tells); None for a no-op."""
        if self.action == "noop":
            return None
        return "drift" if self.drift and not self.pending_too else "pending"

    @property
    def causes(self) -> tuple[Cause, ...]:
        """Every cause of the change: `("drift", "pending")` for one that is both."""
        if self.action == "noop":
            return ()
        return ("drift", "pending") if self.pending_too else (self.cause or "pending",)


@dataclass(frozen=True, kw_only=True)
class ValueChange:
    """One chart value that differs from what the applied generation recorded: `path` like
    `.controller.replicaCount`; `before` None when it was not set, `after` None when it no longer is. A
    `secret` one (of `secretValues`) holds neither value: only that it changed."""

    path: str
    before: Any
    after: Any
    origin: str | None = None  # `file:line:column` that set `after` (the plan, an environment, a values file)
    secret: bool = False


@dataclass(frozen=True, kw_only=True)
class ChartChange:
    """A chart of the plan whose inputs changed since the applied generation (`planner.provenance`):
    its version, its values, and the objects it renders that the plan changes (and those it rendered
    then that the plan deletes), or a chart the plan no longer has, with the objects it rendered then
    that the plan deletes. `recorded` is False for a
    generation recorded before charts' values were (then `values` is empty: nothing to compare)."""

    name: str
    version_before: str | None  # None: the applied generation had no such chart (it is new)
    version_after: str | None  # None: the plan no longer has it (it is removed)
    values: tuple[ValueChange, ...] = ()
    recorded: bool = True
    objects: tuple[Change, ...] = field(default=(), repr=False)

    @property
    def handle(self) -> str:
        return f"chart/{self.name}"


@dataclass(frozen=True, kw_only=True)
class ChangeSet:
    plan: str
    namespace: str
    changes: tuple[Change, ...]
    # Ownership conflicts, one sentence each: a planned object exists without this plan's label, or a
    # Secret that is not the plan's ApplySet parent holds the parent's name.
    conflicts: tuple[str, ...] = ()
    # Runs of the closure's Jobs found live whose run-key the parent does not record as ran (an apply
    # killed between a Job's create and its record): the next parent write records them.
    unrecorded: tuple[RunRecord, ...] = ()
    # Whether `--allow-data-loss` was given: printers say so next to the changes that destroy data, and
    # `dataloss.refuse_data_loss` refuses those changes without it.
    allow_data_loss: bool = False
    # The generation the cluster is at, as the plan's parent names it (None: no apply recorded yet).
    generation: CurrentGeneration | None = None
    # The digest key the closure's config-hash annotations were made with, when the parent holds none
    # yet: the parent write keeps it, so the next plan digests with the same key. Never printed.
    digest_key: bytes | None = field(default=None, repr=False)
    # The charts whose version or values changed since the applied generation, each with the objects
    # it changed (`planner.provenance.with_chart_changes`).
    charts: tuple[ChartChange, ...] = ()

    @property
    def has_changes(self) -> bool:
        return any(change.action != "noop" for change in self.changes)

    @property
    def unready(self) -> tuple[Change, ...]:
        """The unchanged objects that are not ready: apply waits for them, with the same rules and
        timeouts as for what it writes."""
        return tuple(change for change in self.changes if change.unready is not None)

    @property
    def unmet(self) -> tuple[Change, ...]:
        """The objects where the cluster differs from the plan in ways apply does not change."""
        return tuple(change for change in self.changes if change.unmet is not None)

    @property
    def has_work(self) -> bool:
        """Whether apply has anything to do: a change to write, or an unchanged object to wait for."""
        return self.has_changes or bool(self.unready)

    def caused_by(self, cause: Cause) -> tuple[Change, ...]:
        """The changes of one cause: `caused_by("drift")` is what someone moved outside the plan."""
        return tuple(change for change in self.changes if cause in change.causes)
