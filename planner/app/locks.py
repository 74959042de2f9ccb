"""`unlock`: who holds a plan's run lock, and breaking it when its holder is known to be dead. The lock
itself (taking, renewing, releasing, expiry) is `planner.state.runlock`'s."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from planner.app.selector import PlanRef, selected_plan
from planner.app.target import Target
from planner.errors import PlannerError
from planner.kinds import SECRET
from planner.live import get_or_none
from planner.state.applyset import parent_ref
from planner.state.runlock import Holder, break_lock, read_holder


@dataclass(frozen=True, kw_only=True)
class LockState:
    """A plan's lock as read: `holder` None when nobody holds it; `now` is the server's clock; `exists`
    False when the plan has no ApplySet parent either (it was never applied, or the name is wrong)."""

    plan: str
    namespace: str
    holder: Holder | None
    now: datetime | None = None
    exists: bool = True

    @property
    def described(self) -> str:
        return f"plan {self.plan} (namespace {self.namespace})"


def _state(ref: PlanRef, held: tuple[Holder, datetime] | None, target: Target) -> LockState:
    holder, now = held if held is not None else (None, None)
    exists = held is not None or _exists(ref, target)
    return LockState(plan=ref.name, namespace=ref.namespace, holder=holder, now=now, exists=exists)


def _exists(ref: PlanRef, target: Target) -> bool:
    parent = parent_ref(ref.name, ref.namespace)
    return get_or_none(target.client, SECRET, parent.namespace, parent.name) is not None


def lock_state(plan: str, *, target: Target) -> LockState:
    """Who holds the lock of the plan `plan` selects (a plan file, `NAME` in `-n`'s namespace, `NS/NAME`)."""
    ref = selected_plan(plan, target=target)
    return _state(ref, read_holder(target.client, ref.name, ref.namespace), target)


def unlock(plan: str, *, target: Target) -> LockState:
    """Delete the lock of the plan `plan` selects whoever holds it; the state says whom it removed. A
    plan that is not locked, or does not exist, is an error that says which."""
    ref = selected_plan(plan, target=target)
    state = _state(ref, break_lock(target.client, ref.name, ref.namespace), target)
    if state.holder is None:
        missing = "does not exist (no ApplySet parent Secret) and " if not state.exists else ""
        raise PlannerError(f"{state.described} {missing}is not locked: there is no lock to break")
    return state


__all__ = ["LockState", "lock_state", "unlock"]
