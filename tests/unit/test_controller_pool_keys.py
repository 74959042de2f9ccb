"""Which plans' `pools:` keys a resync queues: those with warm pools, and those with members left to
remove; not every plan (10,000 no-op keys every resync at 10,000 Plans)."""

from __future__ import annotations

from typing import Any

from planner.app.rendering import RenderedPlan
from planner.controller.catalog import KeptPlan, PlanCatalog
from planner.controller.sandboxcaches import SandboxCaches
from planner.controller.warmpools import PoolKeeper
from planner.kinds import PERSISTENT_VOLUME_CLAIM
from planner.kube.informer import Informer
from planner.objects import Manifest
from planner.plan.model import WarmPool
from planner.workqueue import WorkQueue
from tests.unit.render_support import plan


def claim(namespace: str, plan_name: str, pool: str) -> Manifest:
    return {
        "metadata": {
            "namespace": namespace,
            "name": "dev-1-workspace",
            "resourceVersion": "1",
            "labels": {"planner.dev/pool": pool},
            "annotations": {"planner.dev/plan": plan_name},
        }
    }


def keeper(claims: list[Manifest] | None) -> tuple[PoolKeeper, PlanCatalog]:
    """A keeper whose claims cache holds `claims` (None: the cache has not synced)."""
    catalog = PlanCatalog()
    caches = SandboxCaches(None)  # type: ignore[arg-type]  # no request is made
    caches.claims = Informer(None, PERSISTENT_VOLUME_CLAIM)  # type: ignore[arg-type]
    if claims is not None:
        caches.claims._replace(claims, "1")
    nothing: Any = None
    keeper = PoolKeeper(catalog, WorkQueue[str](), caches, writer=nothing, may_write=nothing, notice=nothing)
    return keeper, catalog


def kept(name: str, namespace: str, *, pools: tuple[WarmPool, ...] = ()) -> KeptPlan:
    return KeptPlan(
        rendered=RenderedPlan(plan(name=name, namespace=namespace, warm_pools=pools), "default", ())
    )


def test_a_resync_queues_the_plans_with_pools_or_members_left() -> None:
    pool = WarmPool(name="dev", size=1, template=None)  # type: ignore[arg-type]  # not read here
    pools, catalog = keeper([claim("lab", "old", "dev"), claim("shop", "other", "dev")])
    catalog.put("lab/pooled", kept("pooled", "lab", pools=(pool,)))
    catalog.put("lab/old", kept("old", "lab"))  # declares no pool, but its member is still there
    catalog.put("shop/web", kept("web", "shop"))  # another plan's member in its namespace: not its
    catalog.put("blog/web", kept("web", "blog"))
    catalog.put("broken/x", KeptPlan(rendered=None, problem="does not load"))

    assert sorted(pools.keys_to_keep()) == ["lab/old", "lab/pooled"]


def test_before_the_claims_cache_syncs_every_rendered_plan_is_queued() -> None:
    pools, catalog = keeper(None)
    catalog.put("shop/web", kept("web", "shop"))
    catalog.put("broken/x", KeptPlan(rendered=None, problem="does not load"))

    assert pools.keys_to_keep() == ["shop/web"]
