"""The controller's plan catalog: which plans render into a namespace and which carry a name, kept as
plans come, change namespace, stop rendering and go."""

from __future__ import annotations

from planner.app.rendering import RenderedPlan
from planner.controller.catalog import KeptPlan, PlanCatalog
from tests.unit.render_support import plan


def kept(name: str, namespace: str) -> KeptPlan:
    return KeptPlan(rendered=RenderedPlan(plan(name=name, namespace=namespace), "default", ()))


def test_plans_are_found_by_namespace_and_by_name() -> None:
    catalog = PlanCatalog()
    catalog.put("shop/web", kept("web", "shop"))
    catalog.put("shop/db", kept("db", "shop"))
    catalog.put("blog/web", kept("web", "blog"))
    catalog.put("broken/x", KeptPlan(rendered=None, problem="does not load"))

    assert catalog.namespaces() == {"shop", "blog"}
    assert catalog.keys_in("shop") == ["shop/db", "shop/web"]
    assert catalog.keys_in("nowhere") == []
    assert catalog.keys_named("web") == ["blog/web", "shop/web"]
    assert catalog.keys_named(None) == []  # a member without the annotation


def test_a_plan_moved_dropped_or_forgotten_leaves_the_indexes() -> None:
    catalog = PlanCatalog()
    catalog.put("a.yaml", kept("web", "shop"))
    catalog.put("b.yaml", kept("api", "shop"))

    catalog.put("a.yaml", kept("site", "blog"))  # its file now names another plan, in another namespace
    assert catalog.keys_in("shop") == ["b.yaml"]
    assert catalog.keys_in("blog") == ["a.yaml"]
    assert catalog.keys_named("web") == []
    assert catalog.keys_named("site") == ["a.yaml"]

    catalog.drop("b.yaml")  # no longer renders
    assert catalog.namespaces() == {"blog"}
    assert catalog.keys_named("api") == []

    catalog.put("b.yaml", kept("api", "shop"))
    assert catalog.retain({"b.yaml"}) == {"b.yaml": kept("api", "shop")}
    assert catalog.namespaces() == {"shop"}
    assert catalog.keys_named("site") == []

    catalog.forget("b.yaml")
    assert catalog.namespaces() == set()
