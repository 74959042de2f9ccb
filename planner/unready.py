"""Which objects the plan leaves as they are but that are not ready (docs/design.md §4, "Ready").

A run's exit 0 means every object of the plan is ready, not only what it wrote: an apply retried after
a failed rollout must wait for the Deployment it does not write again, and fail with its reason if it
is still down. This judges each unchanged object that apply would wait for had it written it, by the
same rules (`planner.wait.readiness`), from the live copy the plan already read: an object that is
ready costs no request, and one that is not becomes a wait (`planner.graph`) and a count in `plan`.
Pure: the clock is an argument.
"""

from __future__ import annotations

import dataclasses

from planner import workloads
from planner.changeset import Change, ChangeSet
from planner.kinds import JOB, POD, renders
from planner.objects import ObjectRef
from planner.wait.readiness import Readiness, ReadinessContext, readiness

# The kinds planner renders whose readiness it waits for; the kinds it does not render (a raw
# manifest's) are waited for by their own rule or their Ready condition.
AWAITED_KINDS = frozenset({*(kind.api.kind for kind in workloads.KINDS if kind.awaited), POD.kind})


def awaited(ref: ObjectRef) -> bool:
    """Whether apply waits for this object to be ready once it exists."""
    return ref.kind in AWAITED_KINDS or not renders(ref.group_kind)


def why_unready(change: Change, now: float) -> str | None:
    """Why the live object of an unchanged, awaited object is not ready; None when it is ready, is
    not awaited, or is no plan object to wait for (kept, or a Job whose run-key already ran)."""
    verdict = _unready_verdict(change, now)
    return None if verdict is None else _reason(change, verdict)


def with_unready(changeset: ChangeSet, now: float) -> ChangeSet:
    """The ChangeSet with each unchanged object that is not ready marked with why (`Change.unready`),
    and whether it has failed (`Change.failed`)."""
    return dataclasses.replace(changeset, changes=tuple(_marked(change, now) for change in changeset.changes))


def _marked(change: Change, now: float) -> Change:
    verdict = _unready_verdict(change, now)
    if verdict is None:
        return change
    return dataclasses.replace(change, unready=_reason(change, verdict), failed=verdict.status == "Failed")


def _unready_verdict(change: Change, now: float) -> Readiness | None:
    if change.action != "noop" or change.desired is None or change.live is None:
        return None
    if change.transition is not None or not awaited(change.ref):
        return None
    verdict = readiness(change.live, ReadinessContext(now=now))
    if verdict.status in ("Current", "Terminating"):  # a terminating one is going: nothing to wait for
        return None
    return verdict


def _reason(change: Change, verdict: Readiness) -> str:
    if verdict.status == "Failed" and change.ref.kind == JOB.kind:
        return f"{verdict.message}; its run-key ran: change its template or pass --rerun {change.ref.name}"
    return verdict.message
