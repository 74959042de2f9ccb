"""Applying planned changes, what `apply`, `reconcile` and `rollback` share: the `Applier` runs each
plan's execution along its DAG, writing through `KubeWriter` and waiting through informer caches (one
per kind), records each plan that set out to write as its next generation and, after a plan converges,
settles its ApplySet parent (the closure recorded as applied, the scope narrowed to what remains).
Before a run takes its locks, `create_lock_namespaces` makes the namespaces their Leases live in."""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Sequence
from dataclasses import dataclass

from planner import workloads
from planner.app.history import (
    HistoryOptions,
    Recording,
    now,
    plan_inputs,
    plan_sources,
    record,
    source_revision,
    who_for,
)
from planner.app.planning import (
    DEFAULT_APPLY_TIMEOUT,
    PlannedChanges,
    PlanOptions,
    check_data_loss,
    execution_plan,
    plan_digest_key,
)
from planner.app.runs import RunRecorder
from planner.app.target import Target
from planner.changeset import ChangeSet
from planner.events import Clock, EventSink, SystemClock
from planner.execute import ExecutionResult, StopCheck, execute_plans
from planner.generations import CONVERGED, FAILED, Generation, Who
from planner.graph import ExecutionPlan
from planner.kinds import JOB, PERSISTENT_VOLUME_CLAIM, POD
from planner.kube.client import KubeClient
from planner.kube.informer import Informers
from planner.live import existing_namespaces
from planner.objects import Manifest, ObjectRef, ref_of
from planner.provenance import recorded_charts
from planner.state.applyset import (
    AppliedClosure,
    CurrentGeneration,
    Scope,
    applied_closure,
    holds_run_finalizer,
    is_recorded_job,
    narrowed,
    parent_ref,
    run_keys_of,
    settled_parent,
)
from planner.state.runlock import LockOptions, Notice
from planner.wait.evidence import Evidence
from planner.waiting import CacheStatusSource
from planner.writes import KubeWriter, WrittenVersions, create_namespace


@dataclass(frozen=True, kw_only=True)
class ApplyOptions:
    """`timeout` is the per-object wait timeout when the plan sets none (None: wait without limit)."""

    plan: PlanOptions = dataclasses.field(default_factory=PlanOptions)
    parallelism: int = 16
    timeout: float | None = DEFAULT_APPLY_TIMEOUT
    no_wait: bool = False
    lock: LockOptions = dataclasses.field(default_factory=LockOptions)
    history: HistoryOptions = dataclasses.field(default_factory=HistoryOptions)


@dataclass(frozen=True)
class AppliedPlan:
    planned: PlannedChanges
    execution: ExecutionPlan
    result: ExecutionResult


def unheard(_: str) -> None:
    """The default `notice`: nobody to tell."""


def create_lock_namespaces(
    client: KubeClient, keys: Sequence[tuple[str, str]], notice: Notice
) -> frozenset[str]:
    """Create the namespaces of these `(plan, namespace)` pairs that do not exist, before their run locks
    are taken: a lock's Lease lives in its plan's namespace. Several runs may do this at once (a create
    that finds the namespace made meanwhile is no error). The namespaces it created are returned, for
    the plan to count them as missing still — they were when this run began, so its graph's `ensure`
    tasks and the saved plan it may be checked against stay as they were. Without permission to list
    namespaces nothing is created (taking the lock then says which namespace is missing)."""
    wanted = {namespace for _, namespace in keys}
    existing = existing_namespaces(client, wanted)
    missing = sorted(wanted - existing) if existing is not None else []
    created = frozenset(name for name in missing if create_namespace(client, name) is not None)
    for name in sorted(created):
        notice(f"namespace/{name}: namespace created (the run lock lives there)")
    return created


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


Scopes = dict[str, frozenset[str] | None]
EXPLAINED_KINDS = (*(kind.api.kind for kind in workloads.KINDS), POD.kind, PERSISTENT_VOLUME_CLAIM.kind)


def explained_namespaces(waits: Scopes) -> frozenset[str]:
    """Where the pods and Events are that say why a wait is not over: the namespaces of the waits on
    workloads, pods and claims."""
    return frozenset(namespace for kind in EXPLAINED_KINDS for namespace in waits.get(kind) or ())


def informer_scopes(waits: Scopes, *, cover: frozenset[str] = frozenset()) -> Scopes:
    """Each kind's informer scope: the namespaces of its waits; for pods also those whose pods explain a
    wait (`planner.wait.evidence` reads the same informer); with `cover`, every kind's also those namespaces
    (`apply --watch`: the monitor then finds informers wide enough for every workload it follows)."""
    explained = explained_namespaces(waits)
    scopes = dict(waits)
    if explained:
        pods = scopes.get(POD.kind, frozenset())
        scopes[POD.kind] = None if pods is None else pods | explained
    return {kind: None if spaces is None else spaces | cover for kind, spaces in scopes.items()}


class Applier:
    """One apply's execution of planned changes: shared informers, status source and writer; after a
    plan converges completely, its parent is settled (the closure recorded as applied, the scope
    narrowed to what remains). `stop` is the executor's stop check (the run lock's `lost`): once it
    answers, no task starts and no parent is settled. Every plan that set out to write something is
    recorded as its next generation (`planner.app.history`), converged or failed, as `who`."""

    def __init__(
        self,
        *,
        client: KubeClient,
        options: ApplyOptions,
        sink: EventSink,
        clock: Clock | None,
        informers: Informers | None,
        stop: StopCheck | None = None,
        who: Who | None = None,
    ) -> None:
        self.client, self.options, self.sink, self.stop = client, options, sink, stop
        self.who = who or Who(user="", host=socket.gethostname())
        self.recorded: list[Generation] = []  # the generations this run recorded, in order
        self.clock = clock or SystemClock()
        self.owned = informers is None
        self.informers = informers or Informers(client)

    @classmethod
    def for_target(
        cls,
        target: Target,
        *,
        options: ApplyOptions,
        sink: EventSink,
        stop: StopCheck | None,
        clock: Clock | None = None,
        informers: Informers | None = None,
    ) -> Applier:
        """An Applier writing to the target's cluster, recording generations as its kubeconfig user."""
        return cls(
            client=target.client,
            options=options,
            sink=sink,
            clock=clock,
            informers=informers,
            stop=stop,
            who=who_for(target),
        )

    def execute_all(self, planned: Sequence[PlannedChanges]) -> list[AppliedPlan]:
        check_data_loss(planned, consent=self.options.plan.data_loss_consent)
        no_wait = self.options.no_wait
        executions = [execution_plan(p, wait=not no_wait, timeout=self.options.timeout) for p in planned]
        written = WrittenVersions()
        waits = wait_scopes(executions, no_wait=no_wait)
        cover = frozenset() if self.owned else _namespaces_of(planned)
        explained = explained_namespaces(waits)
        evidence = Evidence(self.informers, namespaces=explained) if explained else None
        status = CacheStatusSource(
            self.client,
            self.informers,
            scopes=informer_scopes(waits, cover=cover),
            written=written,
            evidence=evidence,
        ).start()
        if evidence is not None:
            evidence.start()
        writer = KubeWriter(self.client, written=written)
        for each in planned:  # read under the run lock just now: the parent's first write starts there
            writer.remember_parent(
                parent_ref(each.changeset.plan, each.changeset.namespace), each.live.parent
            )
        recorder = self.run_recorder(writer, planned, executions)
        started, failures = now(), list[Exception]()

        def finished(index: int, result: ExecutionResult) -> None:
            """As each plan ends (the others may still run): settle its parent, record its generation.
            A failure here is the command's, raised once every plan has ended."""
            each = planned[index]
            try:
                settling = settlement(each) if result.ok and not (self.stop and self.stop()) else None
                recorded = each.changeset.has_changes and self.record(writer, each, result, started, settling)
                if settling is not None and not recorded:
                    writer.settle_parent(each.parent_ref, settling.scope, settling.applied)
                if result.ok and not each.changeset.has_changes and not no_wait:
                    converged_since(writer, each)
            except Exception as failure:  # re-raised below, once no other plan is left half-run
                failures.append(failure)

        try:
            results = execute_plans(
                executions,
                writer=writer,
                status=status,
                sink=self.sink,
                parallelism=self.options.parallelism,
                no_wait=no_wait,
                clock=self.clock,
                stop=self.stop,
                finished=finished,
            )
            if failures:
                raise failures[0]
            applied = [
                AppliedPlan(each, execution, result)
                for each, execution, result in zip(planned, executions, results, strict=True)
            ]
        finally:
            recorder.close()
            status.close()  # no wait, ticker or informer subscription outlives the run
            if evidence is not None:
                evidence.close()
            if self.owned:
                self.informers.stop()
        return applied

    def record(
        self,
        writer: KubeWriter,
        planned: PlannedChanges,
        result: ExecutionResult,
        started: str,
        settling: Settlement | None,
    ) -> bool:
        """Record the plan's apply as its next generation (see `planner.app.history.record`), settling
        its parent in the same write when given: whether it recorded one."""
        rendered, history = planned.rendered, self.options.history
        source = rendered.plan.source
        recorded = rendered.recorded
        recording = Recording(
            plan=planned.changeset.plan,
            namespace=planned.changeset.namespace,
            manifests=rendered.manifests,
            sources=recorded.sources if recorded else plan_sources(source),
            inputs=recorded.inputs if recorded else plan_inputs(rendered.plan),
            timeouts=rendered.timeouts,
            revision=(history.revision or recorded.revision)
            if recorded
            else source_revision(source.file, history.revision, imported=source.imported),
            who=self.who,
            rolled_back_from=recorded.number if recorded else None,
            charts=recorded.charts
            if recorded
            else {chart.name: f"{chart.chart_name}-{chart.version}" for chart in rendered.plan.charts},
            chart_inputs=recorded.chart_inputs
            if recorded
            else recorded_charts(planned.changeset, rendered.plan, plan_digest_key(planned)),
        )
        made = record(
            writer,
            recording,
            changeset=planned.changeset,
            result=result,
            started=started,
            options=history,
            settling=settling.body if settling is not None else None,
        )
        if made is not None:
            self.recorded.append(made)
        return made is not None

    def run_recorder(
        self, writer: KubeWriter, planned: Sequence[PlannedChanges], executions: Sequence[ExecutionPlan]
    ) -> RunRecorder:
        """Records how the Jobs these executions create end, seen through the Job informer their waits
        use (none with --no-wait: nothing then watches a Job finish), and those of the plans' live
        Jobs still holding the run-record finalizer: the ones that finished or are being deleted (a
        killed run's, a TTL's) are recorded and let go at once, the running ones when they end."""
        recorder = RunRecorder(self.client, writer)
        held: list[Manifest] = []
        for each, execution in zip(planned, executions, strict=True):
            created = [t.manifest for t in execution.tasks if t.action == "create" and t.manifest]
            waiting = [
                job for job in each.live.members.values() if is_recorded_job(job) and holds_run_finalizer(job)
            ]
            ran = [job for job in [*created, *waiting] if is_recorded_job(job)]  # Jobs' outcomes, no hook's
            recorder.expect(execution.parent_ref, run_keys_of(ran))
            held += waiting
        jobs = self.informers.get(JOB)
        if jobs is not None and recorder.expecting:
            recorder.follow(jobs)
        for job in held:
            recorder.seen("ADDED", job)
        return recorder


def _namespaces_of(planned: Sequence[PlannedChanges]) -> frozenset[str]:
    refs = (ref_of(manifest) for each in planned for manifest in each.rendered.manifests)
    return frozenset(ref.namespace for ref in refs if ref.namespace)


def remaining_scope(planned: PlannedChanges) -> Scope:
    """What a converged apply leaves: the closure, plus members a keep annotation held back from prune
    (still labelled, so still the ApplySet's)."""
    kept = [c.ref for c in planned.changeset.changes if c.action == "noop" and c.desired is None]
    return Scope.of([ref_of(m) for m in planned.rendered.manifests] + kept)


@dataclass(frozen=True)
class Settlement:
    """What a converged apply records on its parent: the applied closure, and the scope it narrows to
    (None: it keeps what it lists)."""

    ref: ObjectRef
    scope: Scope | None
    applied: AppliedClosure

    def body(self, live: Manifest) -> Manifest:
        return settled_parent(self.ref, live, scope=self.scope, applied=self.applied)


def settlement(planned: PlannedChanges) -> Settlement | None:
    """After a converged apply: record the closure as applied and narrow the parent to what remains
    when it lists more — nothing when the parent already records this closure and fits (a no-op
    apply), or when nothing was written and there is no parent to record in."""
    changeset = planned.changeset
    parent = planned.live.parent
    written = Scope.of(c.ref for c in changeset.changes if c.action != "noop")
    scope = narrowed(
        parent, written=written, remaining=remaining_scope(planned), namespace=changeset.namespace
    )
    applied = with_kept(AppliedClosure.of(planned.rendered.manifests), changeset, applied_closure(parent))
    if parent is None and not changeset.has_changes:
        return None
    if scope is None and applied_closure(parent) == applied:
        return None
    return Settlement(parent_ref(changeset.plan, changeset.namespace), scope, applied)


def with_kept(applied: AppliedClosure, changeset: ChangeSet, before: AppliedClosure | None) -> AppliedClosure:
    """`applied` and each member the plan keeps although it left the plan (`reconcile.prune: false`, a
    keep annotation) as the last converged apply recorded it: applied by the plan once, so its later
    prune is a pending change, not drift of an object that joined the ApplySet outside the plan."""
    kept = {
        str(change.ref): before.hashes[str(change.ref)]
        for change in changeset.changes
        if before is not None
        and change.action == "noop"
        and change.desired is None
        and before.applied(change.ref)
    }
    return AppliedClosure({**kept, **applied.hashes}) if kept else applied


def converged_since(writer: KubeWriter, planned: PlannedChanges) -> None:
    """After a run that had nothing to write and found every object ready: when the generation the
    cluster is at was recorded as failed, it has converged since (its objects became ready, or this run
    waited until they did), and the parent says so. No write otherwise."""
    current = planned.changeset.generation
    if current is None or current.result != FAILED:
        return
    writer.mark_generation(planned.parent_ref, CurrentGeneration(current.number, CONVERGED))
