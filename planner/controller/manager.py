"""`planner controller`'s parts wired together and run: keeps every plan reconciled, its warm pools full
and its idle sandboxes paused, until SIGTERM.

The plans come from one source: the files under `--plans` (`planfiles`), or without it the Plan objects
in the cluster (`planobjects`: all namespaces, or `-n`'s; with `--shard KEY` only those labelled
`planner.dev/shard=KEY`, without it only those with no such label). `--concurrent` workers take their
keys off one work queue (`workers`): a plan's reconcile, its pools (`warmpools`) and the reaper
(`reaper`). A ticker queues them: every plan each `--interval` (the files are polled every `--poll`
seconds, and a changed one queued at once), the pools and the reaper each `--resync`, and all of them
when this replica becomes the leader.

With `--leader-elect` (`leader`), only the leader takes keys off the queue; a reconcile in flight is
stopped from starting further writes the moment leadership is lost. Shutdown (SIGTERM): readiness goes
503, each worker finishes the write in flight (the executor starts no new task), the Lease is
released, exit 0.
"""

from __future__ import annotations

import secrets
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from planner.app.reconciling import PlanOutcome
from planner.app.target import Target
from planner.controller.catalog import PlanCatalog
from planner.controller.health import HealthServer, Heartbeat, Hook, Probes
from planner.controller.hooks import Hooks
from planner.controller.leader import LeaderElector
from planner.controller.planfiles import PlanFiles
from planner.controller.planobjects import PlanObjects
from planner.controller.prometheus import ControllerMetrics
from planner.controller.reaper import Reaper
from planner.controller.recorder import EventRecorder
from planner.controller.sandboxcaches import SandboxCaches
from planner.controller.settings import ControllerOptions
from planner.controller.sharding import lease_name
from planner.controller.warmpools import PoolKeeper
from planner.controller.web import WebView
from planner.controller.workers import REAP, Workers, periodic_key, plan_key, pools_key
from planner.kube.client import KubeClient
from planner.kube.informer import InformerOptions, Informers, Scope
from planner.workqueue import WorkQueue

Notice = Callable[[str], None]


def identity() -> str:
    """This replica's name in the Lease and in metrics: `<host>_<random>`, as controller-runtime does."""
    return f"{socket.gethostname()}_{secrets.token_hex(4)}"


class Controller:
    def __init__(self, target: Target, options: ControllerOptions, *, notice: Notice) -> None:
        self.options, self.notice = options, notice
        self.client = target.client
        self.identity = identity()
        default_namespace = target.default_namespace()
        self.queue = WorkQueue[str]()
        self.catalog = PlanCatalog()
        self.stopping = threading.Event()
        self.run_stop = threading.Event()  # stops the reconcile in flight (shutdown, lost leadership)
        # One watch per kind for the whole process: the pools, the reaper, the web view and every
        # reconcile's waits share them (a reconcile starts none of its own).
        self.informers = Informers(
            self.client,
            shared_scope=Scope(_shared_namespaces(options)),
            options=InformerOptions(on_failure=notice),
        )
        self.caches = SandboxCaches(self.client)
        self.elector = _elector(self.client, options, self.identity, default_namespace)
        self.metrics = ControllerMetrics(
            self.caches.snapshot, depth=self.queue.depth, in_flight=self.queue.processing
        )
        self.metrics.leader.labels(identity=self.identity).set(0)
        self.ticks = Heartbeat("the plan-file loop")
        self.source = self._source(target, default_namespace)
        self.pools = PoolKeeper(
            self.catalog,
            self.queue,
            self.caches,
            writer=self.source.writer,
            may_write=lambda: self.leading() and not self.stopping.is_set(),
            notice=notice,
            failed=self.source.pool_failed,
        )
        reaper = Reaper(self.client, self.catalog, self.caches, metrics=self.metrics, notice=notice)
        self.workers = Workers(
            self.queue,
            count=options.concurrent,
            handlers={
                "plan": self._reconcile,
                "periodic": self._reconcile_periodic,
                "pools": self._maintain_pools,
                REAP: lambda _: reaper.reap(),
            },
            leading=self.leading,
            stopping=self.stopping,
            notice=notice,
        )
        self.probes = Probes(
            informers=lambda: (*self.caches.informers(), *self.source.watches()),
            loops=(self.ticks, *self.workers.beats),
            progress_deadline=options.progress_deadline,
            stopping=self.stopping,
            leading=self.leading,
            election_healthy=lambda: self.elector is None or self.elector.healthy(),
        )
        self.web = WebView(
            self.client,
            self.caches,
            identity=self.identity,
            leading=self.leading,
            known=self.source.known,
            timeout=options.reconcile.apply.timeout,
            notice=notice,
        )
        self.hooks = self._hooks(default_namespace)
        self.health: HealthServer | None = None
        # Without an election it leads from the start, and its sources queue every plan themselves (the
        # Plan informer's first list, the first scan of --plans, the first resync): no second pass.
        self._was_leading = self.elector is None

    def _source(self, target: Target, default_namespace: str) -> PlanFiles | PlanObjects:
        recorder = EventRecorder(self.client, identity=self.identity, notice=self.notice)
        if self.options.plans:
            return PlanFiles(
                self.options.plans,
                self.catalog,
                self.queue,
                target=target,
                default_namespace=default_namespace,
                informers=self.informers,
                options=self.options.reconcile,
                recorder=recorder,
                metrics=self.metrics,
                report=self._report,
                notice=self.notice,
                stop=self.run_stop,
                ticks=self.ticks,
            )
        return PlanObjects(
            target,
            self.catalog,
            self.queue,
            informers=self.informers,
            options=self.options,
            recorder=recorder,
            report=self._report,
            notice=self.notice,
            stop=self.run_stop,
            on_fetch=self.metrics.count_fetch,
        )

    def _hooks(self, namespace: str) -> Hook | None:
        """The webhook receiver (`--hooks-secret`), in the controller's namespace."""
        if not self.options.hooks_secret or not isinstance(self.source, PlanObjects):
            return None
        hooks = Hooks(
            self.client,
            namespace=self.options.lease_namespace or namespace,
            secret_name=self.options.hooks_secret,
            fetch_now=self.source.sources.fetch_now,
            notice=self.notice,
        )
        return hooks.answer

    def leading(self) -> bool:
        return self.elector is None or self.elector.leading()

    # --- running ---

    def run(self) -> int:
        """Run until `stop()`; the exit code (0 after a graceful shutdown)."""
        self.health = HealthServer(
            self.options.listen,
            healthz=self.probes.healthz,
            readyz=self.probes.readyz,
            registry=self.metrics.registry,
            pages=self.web.page,
            web_listen=self.options.web_listen,
            hooks=self.hooks,
        ).start()
        web = "" if self.options.web_listen is None else f" on {self.health.web_address}"
        self.notice(
            f"serving /healthz, /readyz and /metrics on {self.health.address} (and the read-only web view "
            f"at /{web})"
        )
        self.caches.start(self.informers, self.pools.on_member_event)
        self.source.start()
        if self.elector is not None:
            self.elector.start()
        self.source.poll()
        self.workers.start()
        try:
            self._tick_until_stopped()
        finally:
            self._drain(self.health)
        return 0

    def stop(self) -> None:
        self.stopping.set()

    def _drain(self, health: HealthServer) -> None:
        self.stopping.set()
        self.run_stop.set()
        self.notice("draining: /readyz answers 503; stopping the work in flight")
        self.queue.shut_down()
        self.workers.join()
        if self.elector is not None:
            self.elector.release()
        self.informers.stop()
        self.notice("drained: the work in flight has ended and every lock is released; exiting")
        health.stop()

    def _tick_until_stopped(self) -> None:
        now = time.monotonic()
        next_interval, next_resync = now + self.options.interval, now
        while not self.stopping.wait(min(self.options.poll, 0.5)):
            self.ticks.beat()
            self._follow_leadership()
            self.source.poll()
            now = time.monotonic()
            if now >= next_interval:
                next_interval = now + self.options.interval
                self._queue_plans(periodic=True)
            if now >= next_resync:
                next_resync = now + self.options.resync
                self._queue_pools()
                self.queue.add(REAP)

    def _follow_leadership(self) -> None:
        leading = self.leading()
        self.metrics.leader.labels(identity=self.identity).set(1 if leading else 0)
        if leading and not self._was_leading:
            if self.elector is not None:
                self.notice(f"{self.identity} leads")
            self.run_stop.clear()
            self._queue_plans()
            self._queue_pools()
            self.queue.add(REAP)
        elif not leading and self._was_leading:
            self.notice(f"{self.identity} lost the lead: no further writes")
            self.run_stop.set()
        self._was_leading = leading

    def _queue_plans(self, *, periodic: bool = False) -> None:
        for key in self.source.plan_keys(periodic=periodic):
            self.queue.add(periodic_key(key) if periodic else plan_key(key))

    def _queue_pools(self) -> None:
        for key in self.pools.keys_to_keep():
            self.queue.add(pools_key(key))

    def _reconcile(self, key: str) -> bool:
        with self.catalog.plan_lock(key):
            return self.source.reconcile(key)

    def _maintain_pools(self, key: str) -> bool:
        with self.catalog.pools_lock(key):
            return self.pools.maintain(key)

    def _reconcile_periodic(self, key: str) -> bool:
        with self.catalog.plan_lock(key):
            return self.source.reconcile_periodic(key)

    def _report(self, key: str, name: str, outcome: PlanOutcome) -> None:
        self.catalog.record(key, outcome)
        self.metrics.count(outcome)
        self.notice(f"{name}: plan {outcome.plan}: {outcome.result}: {outcome.message}")

    # --- once ---

    def run_once(self) -> int:
        """One pass without serving, as if alone (no leader election: a cron job's run is serialised by
        the plans' run locks): every plan reconciled and its pools maintained (`--concurrent` plans at
        once), idle ones reaped; exit 0 when everything succeeded, 1 otherwise."""
        self.elector = None
        keys, ok = self.source.once_keys(self.options.progress_deadline)
        with ThreadPoolExecutor(self.options.concurrent, thread_name_prefix="controller-once") as pool:
            ok &= all(pool.map(self._once, keys))
        ok &= self.workers.process(REAP)
        self.informers.stop()
        return 0 if ok else 1

    def _once(self, key: str) -> bool:
        reconciled = self.workers.process(plan_key(key))
        loaded = self.source.loaded(key)
        return self.workers.process(pools_key(key)) and reconciled and loaded


def _shared_namespaces(options: ControllerOptions) -> frozenset[str] | None:
    """The namespaces every watch covers: `-n`'s for Plan objects, else all (plan files render anywhere)."""
    return frozenset({options.watch_namespace}) if options.watch_namespace and not options.plans else None


def _elector(
    client: KubeClient, options: ControllerOptions, identity: str, default_namespace: str
) -> LeaderElector | None:
    if not options.leader_elect:
        return None
    return LeaderElector(
        client,
        namespace=options.lease_namespace or default_namespace,
        identity=identity,
        timings=options.timings,
        name=lease_name(options.shard),
    )
