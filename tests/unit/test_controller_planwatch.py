"""The Plan watch's answers from its cache: which Plans wait for one that became Ready (`dependsOn`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from planner.controller.planwatch import PlanWatch
from planner.kinds import PLAN, KindInfo
from planner.kube.informer import Informer
from planner.objects import Manifest


class CountingInformer(Informer):
    """A Plan cache filled by hand (never started), which records the namespaces each read asked for."""

    def __init__(self, plans: list[Manifest]) -> None:
        super().__init__(None, PLAN)  # type: ignore[arg-type]  # no request is ever made
        self._replace(plans, "1")
        self.reads: list[list[str] | None] = []

    def items(self, namespaces: Iterable[str] | None = None) -> list[Manifest]:
        self.reads.append(None if namespaces is None else list(namespaces))
        return super().items(namespaces)


class OneInformer:
    def __init__(self, informer: Informer) -> None:
        self.given = informer

    def informer(self, kind: KindInfo, **_: Any) -> Informer:
        return self.given


def plan(namespace: str, name: str, *, ready: bool, depends_on: tuple[str, ...] = ()) -> Manifest:
    status = {
        "conditions": [{"type": "Ready", "status": "True" if ready else "False", "observedGeneration": 1}]
    }
    return {
        "apiVersion": "planner.dev/v1",
        "kind": "Plan",
        "metadata": {"namespace": namespace, "name": name, "generation": 1, "resourceVersion": "1"},
        "reconcile": {"dependsOn": [{"name": each} for each in depends_on]},
        "status": status,
    }


def test_a_ready_plan_wakes_the_unready_plans_of_its_namespace_that_depend_on_it() -> None:
    db = plan("shop", "db", ready=True)
    informer = CountingInformer(
        [
            db,
            plan("shop", "web", ready=False, depends_on=("db",)),
            plan("shop", "api", ready=True, depends_on=("db",)),  # Ready already: nothing to wake
            plan("shop", "cron", ready=False),  # waits for nothing
            plan("blog", "web", ready=False, depends_on=("db",)),  # another namespace's db
        ]
    )
    watch = PlanWatch(None, OneInformer(informer), namespace=None)  # type: ignore[arg-type]

    assert watch.dependents(db) == ["shop/web"]
    assert informer.reads == [["shop"]]  # its namespace's Plans only, not a scan of every Plan


def test_a_plan_not_ready_wakes_nobody_and_reads_nothing() -> None:
    db = plan("shop", "db", ready=False)
    informer = CountingInformer([db, plan("shop", "web", ready=False, depends_on=("db",))])
    watch = PlanWatch(None, OneInformer(informer), namespace=None)  # type: ignore[arg-type]

    assert watch.dependents(db) == []
    assert informer.reads == []
