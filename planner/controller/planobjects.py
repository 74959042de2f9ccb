"""Plan objects (`plans.planner.dev/v1`) as the controller's source of plans, when it runs without
`--plans`: the Plans its watch sees (`planwatch`), keyed `NAMESPACE/NAME`, each reconciled when it asks
for it (`reconciler`), when one of its objects drifts (`driftwatch`), again at the controller's
`--interval` or its own `reconcile.interval`; its warm pool members written as whom the Plan is
reconciled (`tenancy`). The Git sources of those that have one are shared by all of them
(`gitsources`), and a source's change queues its Plans.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from planner.app.reconciling import PlanOutcome
from planner.app.rendering import RenderedPlan
from planner.app.target import Target
from planner.controller.catalog import CatalogSnapshot, KeptPlan, PlanCatalog, Report
from planner.controller.driftwatch import DriftWatch
from planner.controller.finalizer import being_deleted
from planner.controller.gitsources import GitSources
from planner.controller.planref import object_key, source_name
from planner.controller.planwatch import PlanWatch
from planner.controller.reconciler import PlanReconciler
from planner.controller.recorder import POOL_FAILED_EVENT, EventRecorder
from planner.controller.settings import ControllerOptions
from planner.controller.tenancy import service_account_user
from planner.controller.viewmodels import Known
from planner.controller.workers import periodic_key, plan_key, pools_key
from planner.kube.client import KubeClient
from planner.kube.informer import Informer, Informers
from planner.objects import Manifest
from planner.plan.load import plan_object_source
from planner.plan.reconcile_section import reconcile_section
from planner.workqueue import WorkQueue


class PlanObjects:
    def __init__(
        self,
        target: Target,
        catalog: PlanCatalog,
        queue: WorkQueue[str],
        *,
        informers: Informers,
        options: ControllerOptions,
        recorder: EventRecorder,
        report: Report,
        notice: Callable[[str], None],
        stop: threading.Event,
        on_fetch: Callable[[bool], None] = lambda ok: None,
    ) -> None:
        self.target, self.catalog, self.queue, self.informers = target, catalog, queue, informers
        self.options, self.recorder, self.report, self.notice = options, recorder, report, notice
        self.stop = stop  # the reconcile in flight stops at it (shutdown, lost leadership)
        self.watch: PlanWatch | None = None
        self.reconciler: PlanReconciler | None = None
        self.drift = DriftWatch(
            informers,
            queue=lambda key, delay: queue.add_after(plan_key(key), delay),
            notice=notice,
            full_resync=options.full_resync,
        )
        self.sources = GitSources(
            queue_plans=self._queue_plans, notice=notice, paused=stop, on_fetch=on_fetch
        )

    def start(self) -> None:
        """Watch the Plan objects: each that asks for a reconcile is queued; a deleted one forgotten."""
        self.watch = PlanWatch(
            self.target.client,
            self.informers,
            namespace=self.options.watch_namespace,
            shard=self.options.shard,
        )
        self.reconciler = PlanReconciler(
            self.target,
            self.watch,
            self.informers,
            options=self.options.reconcile,
            tenancy=self.options.tenancy,
            recorder=self.recorder,
            sources=self.sources,
            notice=self.notice,
            stop=self.stop,
            drift=self.drift,
            drift_correction=self.options.drift_correction,
        )
        self.sources.start()
        self.watch.follow(lambda key: self.queue.add(plan_key(key)), self.forget)

    def forget(self, key: str) -> None:
        """The Plan is gone: its outcomes, its objects' drift watch and its share of a Git source."""
        self.catalog.forget(key)
        self.drift.untrack(key)
        self.sources.forget(key)

    def _queue_plans(self, keys: list[str]) -> None:
        for key in keys:
            self.queue.add(plan_key(key))

    def poll(self) -> None:
        """Nothing to poll: the watch queues the Plans."""

    def plan_keys(self, *, periodic: bool = False) -> list[str]:
        return self.watch.keys(periodic=periodic) if self.watch is not None else []

    def reconcile(self, key: str) -> bool:
        """Reconcile the Plan as it asks; keep its rendering (its pools are queued) or forget it (but the
        last good one of a Plan whose Git source failed); False to retry it after its backoff."""
        assert self.reconciler is not None
        plan = self.watch.get(key) if self.watch is not None else None
        if plan is not None and being_deleted(plan):
            self.catalog.drop(key)  # its pools are kept no more: the prune removes their spares
            with self.catalog.pools_lock(key):  # after a keeper in flight
                done = self.reconciler.reconcile(key)
        else:
            done = self.reconciler.reconcile(key)
        if done.rendered is None and not done.keep:
            self.catalog.drop(key)
        elif done.rendered is not None:
            self.catalog.put(key, KeptPlan(rendered=done.rendered))
            self.queue.add(pools_key(key))
        if done.again_after is not None:  # its own reconcile.interval
            self.queue.add_after(periodic_key(key), done.again_after)
        if done.outcome is not None:
            self.report(key, source_name(key), done.outcome)
        return not done.retry

    def reconcile_periodic(self, key: str) -> bool:
        """The Plan's periodic reconcile: from the watch caches, with no request, while they show it as
        applied and healthy (`PlanReconciler.unserved`); else a full reconcile."""
        assert self.reconciler is not None
        rendered = self.catalog.rendered(key)
        if rendered is None or self.reconciler.unserved(key) is not None:
            return self.reconcile(key)
        outcome = PlanOutcome(
            file=rendered.plan.source.file,
            plan=rendered.plan.name,
            namespace=rendered.namespace,
            result="unchanged",
            message=f"the cluster matches plan {rendered.plan.name} (from the watch caches)",
            finished=time.time(),
        )
        plan = self.watch.get(key) if self.watch is not None else None
        again = reconcile_section(plan).interval if plan is not None else None
        if again is not None:
            self.queue.add_after(periodic_key(key), again)
        self.report(key, source_name(key), outcome)
        return True

    def loaded(self, key: str) -> bool:
        """Whether the Plan rendered, or is suspended (nothing to render)."""
        return self.catalog.rendered(key) is not None or self._suspended(key)

    def _suspended(self, key: str) -> bool:
        plan = self.watch.get(key) if self.watch is not None else None
        return plan is not None and reconcile_section(plan).suspend

    def once_keys(self, timeout: float) -> tuple[list[str], bool]:
        """Every Plan, for one pass, once the watch has listed them (within `timeout` seconds)."""
        self.start()
        assert self.watch is not None
        self.watch.informer.wait_until_synced(timeout)
        return self.watch.keys(), True

    def writer(self, rendered: RenderedPlan) -> KubeClient:
        """Who writes a Plan's warm pool members: its ServiceAccount, as it is reconciled (docs/controller.md,
        "Multi-tenancy"), else the controller."""
        account = self.options.tenancy.account_of(rendered.plan.service_account_name)
        if account is None:
            return self.target.client
        return self.target.impersonating(service_account_user(rendered.namespace, account)).client

    def pool_failed(self, key: str, message: str) -> None:
        """A warm pool of the Plan could not be kept at its size: a Warning Event on the Plan says why
        (its Ready condition is about its own objects, which the pool's members are not)."""
        plan = self.watch.get(key) if self.watch is not None else None
        if plan is not None:
            self.recorder.on_plan(plan, POOL_FAILED_EVENT, message)

    def watches(self) -> tuple[Informer | None, ...]:
        """The watch of the Plans (None until started)."""
        return (self.watch.informer if self.watch is not None else None,)

    def known(self) -> list[Known]:
        """Every Plan in the watch cache, with its last outcomes."""
        if self.watch is None:
            return []
        kept = self.catalog.snapshot()
        return [_known(object_key(plan), plan, kept) for plan in self.watch.plans()]


def _known(key: str, plan: Manifest, kept: CatalogSnapshot) -> Known:
    namespace, _, name = key.partition("/")
    found = kept.plans.get(key)
    return Known(
        source=plan_object_source(namespace, name),
        name=name,
        namespace=namespace,
        rendered=found.rendered if found is not None else None,
        outcome=kept.outcomes.get(key),
        applied=kept.applied.get(key),
        plan_object=plan,
    )
