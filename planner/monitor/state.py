"""The per-runtime-ID state machine (gobrave's ContainerManager): Created → Started → Exited | Failed |
Deleted, each transition reported once and in order. Pure: a state and an observation in, the next
state and the transitions to report out.

Observations are levels, not edges: the monitor may show the machine the same workload many times
(every watch event, the snapshot after registering, a relist), so a transition already made is never
made again and a machine never moves backwards. A workload first seen further along reports the steps
it skipped, in order — a Job first seen already finished yields Started, then Exited — but only the
steps the look proves: a Deployment first seen scaled to zero never ran, so it reports Exited alone.

Event ids (docs/design.md §5) are sha256 of the runtime ID, the uid of the object the event is about and the
event type, so a restarted monitor that re-reports a transition gives it the same id and consumers of
the at-least-once stream can drop the repeat.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Literal

from planner.workloads.observation import EndType, Observation

Phase = Literal["created", "started", "exited", "failed", "deleted"]
EventType = Literal["ContainerStarted", "ContainerExited", "ContainerFailed", "ContainerDeleted"]

_PHASE_OF_END: dict[EndType, Phase] = {
    "ContainerExited": "exited",
    "ContainerFailed": "failed",
    "ContainerDeleted": "deleted",
}
TERMINAL: frozenset[Phase] = frozenset(_PHASE_OF_END.values())


def event_id(runtime_id: str, uid: str, event_type: str) -> str:
    """sha256 hex of `<runtime ID>\\n<object uid>\\n<event type>` (the uid is empty when never seen)."""
    return hashlib.sha256(f"{runtime_id}\n{uid}\n{event_type}".encode()).hexdigest()


@dataclass(frozen=True, kw_only=True)
class Transition:
    """One event to report: its type, message, and the uid its id is made from."""

    type: EventType
    message: str
    uid: str
    exit_code: int | None = None
    at: float | None = None  # when it happened by the objects' own timestamps; None: as it is seen

    def event_id(self, runtime_id: str) -> str:
        return event_id(runtime_id, self.uid, self.type)


@dataclass(frozen=True, kw_only=True)
class WorkloadState:
    """Where one runtime ID is; `uid` is the last uid of the workload's own object seen, `started_uid`
    that of the object whose start was reported (a sandbox's Pod)."""

    phase: Phase = "created"
    uid: str = ""
    started_uid: str = ""

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL


CREATED = WorkloadState()


def advance(state: WorkloadState, seen: Observation) -> tuple[WorkloadState, tuple[Transition, ...]]:
    """The next state and the transitions `seen` proves, in order; nothing once terminal."""
    if state.terminal:
        return state, ()
    state = replace(state, uid=seen.uid or state.uid)
    transitions: list[Transition] = []
    if state.phase == "created" and seen.started_uid is not None:
        state = replace(state, phase="started", started_uid=seen.started_uid)
        transitions.append(
            Transition(
                type="ContainerStarted",
                message=seen.started_message,
                uid=seen.started_uid,
                at=seen.started_at,
            )
        )
    if seen.end is not None:
        uid = seen.end.uid if seen.end.uid is not None else (state.started_uid or state.uid)
        state = replace(state, phase=_PHASE_OF_END[seen.end.type])
        end = seen.end
        transitions.append(
            Transition(type=end.type, message=end.message, uid=uid, exit_code=end.exit_code, at=end.at)
        )
    return state, tuple(transitions)
