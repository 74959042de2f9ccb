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
from planner.errors import (
    ApiError,
    EmptyPlanError,
    NotFoundError,
    PlanFilesChangedError,
    PlannerError,
    StalePlanError,
    UsageError,
)
from planner.events import Clock, EventSink, SystemClock
from planner.execute import ExecutionResult, execute
from planner.graph import ExecutionPlan, parent_ref, solve
from planner.kinds import DEPLOYMENT, JOB, PERSISTENT_VOLUME_CLAIM, POD, KindInfo, for_manifest
from planner.kube.client import ClientOptions, KubeClient
from planner.kube.config import default_namespace
from planner.kube.informer import Informers
from planner.live import LiveState, read_live, ref_of
from planner.monitor import Monitor, lifecycle
from planner.monitor.status import StatusRow, status_rows
from planner.plan import LoadResult, Plan, load_plans
from planner.render import plan_namespace, render
from planner.render.identity import LABEL_WORKLOAD, RuntimeID, sandbox_runtime_id, workload_runtime_id
from planner.savedplan import closure_digest, moved_objects, read_saved_plans, saved_plan
from planner.status import CacheStatusSource
from planner.writes import KubeWriter, WrittenVersions, listed_in_parent

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
    allow_empty: bool = False

    def recorded(self) -> dict[str, Any]:
        """The options a saved plan carries, so `apply FILE` plans exactly as `plan --out` did."""
        return {
            "allow_data_loss": self.allow_data_loss,
            "adopt": self.adopt,
            "rerun": sorted(self.rerun),
            "allow_empty": self.allow_empty,
        }

    @classmethod
    def from_recorded(cls, recorded: dict[str, Any]) -> PlanOptions:
        return cls(
            allow_data_loss=bool(recorded.get("allow_data_loss")),
            adopt=bool(recorded.get("adopt")),
            rerun=frozenset(recorded.get("rerun") or ()),
            allow_empty=bool(recorded.get("allow_empty")),
        )


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
            options=options.recorded(),
        )


def plan(
    paths: Sequence[str | Path],
    *,
    target: Target,
    options: PlanOptions,
    client: KubeClient | None = None,
    probe_foreign: bool = True,
) -> tuple[LoadResult, list[PlannedChanges]]:
    """Load, render, read the live objects of each plan and diff them. Writes nothing. Without
    `probe_foreign`, same-named objects the plan does not own are found only when a create meets them."""
    loaded, rendered = render_plans(
        paths, namespace=target.namespace, kubeconfig=target.kubeconfig, context=target.context
    )
    client = client or target.client()
    results = []
    for each in rendered:
        namespace = plan_namespace(each.plan, each.default_namespace)
        live = read_live(
            client,
            desired=each.manifests,
            plan=each.plan.name,
            namespace=namespace,
            probe_foreign=probe_foreign,
        )
        if not options.allow_empty:
            check_not_empty(each, live)
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


def check_not_empty(rendered: RenderedPlan, live: LiveState) -> None:
    """Refuse a plan that declares nothing (Namespaces aside) while its ApplySet still has members:
    applying it would prune them all, which is almost never what an emptied plan file meant."""
    declares = any(m.get("kind") != "Namespace" for m in rendered.manifests)
    if declares or not live.members:
        return
    raise EmptyPlanError(
        f"plan {rendered.plan.name} declares nothing, and applying it would delete all "
        f"{len(live.members)} objects it manages; re-run with --allow-empty to accept it"
    )


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
    # --adopt must see foreign objects to apply over them; otherwise a create's 409 finds them.
    probe = options.plan.adopt
    loaded, planned = plan(paths, target=target, options=options.plan, client=client, probe_foreign=probe)
    run = _Run(client=client, options=options, sink=sink, clock=clock, informers=informers)
    return loaded, run.execute_all(planned)


def apply_saved(
    path: Path,
    *,
    target: Target,
    options: ApplyOptions,
    sink: EventSink,
    clock: Clock | None = None,
    client: KubeClient | None = None,
    informers: Informers | None = None,
) -> tuple[LoadResult, list[AppliedPlan]]:
    """Apply exactly the changes of a saved plan (`plan --out`), after DESIGN §4's checks.

    Each recorded plan is made again from its files (secrets resolved again, never read from the saved
    plan) with its recorded options, into its recorded namespace; it is refused when the files render a
    different closure (PlanFilesChangedError) or any object moved (StalePlanError, naming each), and
    only then executed. `options.plan` is ignored: the saved plan carries its own."""
    documents = read_saved_plans(path)
    client = client or target.client()
    checked: list[PlannedChanges] = []
    loaded: LoadResult | None = None
    for document in documents:
        loaded, fresh = _replanned(document, target=target, client=client)
        checked.append(fresh)
    if loaded is None:
        raise UsageError(f"{path}: the saved plan holds no plans")
    run = _Run(client=client, options=options, sink=sink, clock=clock, informers=informers)
    return loaded, run.execute_all(checked)


def _replanned(
    document: dict[str, Any], *, target: Target, client: KubeClient
) -> tuple[LoadResult, PlannedChanges]:
    files = [str(f) for f in document["files"]]
    options = PlanOptions.from_recorded(document.get("options") or {})
    here = dataclasses.replace(target, namespace=str(document["namespace"]))
    loaded, results = plan(files, target=here, options=options, client=client)
    fresh = next((r for r in results if r.rendered.plan.name == document["plan"]), None)
    if fresh is None or closure_digest(fresh.rendered.manifests) != document["closure_digest"]:
        raise PlanFilesChangedError(
            f"plan files changed since the plan was made: {', '.join(files)} (plan {document['plan']})"
        )
    remade = fresh.saved(options)
    moved = moved_objects(document, remade)
    if not moved and remade["changes"] != document["changes"]:
        moved = [(change["object"], "would change differently") for change in document["changes"]]
    if moved:
        raise StalePlanError(moved)
    return loaded, fresh


class _Run:
    """One apply's execution of planned changes: shared informers, status source and writer; after a
    plan converges completely, its parent is tightened to what remains."""

    def __init__(
        self,
        *,
        client: KubeClient,
        options: ApplyOptions,
        sink: EventSink,
        clock: Clock | None,
        informers: Informers | None,
    ) -> None:
        self.client, self.options, self.sink = client, options, sink
        self.clock = clock or SystemClock()
        self.owned = informers is None
        self.informers = informers or Informers(client)

    def execute_all(self, planned: Sequence[PlannedChanges]) -> list[AppliedPlan]:
        no_wait = self.options.no_wait
        executions = [
            solve(p.changeset, wait=not no_wait, timeouts=plan_timeouts(p.rendered.plan)) for p in planned
        ]
        written = WrittenVersions()
        scopes = wait_scopes(executions, no_wait=no_wait)
        status = CacheStatusSource(self.client, self.informers, scopes=scopes, written=written).start()
        writer = KubeWriter(self.client, written=written)
        applied = []
        try:
            for each, execution in zip(planned, executions, strict=True):
                result = execute(
                    execution,
                    writer=writer,
                    status=status,
                    sink=self.sink,
                    parallelism=self.options.parallelism,
                    default_timeout=self.options.timeout,
                    no_wait=no_wait,
                    clock=self.clock,
                )
                if result.ok:
                    tighten_if_wider(writer, each)
                applied.append(AppliedPlan(each, execution, result))
        finally:
            if self.owned:
                self.informers.stop()
        return applied


def remaining_scope(planned: PlannedChanges) -> tuple[set[str], set[str]]:
    """The group-kinds and namespaces of what a converged apply leaves: the closure, plus members a
    keep annotation held back from prune (still labelled, so still the ApplySet's)."""
    kept = [c.ref for c in planned.changeset.changes if c.action == "noop" and c.desired is None]
    refs = [ref_of(m) for m in planned.rendered.manifests] + kept
    refs = [ref for ref in refs if ref.kind != "Namespace"]
    group_kinds = {f"{ref.kind}.{ref.group}" if ref.group else ref.kind for ref in refs}
    return group_kinds, {ref.namespace for ref in refs if ref.namespace}


def tighten_if_wider(writer: KubeWriter, planned: PlannedChanges) -> None:
    """After a converged apply, narrow the parent to what remains when it lists more (KEP-3659 allows
    it once nothing outside is left); one write, and none when the parent already fits."""
    group_kinds, namespaces = remaining_scope(planned)
    namespaces.discard(planned.changeset.namespace)
    listed_kinds, listed_namespaces = listed_in_parent(planned.live.parent)
    touched = {c.ref for c in planned.changeset.changes if c.action != "noop" and c.ref.kind != "Namespace"}
    listed_kinds |= {f"{ref.kind}.{ref.group}" if ref.group else ref.kind for ref in touched}
    listed_namespaces |= {ref.namespace for ref in touched if ref.namespace}
    listed_namespaces.discard(planned.changeset.namespace)
    if planned.live.parent is None and not touched:
        return  # never applied and nothing written: no parent to tighten
    if listed_kinds <= group_kinds and listed_namespaces <= namespaces:
        return
    ref = parent_ref(planned.changeset.plan, planned.changeset.namespace)
    writer.tighten_parent(ref, group_kinds=group_kinds, namespaces=namespaces)


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


def plan_runtime_ids(plan: Plan, default_namespace: str) -> list[RuntimeID]:
    """Every workload's and sandbox's runtime ID, in plan order."""
    workloads = [workload_runtime_id(plan, w, default_namespace) for w in plan.workloads]
    return workloads + [sandbox_runtime_id(plan, s, default_namespace) for s in plan.sandboxes]


def apply_and_watch(
    paths: Sequence[str | Path],
    *,
    target: Target,
    options: ApplyOptions,
    watch: MonitorOptions,
    sink: EventSink,
    clock: Clock | None = None,
) -> tuple[LoadResult, list[AppliedPlan], MonitorResult | None]:
    """`apply --watch`: apply, then hand every runtime ID of the converged plans to the monitor on the
    same informers (one per kind per process) and follow them until each is steady or `watch.timeout`.
    When the apply itself failed there is nothing steady to wait for: no monitoring, the result is None."""
    client = target.client()
    informers = Informers(client)
    try:
        loaded, applied = apply(
            paths, target=target, options=options, sink=sink, clock=clock, client=client, informers=informers
        )
        if not all(each.result.ok for each in applied):
            return loaded, applied, None
        rendered = [each.planned.rendered for each in applied]
        rids = [rid for r in rendered for rid in plan_runtime_ids(r.plan, r.default_namespace)]
        scope = frozenset(rid.namespace for rid in rids)
        followed = follow(informers, rids, options=watch, sink=sink, scope=scope, clock=clock)
        return loaded, applied, followed
    finally:
        informers.stop()


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
