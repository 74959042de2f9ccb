"""What `unlock` says: whose lock it removed, or why it will not remove one without `--force`."""

from __future__ import annotations

from planner.app import LockState


def _plan(state: LockState) -> str:
    return state.described


def _not_locked(state: LockState) -> str:
    missing = " (no such plan: it has no ApplySet parent Secret)" if not state.exists else ""
    return f"{_plan(state)} is not locked{missing}"


def unlocked_line(state: LockState) -> str:
    """After `unlock --force`: the holder removed, or that there was no lock."""
    if state.holder is None or state.now is None:
        return _not_locked(state)
    return f"removed the lock of {_plan(state)} held by {state.holder.described(state.now)}"


def refusal_line(state: LockState) -> str:
    """`unlock` without `--force`: who holds the lock, and why breaking it needs the flag."""
    if state.holder is None or state.now is None:
        return _not_locked(state)
    return (
        f"{_plan(state)} is locked by {state.holder.described(state.now)}; that run may still be writing. "
        f"If it is dead, its lock expires {state.holder.seconds}s after its last renewal; to break it now, "
        "re-run with --force"
    )


__all__ = ["refusal_line", "unlocked_line"]
