"""One execution plan: `plan --graph` prints the task list `apply` runs, made by the same function with
apply's defaults (each wait with its workload's own timeout, else apply's default of 5m)."""

from __future__ import annotations

from planner.app.planning import PlannedChanges, RenderedPlan, execution_plan
from planner.diff import diff
from planner.live import LiveState
from planner.render import render
from tests.unit.render_support import plan, workload


def planned() -> PlannedChanges:
    """A job `migrate` with a 2-minute timeout and a deployment `web` that depends on it, planned
    against a namespace that exists and holds nothing yet."""
    the_plan = plan(
        workloads=(
            workload("migrate", kind="job", timeout_seconds=120.0),
            workload("web", depends_on=("migrate",)),
        )
    )
    rendered = RenderedPlan(the_plan, "default", tuple(render(the_plan, "default")))
    live = LiveState(namespaces=frozenset({"shop"}))
    changes = diff(rendered.manifests, live, plan="shop", namespace="shop")
    return PlannedChanges(rendered, live, changes)


def test_the_graph_plan_prints_is_what_a_plain_apply_runs() -> None:
    assert planned().execution.as_text() == (
        """\
parent secret/shop/shop
create job/shop/migrate <- parent secret/shop/shop
record-run job/shop/migrate <- create job/shop/migrate
wait-ready job/shop/migrate [timeout 2m] <- create job/shop/migrate
create deployment/shop/web <- wait-ready job/shop/migrate
wait-ready deployment/shop/web [timeout 5m] <- create deployment/shop/web
"""
    )
    assert planned().execution == execution_plan(planned())


def test_apply_options_change_the_same_plan_no_wait_and_the_default_timeout() -> None:
    assert execution_plan(planned(), wait=False, timeout=30.0).as_text() == (
        """\
parent secret/shop/shop
create job/shop/migrate <- parent secret/shop/shop
record-run job/shop/migrate <- create job/shop/migrate
wait-ready job/shop/migrate [timeout 2m] <- create job/shop/migrate
create deployment/shop/web <- wait-ready job/shop/migrate
"""
    )
    assert "[timeout" not in execution_plan(planned(), timeout=None).as_text().replace("[timeout 2m]", "")
