"""monitor.state: each transition once, in order; skipped steps reported; stable event ids."""

from __future__ import annotations

import hashlib

import pytest

from planner.monitor.mapping import End, Observation
from planner.monitor.state import CREATED, WorkloadState, advance, event_id

STARTED = Observation(uid="u1", started_uid="u1", started_message="active 1")
EXITED = Observation(uid="u1", started_uid="u1", end=End(type="ContainerExited", message="0", uid="u1"))
GONE = Observation(end=End(type="ContainerDeleted", message="job is gone"))


def walk(*observations: Observation) -> list[tuple[str, str, str]]:
    """Show the observations to a fresh machine; the (type, message, uid) of every transition."""
    state, seen = CREATED, []
    for observation in observations:
        state, transitions = advance(state, observation)
        seen += [(t.type, t.message, t.uid) for t in transitions]
    return seen


@pytest.mark.parametrize(
    ("observations", "expected"),
    [
        ((STARTED,), [("ContainerStarted", "active 1", "u1")]),
        ((STARTED, STARTED, STARTED), [("ContainerStarted", "active 1", "u1")]),
        ((EXITED,), [("ContainerStarted", "", "u1"), ("ContainerExited", "0", "u1")]),
        (
            (STARTED, EXITED, EXITED, GONE),
            [("ContainerStarted", "active 1", "u1"), ("ContainerExited", "0", "u1")],
        ),
        (
            (STARTED, GONE),
            [("ContainerStarted", "active 1", "u1"), ("ContainerDeleted", "job is gone", "u1")],
        ),
        ((GONE,), [("ContainerDeleted", "job is gone", "")]),
        ((Observation(uid="u1"), Observation(uid="u1")), []),
        (
            (Observation(uid="d1", end=End(type="ContainerExited", message="0", uid="d1")),),
            [("ContainerExited", "0", "d1")],
        ),
        (
            (
                Observation(uid="ws", started_uid="pod-a", started_message="pod Ready"),
                Observation(uid="ws"),
                Observation(uid="ws", end=End(type="ContainerExited", message="paused")),
            ),
            [("ContainerStarted", "pod Ready", "pod-a"), ("ContainerExited", "paused", "pod-a")],
        ),
    ],
    ids=[
        "a started workload reports Started",
        "seeing it started again reports nothing more",
        "a job first seen already finished yields Started then Exited",
        "after the terminal Exited nothing is reported, not even the deletion",
        "a deletion after the start names the uid seen before",
        "a workload never seen and gone reports Deleted with an empty uid",
        "a created workload that proves nothing reports nothing",
        "a deployment first seen scaled to zero never ran: Exited alone",
        "a sandbox's pause names the pod that was started; the rebase gap in between is silent",
    ],
)
def test_transitions(observations: tuple[Observation, ...], expected: list[tuple[str, str, str]]) -> None:
    assert walk(*observations) == expected


@pytest.mark.parametrize(
    ("observation", "phase"),
    [
        (STARTED, "started"),
        (EXITED, "exited"),
        (GONE, "deleted"),
        (Observation(end=End(type="ContainerFailed", message="x", uid="u1")), "failed"),
    ],
    ids=["started is not terminal", "exited is terminal", "deleted is terminal", "failed is terminal"],
)
def test_phases(observation: Observation, phase: str) -> None:
    state, _ = advance(CREATED, observation)
    assert state.phase == phase
    assert state.terminal == (phase != "started")


def test_a_terminal_machine_never_moves() -> None:
    done = WorkloadState(phase="failed", uid="u1", started_uid="u1")
    assert advance(done, STARTED) == (done, ())


def test_event_id_is_sha256_of_runtime_id_uid_and_type() -> None:
    expected = hashlib.sha256(b"k8s-shop|job|etl\nu1\nContainerExited").hexdigest()
    assert event_id("k8s-shop|job|etl", "u1", "ContainerExited") == expected


def test_event_ids_differ_by_type_uid_and_runtime_id() -> None:
    ids = {
        event_id("k8s-shop|job|etl", "u1", "ContainerStarted"),
        event_id("k8s-shop|job|etl", "u1", "ContainerExited"),
        event_id("k8s-shop|job|etl", "u2", "ContainerExited"),
        event_id("k3s-shop|job|etl", "u1", "ContainerExited"),
    }
    assert len(ids) == 4
