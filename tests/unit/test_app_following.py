"""apply --watch after a partial failure: which runtime IDs the monitor follows (everything written or
already current, failed waits included) and which it does not (skipped for a failed dependency, or a
failed write), from hand-built execution results."""

from __future__ import annotations

from typing import Literal

from planner.app.apply import followed_after
from planner.app.applying import AppliedPlan
from planner.app.planning import PlannedChanges, RenderedPlan
from planner.diff import diff
from planner.execute import ExecutionResult, OutcomeStatus, TaskOutcome
from planner.live import LiveState
from planner.render import render
from planner.render.identity import RuntimeID
from tests.unit.render_support import plan, workload


def planned() -> PlannedChanges:
    the_plan = plan(
        workloads=(
            workload("migrate", kind="job"),
            workload("web", depends_on=("migrate",)),
            workload("api"),
            workload("broken"),
        )
    )
    rendered = RenderedPlan(the_plan, "default", tuple(render(the_plan, "default")))
    live = LiveState(namespaces=frozenset({"shop"}))
    return PlannedChanges(rendered, live, diff(rendered.manifests, live, plan="shop", namespace="shop"))


OUTCOMES: dict[str, tuple[OutcomeStatus, str | None]] = {
    "wait-ready job/shop/migrate": ("failed", None),
    "create deployment/shop/web": ("skipped", "wait-ready job/shop/migrate"),
    "wait-ready deployment/shop/web": ("skipped", "wait-ready job/shop/migrate"),
    "create deployment/shop/broken": ("failed", None),
    "wait-ready deployment/shop/broken": ("skipped", "create deployment/shop/broken"),
}


def applied() -> AppliedPlan:
    each = planned()
    outcomes = tuple(
        TaskOutcome(
            task=task.id,
            ref=task.ref,
            status=OUTCOMES.get(task.id, ("done", None))[0],
            message="",
            because=OUTCOMES.get(task.id, ("done", None))[1],
        )
        for task in each.execution.tasks
    )
    return AppliedPlan(each, each.execution, ExecutionResult(outcomes=outcomes))


def rid(kind: Literal["deployment", "job", "sandbox"], name: str) -> RuntimeID:
    return RuntimeID(runtime="k8s", namespace="shop", kind=kind, name=name)


def test_a_failed_job_and_an_independent_deployment_are_followed_and_the_skipped_dependent_is_not() -> None:
    followed, not_followed = followed_after([applied()])
    assert followed == [rid("job", "migrate"), rid("deployment", "api")]
    assert [(n.runtime_id, n.outcome.task, n.because) for n in not_followed] == [
        (rid("deployment", "web"), "create deployment/shop/web", "wait-ready job/shop/migrate"),
        (rid("deployment", "broken"), "create deployment/shop/broken", "create deployment/shop/broken"),
    ]


def test_a_converged_plan_is_followed_whole() -> None:
    each = planned()
    done = tuple(TaskOutcome(task=t.id, ref=t.ref, status="done", message="") for t in each.execution.tasks)
    followed, not_followed = followed_after(
        [AppliedPlan(each, each.execution, ExecutionResult(outcomes=done))]
    )
    assert followed == [
        rid("job", "migrate"),
        rid("deployment", "web"),
        rid("deployment", "api"),
        rid("deployment", "broken"),
    ]
    assert not_followed == []
