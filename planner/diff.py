"""Desired against live: which objects change, how, and why (DESIGN §4). Pure: no I/O.

The ChangeSet is what `plan` prints, what a saved plan records and what `graph.solve` orders. Its types
are defined first so the later stages can rely on them; the comparison itself follows below them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Manifest = dict[str, Any]
Action = Literal["create", "update", "replace", "delete", "noop"]
Transition = Literal["pause", "resume", "rebase", "fork", "already-ran", "adopt"]


@dataclass(frozen=True, kw_only=True, order=True)
class ObjectRef:
    """One object's identity; printed as DESIGN §5's `<kind>/<namespace>/<name>` (lower-case kind)."""

    group: str
    kind: str
    namespace: str | None
    name: str

    def __str__(self) -> str:
        scope = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind.lower()}/{scope}{self.name}"


@dataclass(frozen=True, kw_only=True)
class FieldChange:
    """One declared field that differs: `path` like `.spec.template.spec.containers[name=web].image`.

    `before` is None when the live object lacks the field, `after` None when the plan drops it. `manager`
    names another field manager that owns the live value (drift by `kubectl edit`, or a takeover).
    """

    path: str
    before: Any
    after: Any
    manager: str | None = None


@dataclass(frozen=True, kw_only=True)
class Change:
    ref: ObjectRef
    action: Action
    desired: Manifest | None
    live: Manifest | None
    fields: tuple[FieldChange, ...] = ()
    reason: str = ""
    transition: Transition | None = None
    drift: bool = False
    owner: str | None = None  # the workload or sandbox of the plan this object belongs to, if any


@dataclass(frozen=True, kw_only=True)
class ChangeSet:
    plan: str
    namespace: str
    changes: tuple[Change, ...]

    @property
    def has_changes(self) -> bool:
        return any(change.action != "noop" for change in self.changes)
