"""Warm pools kept at their size: a plan's `pools:` key brings each pool it declares to its size (and
creates again the Pod an unclaimed member lost) and deletes the unclaimed members of pools it no longer
declares. Queued every resync and at once by the watch: any event on a pool-labelled PVC or Pod (a
claim, a lost member) queues the pools of the plan that made it."""

from __future__ import annotations

from collections.abc import Callable

from planner.app.rendering import RenderedPlan
from planner.controller.catalog import PlanCatalog
from planner.controller.sandboxcaches import SandboxCaches
from planner.controller.workers import pools_key
from planner.errors import ApiError, PlannerError, UnreachableError
from planner.kube.client import KubeClient
from planner.kube.informer import EventType
from planner.monitor.pool_members import maintain_pool, remove_undeclared_pools
from planner.objects import ANNOTATION_PLAN, LABEL_POOL, Manifest, annotations_of, labels_of
from planner.sandboxes.pool_sizing import PoolChanges
from planner.workqueue import WorkQueue


class PoolKeeper:
    def __init__(
        self,
        catalog: PlanCatalog,
        queue: WorkQueue[str],
        caches: SandboxCaches,
        *,
        writer: Callable[[RenderedPlan], KubeClient],
        may_write: Callable[[], bool],
        notice: Callable[[str], None],
        failed: Callable[[str, str], None] = lambda key, message: None,
    ) -> None:
        self.catalog, self.queue, self.caches = catalog, queue, caches
        self.writer = writer  # who writes a plan's members (`tenancy`)
        self.may_write = may_write  # leading, and not shutting down
        self.notice = notice
        self.failed = failed  # (plan key, why): told on the plan (an Event on a Plan object)

    def on_member_event(self, kind: EventType, obj: Manifest) -> None:
        """A pool member changed: queue the pools of the plan that made it."""
        if LABEL_POOL not in labels_of(obj):
            return
        for key in self.catalog.keys_named(annotations_of(obj).get(ANNOTATION_PLAN)):
            self.queue.add(pools_key(key))

    def keys_to_keep(self) -> list[str]:
        """The plans whose `pools:` key has work to judge: those declaring warm pools, and those whose
        namespace holds members they made (to remove undeclared ones). Queueing every plan each resync
        made 10,000 no-op keys every 30 s at 10,000 Plans."""
        claims = self.caches.claims
        cached = claims is not None and claims.synced and not claims.failed
        kept = []
        for key, plan in self.catalog.plans().items():
            rendered = plan.rendered
            if rendered is None:
                continue
            if rendered.plan.warm_pools or not cached or self._members_of(rendered):
                kept.append(key)
        return kept

    def _members_of(self, rendered: RenderedPlan) -> bool:
        """Whether the claims cache holds a pool member the plan made in its namespace."""
        claims = self.caches.claims
        members = claims.items([rendered.namespace]) if claims is not None else []
        return any(
            LABEL_POOL in labels_of(claim)
            and annotations_of(claim).get(ANNOTATION_PLAN) == rendered.plan.name
            for claim in members
        )

    def maintain(self, key: str) -> bool:
        """Bring the plan's pools to their size, and remove the ones it no longer declares."""
        rendered = self.catalog.rendered(key)
        if rendered is None:
            return True
        plan = rendered.plan
        client = self.writer(rendered)
        for pool in plan.warm_pools:
            if not self.may_write():
                return True
            try:
                changes = maintain_pool(client, plan, pool, default_namespace=rendered.default_namespace)
            except (ApiError, UnreachableError, PlannerError) as refused:
                self.failed(key, f"warm pool {pool.name} is not kept at its size {pool.size}: {refused}")
                raise
            if changes.create or changes.delete or changes.repair:
                self.notice(f"pool {pool.name} (plan {plan.name}): {_changed(changes)}")
        claims = self.caches.claims_now({rendered.namespace})
        remove_undeclared_pools(client, plan, claims, default_namespace=rendered.default_namespace)
        return True


def _changed(changes: PoolChanges) -> str:
    repaired = f", repaired {', '.join(changes.repair)} (its Pod was gone)" if changes.repair else ""
    return f"created {len(changes.create)}, deleted {len(changes.delete)}{repaired}"
