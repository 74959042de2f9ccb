"""The controller's per-Plan reconcile counter: one series per namespace and name, hand-fed outcomes."""

from __future__ import annotations

from planner.app.reconciling import PlanOutcome
from planner.controller.prometheus import ControllerMetrics
from planner.controller.reconciler import failed_outcome


def outcome(namespace: str, name: str, result: str) -> PlanOutcome:
    return PlanOutcome(file=f"plan/{name} -n {namespace}", plan=name, namespace=namespace, result=result)  # type: ignore[arg-type]


def reconciles(metrics: ControllerMetrics, namespace: str, plan: str, result: str) -> float | None:
    labels = {"namespace": namespace, "plan": plan, "result": result}
    return metrics.registry.get_sample_value("planner_reconcile_total", labels)


def test_plans_of_one_name_in_two_namespaces_are_two_series() -> None:
    metrics = ControllerMetrics(lambda: ([], []), depth=lambda: 0)
    for each in (outcome("team-a", "web", "applied"), outcome("team-b", "web", "applied")):
        metrics.count(each)
    metrics.count(outcome("team-a", "web", "unchanged"))
    metrics.count_unloadable("plans/broken.yaml")

    assert reconciles(metrics, "team-a", "web", "applied") == 1.0
    assert reconciles(metrics, "team-b", "web", "applied") == 1.0
    assert reconciles(metrics, "team-a", "web", "unchanged") == 1.0
    assert reconciles(metrics, "team-b", "web", "unchanged") is None
    assert reconciles(metrics, "", "plans/broken.yaml", "failed") == 1.0


def test_a_plan_that_fails_before_its_reconcile_is_a_failed_outcome_of_it() -> None:
    plan = {
        "apiVersion": "planner.dev/v1",
        "kind": "Plan",
        "metadata": {"name": "web", "namespace": "team-a"},
    }

    failed = failed_outcome(plan, "refused by the controller's lockdown, nothing written: …")

    assert (failed.file, failed.plan, failed.namespace, failed.result) == (
        "plan/web -n team-a",
        "web",
        "team-a",
        "failed",
    )
    assert failed.message == "refused by the controller's lockdown, nothing written: …"
