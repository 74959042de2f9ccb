"""The Plan watch's answers from its cache: which Plans wait for one that became Ready (`dependsOn`), and
which `dependsOn` lead back to the Plan itself (a cycle)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from planner.controller.planwatch import PlanWatch, dependency_cycle
from planner.kinds import PLAN, KindInfo
from planner.kube.informer import Informer
from planner.objects import Manifest
from planner.plan.reconcile_section import reconcile_section


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


def test_a_dependency_cycle_through_a_plan_is_found_shortest_first() -> None:
    edges = {"ca": ("db", "cb"), "cb": ("ca",), "db": ("cc",), "cc": ("ca",), "app": ("ca",)}

    def depends_on(name: str) -> tuple[str, ...]:
        return edges.get(name, ())

    assert dependency_cycle("ca", depends_on) == ["ca", "cb", "ca"]
    assert dependency_cycle("cc", depends_on) == ["cc", "ca", "db", "cc"]
    assert dependency_cycle("app", depends_on) is None  # it waits on a cycle, but is not in one
    assert dependency_cycle("self", lambda name: ("self",)) == ["self", "self"]
    assert dependency_cycle("web", lambda name: {"web": ("db",), "db": ("cache",)}.get(name, ())) is None


def test_a_plans_cycle_is_read_from_its_namespaces_plans_and_its_own_section() -> None:
    informer = CountingInformer(
        [
            plan("shop", "cb", ready=False, depends_on=("ca",)),
            plan("blog", "cb", ready=False),  # another namespace's cb: no cycle there
        ]
    )
    watch = PlanWatch(None, OneInformer(informer), namespace=None)  # type: ignore[arg-type]
    ca = plan("shop", "ca", ready=False, depends_on=("cb",))  # as the reconcile reads it, maybe newer
    other = plan("blog", "ca", ready=False, depends_on=("cb",))

    assert watch.dependency_cycle(ca, reconcile_section(ca)) == ["ca", "cb", "ca"]
    assert watch.dependency_cycle(other, reconcile_section(other)) is None
