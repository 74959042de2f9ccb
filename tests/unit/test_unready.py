"""`planner.unready`: which unchanged objects are not ready, judged from the live copy the plan read."""

from __future__ import annotations

from typing import Any

import pytest

from planner.changeset import Change, ChangeSet
from planner.kinds import CONFIG_MAP, DEPLOYMENT, JOB, PERSISTENT_VOLUME_CLAIM
from planner.objects import ObjectRef
from planner.unready import awaited, why_unready, with_unready

NOW = 1_800_000_000.0


def deployment(*, wanted: int, available: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "api", "namespace": "shop", "generation": 1},
        "spec": {"replicas": wanted},
        "status": {
            "observedGeneration": 1,
            "replicas": wanted,
            "updatedReplicas": wanted,
            "availableReplicas": available,
        },
    }


API = ObjectRef.of(DEPLOYMENT, "api", "shop")


def noop(live: dict[str, Any] | None, **fields: Any) -> Change:
    return Change(ref=API, action="noop", desired={"kind": "Deployment"}, live=live, **fields)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param(
            noop(deployment(wanted=2, available=0)), "available 0/2", id="a deployment with none available"
        ),
        pytest.param(noop(deployment(wanted=2, available=2)), None, id="a deployment rolled out"),
        pytest.param(
            Change(ref=API, action="update", desired={}, live=deployment(wanted=2, available=0)),
            None,
            id="an update is waited for as a write, not judged here",
        ),
        pytest.param(
            Change(ref=API, action="noop", desired=None, live=deployment(wanted=2, available=0)),
            None,
            id="a member kept out of the plan is not the plan's to wait for",
        ),
        pytest.param(
            noop(deployment(wanted=1, available=0), transition="already-ran"),
            None,
            id="a named transition is not judged",
        ),
    ],
)
def test_why_an_unchanged_object_is_not_ready(change: Change, expected: str | None) -> None:
    assert why_unready(change, NOW) == expected


FAILED_JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "migrate", "namespace": "shop"},
    "spec": {"completions": 1},
    "status": {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]},
}
JOB_FAILED = Change(
    ref=ObjectRef.of(JOB, "migrate", "shop"), action="noop", desired=FAILED_JOB, live=FAILED_JOB
)


def test_a_failed_job_is_not_ready_with_its_condition() -> None:
    assert why_unready(JOB_FAILED, NOW) == (
        "failed (complete 0/1): BackoffLimitExceeded; its run-key ran: change its template or pass --rerun migrate"
    )


def test_what_apply_waits_for_is_what_it_would_wait_for_after_a_write() -> None:
    assert awaited(API)
    assert awaited(ObjectRef.of(JOB, "migrate", "shop"))
    assert not awaited(ObjectRef.of(CONFIG_MAP, "web-config", "shop"))
    assert not awaited(ObjectRef.of(PERSISTENT_VOLUME_CLAIM, "data", "shop"))
    assert awaited(ObjectRef(group="policy", kind="PodDisruptionBudget", namespace="shop", name="db"))


def test_with_unready_marks_a_failed_job_as_failed_and_a_rollout_under_way_not() -> None:
    rolling = noop(deployment(wanted=2, available=1))
    marked = with_unready(ChangeSet(plan="shop", namespace="shop", changes=(JOB_FAILED, rolling)), NOW)
    assert [(c.unready is not None, c.failed) for c in marked.changes] == [(True, True), (True, False)]


def test_with_unready_marks_only_the_objects_that_are_not_ready() -> None:
    down, up = noop(deployment(wanted=2, available=1)), noop(deployment(wanted=1, available=1))
    marked = with_unready(ChangeSet(plan="shop", namespace="shop", changes=(down, up)), NOW)
    assert [c.unready for c in marked.changes] == ["available 1/2", None]
    assert marked.has_work and not marked.has_changes
