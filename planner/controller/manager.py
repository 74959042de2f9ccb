"""`planner controller`: the long-running half. Keeps every plan reconciled, its warm pools full and its
idle sandboxes paused, until SIGTERM. The plans are the files under `--plans`, or without it the Plan
objects in the cluster (all namespaces, or `-n`'s; with `--shard KEY` only those labelled
`planner.dev/shard=KEY`, without it only those with no such label; `planobjects`), keyed
`NAMESPACE/NAME`: reconciled when the watch shows one asking for it, their outcome in their status and
in Events on them.

Three kinds of work key go through one rate-limited work queue (`workqueue`), taken by `--concurrent`
workers; the queue never hands a key to two workers at once, so different plans reconcile in parallel
and one plan never twice at once (and its run lock keeps other processes out):

- `plan:<file>` reconciles the plan as `planner reconcile` does (`reconcile_plan`: under its run lock,
  so a controller and a cron `reconcile` or a person's `apply` never interleave), then records an
  Event on its ApplySet parent Secret (`Reconciled`, `DriftCorrected`, `ReconcileFailed`). Queued every
  `--interval`, when the file's content or that of a secret file it reads (`valueFrom.file`) changes
  (polled every `poll` seconds; a file is read again only then) and when this replica becomes the
  leader. A failure is retried with a per-key backoff; `locked` is retried the same way.
- `pools:<file>` brings each of the plan's warm pools to its size and deletes the unclaimed members of
  pools it no longer declares. Queued every resync and at once by the watch: any event on a
  pool-labelled PVC or Pod (a claim, a lost member) from the informers.
- `reap` pauses the idle sandboxes of the plans' namespaces; every resync.

With `--leader-elect`, only the leader takes keys off the queue; a reconcile in flight is stopped from
starting further writes the moment leadership is lost. Shutdown (SIGTERM): readiness goes 503, each
worker finishes the write in flight (the executor starts no new task), the Lease is released, exit 0.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from planner.app.history import list_generations
from planner.app.reconciling import PlanOutcome, reconcile_plan
from planner.app.rendering import RenderedPlan, render_loaded
from planner.app.target import Target, secret_refs
from planner.controller import pages
from planner.controller.health import HealthServer, Heartbeat
from planner.controller.leader import LeaderElector
from planner.controller.planref import object_key, source_name
from planner.controller.planwatch import PlanWatch
from planner.controller.prometheus import ControllerMetrics
from planner.controller.reconciler import PlanReconciler
from planner.controller.recorder import EventRecorder
from planner.controller.settings import ControllerOptions
from planner.controller.sharding import lease_name
from planner.controller.tenancy import service_account_user
from planner.controller.viewmodels import Known, addressed_plan, overview, plan_view
from planner.errors import ApiError, PlannerError, UnreachableError
from planner.kinds import PERSISTENT_VOLUME_CLAIM, POD
from planner.kube.client import KubeClient
from planner.kube.informer import EventType, Informer, Informers, Scope
from planner.monitor.pools import listed_claims, maintain_pool, reap_idle, remove_undeclared_pools
from planner.objects import ANNOTATION_PLAN, LABEL_POOL, Manifest, annotations_of, labels_of
from planner.plan import load_plans
from planner.plan.limits import read_capped
from planner.plan.load import find_plan_files, plan_object_source
from planner.plan.manifests import manifest_files
from planner.plan.reconcile_section import reconcile_section
from planner.plan.secrets import secret_files
from planner.workqueue import WorkQueue

Notice = Callable[[str], None]
REAP = "reap"


@dataclass
class _PlanFile:
    digest: str
    rendered: RenderedPlan | None
    problem: str = ""
    inputs: tuple[
        Path, ...
    ] = ()  # the secret and manifest files it reads: a change to one is a change to the plan


def _digest(path: Path, inputs: tuple[Path, ...]) -> str:
    """sha256 over the plan file and each secret file it reads, each read as a plan file is (regular
    files only, never past the size limit, a FIFO never waited on). One that cannot be read counts as
    its error, so it is reported once, and its coming back (or another error) is a change too."""
    digest = hashlib.sha256()
    for each in (path, *inputs):
        digest.update(b"\0" + os.fsencode(each) + b"\0")
        try:
            digest.update(b"\1" + read_capped(each)[1])
        except OSError as error:
            digest.update(b"\2" + str(error).encode())
    return digest.hexdigest()


def identity() -> str:
    """This replica's name in the Lease and in metrics: `<host>_<random>`, as controller-runtime does."""
    return f"{socket.gethostname()}_{secrets.token_hex(4)}"


class Controller:
    def __init__(self, target: Target, options: ControllerOptions, *, notice: Notice) -> None:
        self.target, self.options, self.notice = target, options, notice
        self.client = target.client
        self.default_namespace = target.default_namespace()
        self.identity = identity()
        self.queue = WorkQueue[str]()
        self.files: dict[str, _PlanFile] = {}
        self.outcomes: dict[str, PlanOutcome] = {}  # each plan's last reconcile, for the web view
        self.applied: dict[str, PlanOutcome] = {}  # and its last that wrote something
        self.files_lock = threading.Lock()
        # A plan's reconcile and the reaping of its namespace never run at once (the reaper pausing a
        # sandbox the apply waits for would hold the apply until its timeout). Pools need no such care:
        # the reaper never pauses an unclaimed member, and pools never touch a claimed one.
        self.plan_locks: dict[str, threading.Lock] = {}
        self.stopping = threading.Event()
        self.run_stop = threading.Event()  # stops the reconcile in flight (shutdown, lost leadership)
        # One watch per kind for the whole process: the pools, the reaper, the web view and every
        # reconcile's waits share them (a reconcile starts none of its own).
        shared = (
            frozenset({options.watch_namespace}) if options.watch_namespace and not options.plans else None
        )
        self.informers = Informers(self.client, shared_scope=Scope(shared))
        self.claims: Informer | None = None
        self.pods: Informer | None = None
        self.plan_objects: PlanWatch | None = None
        self.reconciler: PlanReconciler | None = None
        self.recorder = EventRecorder(self.client, identity=self.identity, notice=notice)
        self.elector = (
            LeaderElector(
                self.client,
                namespace=options.lease_namespace or self.default_namespace,
                identity=self.identity,
                timings=options.timings,
                name=lease_name(options.shard),
            )
            if options.leader_elect
            else None
        )
        self.metrics = ControllerMetrics(
            self._snapshot, depth=self.queue.depth, in_flight=self.queue.processing
        )
        self.metrics.leader.labels(identity=self.identity).set(0)
        self.health: HealthServer | None = None
        # Without an election it leads from the start, and its sources queue every plan themselves (the
        # Plan informer's first list, the first scan of --plans, the first resync): no second pass.
        self._was_leading = self.elector is None
        self.ticks = Heartbeat("the plan-file loop")
        self.workers = [Heartbeat(f"worker {number + 1}") for number in range(options.concurrent)]

    # --- probes ---

    def _informers(self) -> tuple[Informer | None, ...]:
        objects = self.plan_objects.informer if self.plan_objects is not None else None
        return (self.claims, self.pods, *((objects,) if not self.options.plans else ()))

    def healthz(self) -> tuple[bool, str]:
        failed = [i.describe() for i in self._informers() if i is not None and i.failed]
        if failed:
            return False, f"informers failed: {', '.join(failed)}"
        for loop in (self.ticks, *self.workers):
            stalled = loop.stalled(self.options.progress_deadline)
            if stalled is not None:
                return False, stalled
        return True, "ok"

    def readyz(self) -> tuple[bool, str]:
        if self.stopping.is_set():
            return False, "shutting down"
        if not all(i is not None and i.synced for i in self._informers()):
            return False, "informers not synced"
        if self.elector is not None and not self.elector.healthy():
            return False, "leader election: no contact with the Lease"
        return True, "leading" if self.leading() else "standing by"

    def leading(self) -> bool:
        return self.elector is None or self.elector.leading()

    # --- running ---

    def run(self) -> int:
        """Run until `stop()`; the exit code (0 after a graceful shutdown)."""
        self.health = HealthServer(
            self.options.listen,
            healthz=self.healthz,
            readyz=self.readyz,
            registry=self.metrics.registry,
            pages=self.page,
            web_listen=self.options.web_listen,
        ).start()
        web = "" if self.options.web_listen is None else f" on {self.health.web_address}"
        self.notice(
            f"serving /healthz, /readyz and /metrics on {self.health.address} (and the read-only web view "
            f"at /{web})"
        )
        self.claims = self.informers.informer(PERSISTENT_VOLUME_CLAIM)
        self.pods = self.informers.informer(POD)
        for informer in (self.claims, self.pods):
            informer.subscribe(self._on_event)
        if not self.options.plans:
            self.follow_plan_objects()
        if self.elector is not None:
            self.elector.start()
        self.refresh_plans()
        workers = [
            threading.Thread(
                target=self._work, args=(beat,), name=f"controller-{beat.name.replace(' ', '-')}", daemon=True
            )
            for beat in self.workers
        ]
        for worker in workers:
            worker.start()
        try:
            self._tick_until_stopped()
        finally:
            self.stopping.set()
            self.run_stop.set()
            self.notice("draining: /readyz answers 503; stopping the work in flight")
            self.queue.shut_down()
            for worker in workers:
                worker.join()
            if self.elector is not None:
                self.elector.release()
            self.informers.stop()
            self.notice("drained: the work in flight has ended and every lock is released; exiting")
            self.health.stop()
        return 0

    def stop(self) -> None:
        self.stopping.set()

    def _tick_until_stopped(self) -> None:
        now = time.monotonic()
        next_interval, next_resync = now + self.options.interval, now
        while not self.stopping.wait(min(self.options.poll, 0.5)):
            self.ticks.beat()
            self._follow_leadership()
            self.refresh_plans()
            now = time.monotonic()
            if now >= next_interval:
                next_interval = now + self.options.interval
                self._enqueue_all("plan", periodic=True)
            if now >= next_resync:
                next_resync = now + self.options.resync
                self._enqueue_all("pools")
                self.queue.add(REAP)

    def _follow_leadership(self) -> None:
        leading = self.leading()
        self.metrics.leader.labels(identity=self.identity).set(1 if leading else 0)
        if leading and not self._was_leading:
            if self.elector is not None:
                self.notice(f"{self.identity} leads")
            self.run_stop.clear()
            self._enqueue_all("plan")
            self._enqueue_all("pools")
            self.queue.add(REAP)
        elif not leading and self._was_leading:
            self.notice(f"{self.identity} lost the lead: no further writes")
            self.run_stop.set()
        self._was_leading = leading

    def _enqueue_all(self, kind: str, *, periodic: bool = False) -> None:
        with self.files_lock:
            keys = list(self.files)
        if kind == "plan" and self.plan_objects is not None:
            keys = self.plan_objects.keys(periodic=periodic)
        for key in keys:
            self.queue.add(f"{kind}:{key}")

    # --- Plan objects ---

    def follow_plan_objects(self) -> None:
        """Watch the Plan objects: each that asks for a reconcile is queued; a deleted one forgotten."""
        self.plan_objects = PlanWatch(
            self.client, self.informers, namespace=self.options.watch_namespace, shard=self.options.shard
        )
        self.reconciler = PlanReconciler(
            self.target,
            self.plan_objects,
            self.informers,
            options=self.options.reconcile,
            tenancy=self.options.tenancy,
            recorder=self.recorder,
            notice=self.notice,
            stop=self.run_stop,
        )

        def forget(key: str) -> None:
            with self.files_lock:
                self.files.pop(key, None)
                self.outcomes.pop(key, None)
                self.applied.pop(key, None)

        self.plan_objects.follow(lambda key: self.queue.add(f"plan:{key}"), forget)

    def reconcile_object(self, key: str) -> bool:
        assert self.reconciler is not None
        done = self.reconciler.reconcile(key)
        with self.files_lock:
            if done.rendered is None:
                self.files.pop(key, None)
            else:
                self.files[key] = _PlanFile(digest="", rendered=done.rendered)
        if done.rendered is not None:
            self.queue.add(f"pools:{key}")
        if done.again_after is not None:  # its own reconcile.interval
            self.queue.add_after(f"plan:{key}", done.again_after)
        outcome = done.outcome
        if outcome is not None:
            self._count(key, outcome)
        return not done.retry

    def _suspended(self, key: str) -> bool:
        plan = self.plan_objects.get(key) if self.plan_objects is not None else None
        return plan is not None and reconcile_section(plan).suspend

    def _count(self, key: str, outcome: PlanOutcome) -> None:
        with self.files_lock:
            self.outcomes[key] = outcome
            if outcome.result == "applied":
                self.applied[key] = outcome
        name = source_name(key) if self.plan_objects is not None else key
        self.metrics.reconciles.labels(plan=outcome.plan, result=outcome.result).inc()
        self.metrics.duration.observe(outcome.duration)
        self.notice(f"{name}: plan {outcome.plan}: {outcome.result}: {outcome.message}")

    # --- plan files ---

    def refresh_plans(self) -> None:
        """Read every plan file under `--plans`; queue a reconcile (and its pools) for each that is new
        or whose content changed; forget the ones that went."""
        if not self.options.plans:
            return
        found = {str(f): f for f in find_plan_files(self.options.plans)}
        with self.files_lock:
            for gone in set(self.files) - set(found):
                del self.files[gone]
                self.outcomes.pop(gone, None)
                self.applied.pop(gone, None)
            known = dict(self.files)
        for name, path in found.items():
            previous = known.get(name)
            inputs = previous.inputs if previous else ()
            self.ticks.beat(f"reading {name}")
            digest = _digest(path, inputs)
            if previous is not None and previous.digest == digest:
                continue
            loaded = self._load(path, digest)
            if loaded.inputs != inputs:  # the file names other secret files now: watch those
                loaded = dataclasses.replace(loaded, digest=_digest(path, loaded.inputs))
            with self.files_lock:
                self.files[name] = loaded
            if loaded.problem:
                self.notice(f"{name}: {loaded.problem}")
                self.metrics.reconciles.labels(plan=name, result="failed").inc()
                continue
            self.queue.add(f"plan:{name}")
            self.queue.add(f"pools:{name}")

    def _load(self, path: Path, digest: str) -> _PlanFile:
        inputs = secret_files(path) + manifest_files(path)
        try:
            loaded = load_plans([path], secret_refs=secret_refs(self.target))
            (rendered,) = render_loaded(loaded, self.default_namespace)
        except (PlannerError, ValueError) as broken:
            return _PlanFile(digest=digest, rendered=None, problem=str(broken), inputs=inputs)
        return _PlanFile(digest=digest, rendered=rendered, inputs=inputs)

    def rendered(self, file: str) -> RenderedPlan | None:
        with self.files_lock:
            found = self.files.get(file)
        return found.rendered if found else None

    def namespaces(self) -> set[str]:
        with self.files_lock:
            return {f.rendered.namespace for f in self.files.values() if f.rendered is not None}

    # --- the web view ---

    def known_plans(self) -> list[Known]:
        """Every plan this controller keeps, with its last outcome: the plan files (one that does not
        load with its problem), or the Plan objects in the watch cache."""
        with self.files_lock:
            files, outcomes, applied = dict(self.files), dict(self.outcomes), dict(self.applied)
        if self.plan_objects is not None:
            return [
                self._known_object(key, plan, files.get(key), outcomes.get(key), applied.get(key))
                for key, plan in ((object_key(p), p) for p in self.plan_objects.plans())
            ]
        return [
            self._known_file(name, loaded, outcomes.get(name), applied.get(name))
            for name, loaded in files.items()
        ]

    def _known_file(
        self, name: str, loaded: _PlanFile, outcome: PlanOutcome | None, applied: PlanOutcome | None
    ) -> Known:
        rendered = loaded.rendered
        if rendered is None:
            return Known(source=name, name=Path(name).name, namespace="", problem=loaded.problem)
        return Known(
            source=name,
            name=rendered.plan.name,
            namespace=rendered.namespace,
            rendered=rendered,
            outcome=outcome,
            applied=applied,
        )

    def _known_object(
        self,
        key: str,
        plan: Manifest,
        loaded: _PlanFile | None,
        outcome: PlanOutcome | None,
        applied: PlanOutcome | None,
    ) -> Known:
        namespace, _, name = key.partition("/")
        return Known(
            source=plan_object_source(namespace, name),
            name=name,
            namespace=namespace,
            rendered=loaded.rendered if loaded is not None else None,
            outcome=outcome,
            applied=applied,
            plan_object=plan,
        )

    def page(self, path: str) -> str | None:
        """The web view's page at `path` (`/`, `/plans/<namespace>/<name>`); None for no such page.
        The index reads nothing from the API; a plan's page lists its generations (one request)."""
        claims, pods = self._snapshot()
        if path == "/":
            return pages.index_page(overview(self.identity, self.leading(), self.known_plans(), claims, pods))
        wanted = addressed_plan(path)
        found = [k for k in self.known_plans() if (k.namespace, k.name) == wanted]
        if not found:
            return None
        known = found[0]
        try:
            generations = (
                list_generations(self.client, known.name, known.namespace) if known.namespace else []
            )
        except (ApiError, UnreachableError) as failure:
            self.notice(f"web view: the generations of plan {known.name}: {failure}")
            generations = []
        timeout = self.options.reconcile.apply.timeout
        view = plan_view(known, claims, pods, generations=generations, with_objects=True, timeout=timeout)
        return pages.plan_page(view)

    # --- the watch ---

    def _on_event(self, kind: EventType, obj: Manifest) -> None:
        if LABEL_POOL not in labels_of(obj):
            return
        plan = annotations_of(obj).get(ANNOTATION_PLAN)
        with self.files_lock:
            owners = [
                n for n, f in self.files.items() if f.rendered is not None and f.rendered.plan.name == plan
            ]
        for file in owners:
            self.queue.add(f"pools:{file}")

    def _snapshot(self) -> tuple[list[Manifest], list[Manifest]]:
        claims = self.claims.items() if self.claims is not None and self.claims.synced else []
        pods = self.pods.items() if self.pods is not None and self.pods.synced else []
        return claims, pods

    # --- the workers ---

    def _work(self, beat: Heartbeat) -> None:
        while True:
            beat.beat()
            key = self.queue.get(timeout=0.5)
            beat.beat(key or "")
            if key is None:
                if self.stopping.is_set():
                    return
                continue
            try:
                if not self.leading():
                    self.queue.forget(key)  # the leader does it; queued again if this one leads
                    continue
                ok = self.process(key)
            finally:
                self.queue.done(key)
            if ok:
                self.queue.forget(key)
            elif not self.stopping.is_set():
                self.queue.retry(key)

    def process(self, key: str) -> bool:
        """Do one key's work; False to retry it after its backoff."""
        kind, _, file = key.partition(":")
        try:
            if kind == "plan":
                with self._plan_lock(file):
                    return self.reconcile(file)
            if kind == "pools":
                return self.maintain_pools(file)
            if key == REAP:
                return self.reap()
        except (ApiError, UnreachableError, PlannerError) as failure:
            self.notice(f"{key}: {failure}")
            return False
        return True

    def reconcile(self, file: str) -> bool:
        if self.plan_objects is not None:
            return self.reconcile_object(file)
        rendered = self.rendered(file)
        if rendered is None:
            return True  # broken or gone: its problem was said when it was read
        outcome = reconcile_plan(
            rendered,
            target=self.target,
            options=self.options.reconcile,
            notice=self.notice,
            stop=self.run_stop,
            informers=self.informers,
        )
        self._count(file, outcome)
        if outcome.result != "locked":
            self.recorder.on_applyset(outcome)
        return outcome.result not in ("failed", "locked")

    def maintain_pools(self, file: str) -> bool:
        rendered = self.rendered(file)
        if rendered is None:
            return True
        plan = rendered.plan
        client = self.client_for(rendered)
        for pool in plan.warm_pools:
            if not self.leading() or self.stopping.is_set():
                return True
            changes = maintain_pool(client, plan, pool, default_namespace=rendered.default_namespace)
            if changes.create or changes.delete or changes.repair:
                repaired = (
                    f", repaired {', '.join(changes.repair)} (its Pod was gone)" if changes.repair else ""
                )
                self.notice(
                    f"pool {pool.name} (plan {plan.name}): created {len(changes.create)}, "
                    f"deleted {len(changes.delete)}{repaired}"
                )
        claims = self.claims_now({rendered.namespace})
        remove_undeclared_pools(client, plan, claims, default_namespace=rendered.default_namespace)
        return True

    def client_for(self, rendered: RenderedPlan) -> KubeClient:
        """Who writes a plan's warm pool members: a Plan object's ServiceAccount when it is reconciled as
        one (docs/controller.md, "Multi-tenancy"), else the controller."""
        account = self.options.tenancy.account_of(rendered.plan.service_account_name)
        if self.options.plans or account is None:
            return self.client
        return self.target.impersonating(service_account_user(rendered.namespace, account)).client

    def claims_now(self, namespaces: set[str]) -> list[Manifest]:
        """The PVCs of `namespaces` from the watch cache (no request), or listed when there is none
        (`--once`) or it has not synced yet."""
        if self.claims is not None and self.claims.synced:
            return self.claims.items()
        return listed_claims(self.client, namespaces)

    def _plan_lock(self, key: str) -> threading.Lock:
        with self.files_lock:
            return self.plan_locks.setdefault(key, threading.Lock())

    def reap(self) -> bool:
        """Pause the idle sandboxes of each namespace none of whose plans is being reconciled now (the
        others at the next resync)."""
        reaped: list[str] = []
        for namespace in sorted(self.namespaces()):
            with self.files_lock:
                keys = [k for k, f in self.files.items() if f.rendered and f.rendered.namespace == namespace]
            locks = [self._plan_lock(key) for key in keys]
            taken = [lock for lock in locks if lock.acquire(blocking=False)]
            try:
                if len(taken) == len(locks):
                    reaped += reap_idle(self.client, self.claims_now({namespace}), {namespace})
            finally:
                for lock in taken:
                    lock.release()
        for runtime_id in reaped:
            self.notice(f"{runtime_id}: paused (idle)")
        self.metrics.reaped.inc(len(reaped))
        return True

    # --- once ---

    def _once(self, key: str) -> bool:
        reconciled = self.process(f"plan:{key}")
        loaded = self.rendered(key) is not None or self._suspended(key)
        return self.process(f"pools:{key}") and reconciled and loaded

    def run_once(self) -> int:
        """One pass without serving, as if alone (no leader election: a cron job's run is serialised by
        the plans' run locks): every plan reconciled and its pools maintained (`--concurrent` plans at
        once), idle ones reaped; exit 0 when everything succeeded, 1 otherwise."""
        self.elector = None
        ok = True
        if self.options.plans:
            self.refresh_plans()
            with self.files_lock:
                keys = [name for name, loaded in self.files.items() if not loaded.problem]
                ok &= len(keys) == len(self.files)
        else:
            self.follow_plan_objects()
            assert self.plan_objects is not None
            self.plan_objects.informer.wait_until_synced(self.options.progress_deadline)
            keys = self.plan_objects.keys()
        with ThreadPoolExecutor(self.options.concurrent, thread_name_prefix="controller-once") as pool:
            ok &= all(pool.map(self._once, keys))
        ok &= self.process(REAP)
        self.informers.stop()
        return 0 if ok else 1
