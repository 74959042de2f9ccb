"""`unlock`: who holds a plan's run lock, and breaking it when its holder is known to be dead. The lock
itself (taking, renewing, releasing, expiry) is `planner.lock`'s."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from planner.app.target import Target
from planner.lock import Holder, break_lock, read_holder


@dataclass(frozen=True, kw_only=True)
class LockState:
    """A plan's lock as read: `holder` None when nobody holds it; `now` is the server's clock."""

    plan: str
    namespace: str
    holder: Holder | None
    now: datetime | None = None


def lock_state(plan: str, *, target: Target) -> LockState:
    """Who holds the lock of `plan` in the target's namespace (`-n`, else the context's)."""
    namespace = target.default_namespace()
    held = read_holder(target.client, plan, namespace)
    holder, now = held if held is not None else (None, None)
    return LockState(plan=plan, namespace=namespace, holder=holder, now=now)


def unlock(plan: str, *, target: Target) -> LockState:
    """Delete the lock of `plan` whoever holds it; the state says whom it removed (None: no lock)."""
    namespace = target.default_namespace()
    removed = break_lock(target.client, plan, namespace)
    holder, now = removed if removed is not None else (None, None)
    return LockState(plan=plan, namespace=namespace, holder=holder, now=now)


__all__ = ["LockState", "lock_state", "unlock"]
