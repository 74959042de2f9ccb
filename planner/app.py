"""Wires the stages together, one function per command, so the CLI only parses and prints.

Each function takes plain values and returns results; nothing here prints or exits. Later commands
(plan, apply, monitor) add their wiring here: the client, the informer cache, the executor's StatusSource.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.diff import ChangeSet, diff, server_predicted
from planner.errors import ApiError, NotFoundError, PlannerError
from planner.events import Clock, EventSink, SystemClock
from planner.execute import ExecutionResult, execute
from planner.graph import ExecutionPlan, solve
from planner.kinds import DEPLOYMENT, JOB, PERSISTENT_VOLUME_CLAIM, POD, KindInfo, for_manifest
from planner.kube.client import ClientOptions, KubeClient
from planner.kube.config import default_namespace
from planner.kube.informer import Informers
from planner.live import LiveState, read_live
from planner.monitor import Monitor, lifecycle
from planner.monitor.status import StatusRow, status_rows
from planner.plan import LoadResult, Plan, load_plans
from planner.render import plan_namespace, render
from planner.render.identity import LABEL_WORKLOAD, RuntimeID, sandbox_runtime_id, workload_runtime_id
from planner.savedplan import saved_plan
from planner.status import CacheStatusSource
from planner.writes import KubeWriter, WrittenVersions

Manifest = dict[str, Any]
FIELD_MANAGER = "planner"


@dataclass(frozen=True)
class RenderedPlan:
    plan: Plan
    default_namespace: str
    manifests: tuple[Manifest, ...]


def validate(paths: Sequence[str | Path]) -> LoadResult:
    """Load and check plans; raises PlanError with every problem at once."""
    return load_plans(paths)


def render_plans(
    paths: Sequence[str | Path], *, namespace: str | None, kubeconfig: str | None, context: str | None
) -> tuple[LoadResult, list[RenderedPlan]]:
    """Load plans and render each against the runtime's default namespace (DESIGN §3)."""
    loaded = load_plans(paths)
    fallback = default_namespace(namespace=namespace, kubeconfig=kubeconfig, context=context)
    rendered = [RenderedPlan(plan, fallback, tuple(render(plan, fallback))) for plan in loaded.plans]
    return loaded, rendered


@dataclass(frozen=True, kw_only=True)
class Target:
    """Which cluster, and the runtime's default namespace there."""

    namespace: str | None = None
    kubeconfig: str | None = None
    context: str | None = None
    options: ClientOptions | None = None

    def client(self) -> KubeClient:
        return KubeClient.from_config(kubeconfig=self.kubeconfig, context=self.context, options=self.options)


@dataclass(frozen=True, kw_only=True)
class PlanOptions:
    allow_data_loss: bool = False
    adopt: bool = False
    rerun: frozenset[str] = frozenset()
    server_dry_run: bool = False


@dataclass(frozen=True)
class PlannedChanges:
    rendered: RenderedPlan
    live: LiveState
    changeset: ChangeSet

    @property
    def execution(self) -> ExecutionPlan:
        return solve(self.changeset)

    def saved(self, options: PlanOptions) -> dict[str, Any]:
        return saved_plan(
            files=[self.rendered.plan.source.file],
            changeset=self.changeset,
            desired=self.rendered.manifests,
            live=self.live,
            options={
                "allow_data_loss": options.allow_data_loss,
                "adopt": options.adopt,
                "rerun": sorted(options.rerun),
            },
        )


def plan(
    paths: Sequence[str | Path], *, target: Target, options: PlanOptions, client: KubeClient | None = None
) -> tuple[LoadResult, list[PlannedChanges]]:
    """Load, render, read the live objects of each plan and diff them. Writes nothing."""
    loaded, rendered = render_plans(
        paths, namespace=target.namespace, kubeconfig=target.kubeconfig, context=target.context
    )
    client = client or target.client()
    results = []
    for each in rendered:
        namespace = plan_namespace(each.plan, each.default_namespace)
        live = read_live(client, desired=each.manifests, plan=each.plan.name, namespace=namespace)
        changeset = diff(
            each.manifests,
            live,
            plan=each.plan.name,
            namespace=namespace,
            allow_data_loss=options.allow_data_loss,
            adopt=options.adopt,
            rerun=options.rerun,
        )
        if options.server_dry_run:
            changeset = server_dry_run(client, changeset)
        results.append(PlannedChanges(each, live, changeset))
    return loaded, results


def server_dry_run(client: KubeClient, changeset: ChangeSet) -> ChangeSet:
    """Each create and update as the server would apply it (`dryRun=All`), shown in place of the
    client-side prediction. A server rejection (422, a webhook) fails the plan, naming the object."""
    changes = []
    for change in changeset.changes:
        if change.action in ("create", "update") and change.desired is not None:
            try:
                result = client.server_side_apply(
                    for_manifest(change.desired),
                    change.desired,
                    field_manager=FIELD_MANAGER,
                    force=True,
                    dry_run=True,
                )
            except NotFoundError:
                result = None  # its namespace is created by the same apply: nothing to ask yet
            except ApiError as rejected:
                raise PlannerError(
                    f"{change.ref}: the server rejects it in a dry run: {rejected}"
                ) from rejected
            change = server_predicted(change, result) if result is not None else change
        changes.append(change)
    return dataclasses.replace(changeset, changes=tuple(changes))


# --- apply ---------------------------------------------------------------------------------------------

DEFAULT_APPLY_TIMEOUT = 300.0


@dataclass(frozen=True, kw_only=True)
class ApplyOptions:
    """`timeout` is the per-object wait timeout when the plan sets none (None: wait without limit)."""

    plan: PlanOptions = dataclasses.field(default_factory=PlanOptions)
    parallelism: int = 16
    timeout: float | None = DEFAULT_APPLY_TIMEOUT
    no_wait: bool = False


@dataclass(frozen=True)
class AppliedPlan:
    planned: PlannedChanges
    execution: ExecutionPlan
    result: ExecutionResult


def plan_timeouts(plan: Plan) -> dict[str, float]:
    """The plan's per-workload and per-sandbox `timeout`, by name (a Change's `owner`)."""
    timeouts = {w.name: w.timeout_seconds for w in plan.workloads if w.timeout_seconds is not None}
    return timeouts | {s.name: s.timeout_seconds for s in plan.sandboxes if s.timeout_seconds is not None}


def wait_scopes(executions: Sequence[ExecutionPlan], *, no_wait: bool) -> dict[str, frozenset[str] | None]:
    """For each kind some task waits on, the namespaces those waits are in (None: cluster-scoped).
    With `no_wait` only the wait-gone tasks of replaces and deletes still wait."""
    waits = {"wait-gone"} if no_wait else {"wait-gone", "wait-ready"}
    scopes: dict[str, set[str] | None] = {}
    for task in (t for execution in executions for t in execution.tasks if t.action in waits):
        if task.ref.namespace is None:
            scopes[task.ref.kind] = None
        elif (known := scopes.setdefault(task.ref.kind, set())) is not None:
            known.add(task.ref.namespace)
    return {kind: None if spaces is None else frozenset(spaces) for kind, spaces in scopes.items()}


def apply(
    paths: Sequence[str | Path],
    *,
    target: Target,
    options: ApplyOptions,
    sink: EventSink,
    clock: Clock | None = None,
    client: KubeClient | None = None,
    informers: Informers | None = None,
) -> tuple[LoadResult, list[AppliedPlan]]:
    """Plan every file, then run each plan's execution along its DAG, waiting through informer caches
    (one per kind). Events go to `sink`; the results say what converged. Informers passed in stay the
    caller's to stop (so `apply --watch` can hand them to the monitor); otherwise they stop here."""
    load_plans(paths)  # a broken plan is reported as such before any cluster is looked for
    client = client or target.client()
    loaded, planned = plan(paths, target=target, options=options.plan, client=client)
    executions = [
        solve(p.changeset, wait=not options.no_wait, timeouts=plan_timeouts(p.rendered.plan)) for p in planned
    ]
    written = WrittenVersions()
    owned = informers is None
    informers = informers or Informers(client)
    status = CacheStatusSource(
        client, informers, scopes=wait_scopes(executions, no_wait=options.no_wait), written=written
    ).start()
    writer = KubeWriter(client, written=written)
    try:
        applied = [
            AppliedPlan(
                each,
                execution,
                execute(
                    execution,
                    writer=writer,
                    status=status,
                    sink=sink,
                    parallelism=options.parallelism,
                    default_timeout=options.timeout,
                    no_wait=options.no_wait,
                    clock=clock or SystemClock(),
                ),
            )
            for each, execution in zip(planned, executions, strict=True)
        ]
    finally:
        if owned:
            informers.stop()
    return loaded, applied


# --- lifecycle commands and the monitor (issue 9) ---------------------------------------------------

LIFECYCLE_OPERATIONS = {
    "start": lifecycle.start,
    "stop": lifecycle.stop,
    "pause": lifecycle.pause,
    "resume": lifecycle.resume,
}


def run_lifecycle(
    operation: str, runtime_id: str, *, target: Target, client: KubeClient | None = None
) -> lifecycle.Outcome:
    """`start`, `stop`, `pause` or `resume` one runtime ID (parsed before any request: exit 1 if malformed)."""
    rid = RuntimeID.parse(runtime_id)
    return LIFECYCLE_OPERATIONS[operation](client or target.client(), rid)


def delete_workload(
    runtime_id: str, *, target: Target, allow_data_loss: bool, client: KubeClient | None = None
) -> lifecycle.Outcome:
    rid = RuntimeID.parse(runtime_id)
    return lifecycle.delete(client or target.client(), rid, allow_data_loss=allow_data_loss)


def workload_logs(
    runtime_id: str, *, target: Target, options: lifecycle.LogOptions, client: KubeClient | None = None
) -> Iterator[str]:
    rid = RuntimeID.parse(runtime_id)
    return lifecycle.logs(client or target.client(), rid, options)


def inspect_workload(
    runtime_id: str, *, target: Target, client: KubeClient | None = None
) -> lifecycle.Inspection:
    rid = RuntimeID.parse(runtime_id)
    return lifecycle.inspect(client or target.client(), rid)


@dataclass(frozen=True, kw_only=True)
class MonitorOptions:
    """`attach_all`: every managed workload in scope (`-n`, else all namespaces); `until_done`: stop
    once each is steady (Deployment and sandbox Started, Job ended) or `timeout` passes; without it,
    follow for `timeout` (None: until interrupted)."""

    attach_all: bool = False
    until_done: bool = False
    timeout: float | None = None


@dataclass(frozen=True, kw_only=True)
class MonitorResult:
    failed: tuple[str, ...]
    steady: bool


def monitor_scope(
    runtime_ids: Sequence[RuntimeID], *, target: Target, attach_all: bool
) -> frozenset[str] | None:
    """The namespaces the informers watch: those of the IDs, plus `-n` (or every namespace) with --all."""
    if attach_all and target.namespace is None:
        return None
    extra = {target.namespace} if attach_all and target.namespace else set()
    return frozenset({rid.namespace for rid in runtime_ids} | extra)


def monitor(
    runtime_ids: Sequence[str],
    *,
    target: Target,
    options: MonitorOptions,
    sink: EventSink,
    clock: Clock | None = None,
    client: KubeClient | None = None,
) -> MonitorResult:
    """Follow runtime IDs (and with `attach_all` every managed workload) through one informer per kind,
    reporting Container* events to `sink` from the informers' threads."""
    rids = list(dict.fromkeys(RuntimeID.parse(text) for text in runtime_ids))  # once each, in order
    if not rids and not options.attach_all:
        raise PlannerError("name at least one runtime ID, or --all")
    client = client or target.client()
    scope = monitor_scope(rids, target=target, attach_all=options.attach_all)
    informers = Informers(client)
    try:
        return follow(informers, rids, options=options, sink=sink, scope=scope, clock=clock)
    finally:
        informers.stop()


def follow(
    informers: Informers,
    runtime_ids: Sequence[RuntimeID],
    *,
    options: MonitorOptions,
    sink: EventSink,
    scope: frozenset[str] | None,
    clock: Clock | None = None,
) -> MonitorResult:
    """The monitor over informers the caller owns (and stops): `apply --watch` hands its applied runtime
    IDs here with the informers its waits used, so one process keeps one informer per kind. `scope`
    must be covered by the informers already created (Informers refuses a wider one)."""
    watcher = Monitor(informers, sink, clock=clock or SystemClock(), namespaces=scope)
    try:
        for rid in runtime_ids:
            watcher.mark_if_not_monitoring(rid)
        if options.attach_all:
            watcher.attach_all(scope, follow=not options.until_done)
        if options.until_done:
            steady = watcher.wait_until_steady(options.timeout)
        else:
            watcher.follow_for(options.timeout)
            steady = watcher.all_steady()
    finally:
        watcher.stop()
    return MonitorResult(failed=tuple(watcher.failed()), steady=steady)


STATUS_KINDS = (DEPLOYMENT, JOB, PERSISTENT_VOLUME_CLAIM, POD)


def status_runtime_ids(arguments: Sequence[str], *, target: Target) -> list[RuntimeID]:
    """Runtime IDs from the arguments: each one with a `|` is a runtime ID, every other one a plan file
    or directory whose workloads and sandboxes are listed in plan order."""
    ids = [RuntimeID.parse(a) for a in arguments if "|" in a]
    paths = [a for a in arguments if "|" not in a]
    if paths:
        _, rendered = render_plans(
            paths, namespace=target.namespace, kubeconfig=target.kubeconfig, context=target.context
        )
        for each in rendered:
            plan_ids = [
                workload_runtime_id(each.plan, w, each.default_namespace) for w in each.plan.workloads
            ]
            plan_ids += [
                sandbox_runtime_id(each.plan, s, each.default_namespace) for s in each.plan.sandboxes
            ]
            ids += plan_ids
    return list(dict.fromkeys(ids))


def _cache_rows(
    informers: Informers, rids: Sequence[RuntimeID], scope: frozenset[str], now: float
) -> list[StatusRow]:
    def lookup(kind: KindInfo, namespace: str, name: str) -> Manifest | None:
        return informers.informer(kind, namespaces=scope).get(namespace, name)

    def pods_of(namespace: str, name: str) -> list[Manifest]:
        pods = informers.informer(POD, namespaces=scope).items()
        return [
            p
            for p in pods
            if p["metadata"].get("namespace") == namespace
            and (p["metadata"].get("labels") or {}).get(LABEL_WORKLOAD) == name
        ]

    return status_rows(rids, lookup=lookup, pods_of=pods_of, now=now)


def status(
    arguments: Sequence[str],
    *,
    target: Target,
    on_rows: Callable[[list[StatusRow]], None],
    watch: bool = False,
    timeout: float | None = None,
    clock: Clock | None = None,
    client: KubeClient | None = None,
) -> list[StatusRow]:
    """Rows for the runtime IDs (or plans) given, read through one informer per kind; `on_rows` gets them
    once, and with `watch` again whenever they change, until `timeout` (None: until interrupted)."""
    rids = status_runtime_ids(arguments, target=target)
    if not rids:
        raise PlannerError("name runtime IDs or plan files")
    clock = clock or SystemClock()
    client = client or target.client()
    scope = frozenset(rid.namespace for rid in rids)
    informers = Informers(client)
    changed = threading.Event()
    try:
        for kind in STATUS_KINDS:
            informer = informers.informer(kind, namespaces=scope)
            informer.wait_until_synced(60.0)
            informer.subscribe(lambda _type, _obj: changed.set())
        rows = _cache_rows(informers, rids, scope, clock.now())
        on_rows(rows)
        deadline = None if timeout is None else clock.now() + timeout
        while watch and (deadline is None or clock.now() < deadline):
            changed.wait(1.0 if deadline is None else max(0.0, min(1.0, deadline - clock.now())))
            changed.clear()
            fresh = _cache_rows(informers, rids, scope, clock.now())
            if _without_age(fresh) != _without_age(rows):
                rows = fresh
                on_rows(rows)
    finally:
        informers.stop()
    return rows


def _without_age(rows: Sequence[StatusRow]) -> list[StatusRow]:
    """Rows compared for `--watch`: a change is news, time passing is not."""
    return [dataclasses.replace(row, age="") for row in rows]
