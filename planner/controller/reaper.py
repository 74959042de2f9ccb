"""The idle reaper: every resync, the `reap` key pauses (reason `idle`) each running sandbox of the
plans' namespaces idle past its `idleTimeout`, judged from the PVC watch cache."""

from __future__ import annotations

from collections.abc import Callable

from planner.controller.catalog import PlanCatalog
from planner.controller.prometheus import ControllerMetrics
from planner.controller.sandboxcaches import SandboxCaches
from planner.kube.client import KubeClient
from planner.monitor.pool_members import reap_idle


class Reaper:
    def __init__(
        self,
        client: KubeClient,
        catalog: PlanCatalog,
        caches: SandboxCaches,
        *,
        metrics: ControllerMetrics,
        notice: Callable[[str], None],
    ) -> None:
        self.client, self.catalog, self.caches = client, catalog, caches
        self.metrics, self.notice = metrics, notice

    def reap(self) -> bool:
        """Pause the idle sandboxes of each namespace none of whose plans is being reconciled now (the
        others at the next resync)."""
        reaped: list[str] = []
        for namespace in sorted(self.catalog.namespaces()):
            reaped += self._reap_unless_busy(namespace)
        for runtime_id in reaped:
            self.notice(f"{runtime_id}: paused (idle)")
        self.metrics.reaped.inc(len(reaped))
        return True

    def _reap_unless_busy(self, namespace: str) -> list[str]:
        claims = self.caches.claims_now({namespace})
        if not claims:  # no sandbox there (most Plans' namespaces): nothing to lock
            return []
        locks = [self.catalog.plan_lock(key) for key in self.catalog.keys_in(namespace)]
        taken = [lock for lock in locks if lock.acquire(blocking=False)]
        try:
            if len(taken) != len(locks):
                return []
            return reap_idle(self.client, claims, {namespace})
        finally:
            for lock in taken:
                lock.release()
