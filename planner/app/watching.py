"""Following workloads: `monitor` (lifecycle events through one informer per kind), `follow` (the
monitor over informers the caller owns, which `apply --watch` hands what it wrote) and `status` (a
table of runtime IDs, once or whenever it changes)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from planner import workloads
from planner.app.history import current, read_generation
from planner.app.planning import render_plans
from planner.app.runs import RunRecorder
from planner.app.selector import PlanRef, selected_plans
from planner.app.target import Target
from planner.errors import ForbiddenError, PlannerError, RuntimeIDError
from planner.events import Clock, EventSink, SystemClock
from planner.generations import CONVERGED
from planner.kinds import (
    JOB,
    PERSISTENT_VOLUME_CLAIM,
    POD,
    SECRET,
    KindInfo,
)
from planner.kube.client import KubeClient
from planner.kube.informer import Informers
from planner.live import get_or_none, read_parents
from planner.monitor import Monitor
from planner.monitor.status import StatusRow, status_rows
from planner.objects import (
    ANNOTATION_RUNTIME_ID,
    LABEL_WORKLOAD,
    Manifest,
    ObjectRef,
    annotations_of,
    labels_of,
    ref_of,
)
from planner.plan import Plan
from planner.render.identity import (
    RuntimeID,
    sandbox_runtime_id,
    workload_runtime_id,
)
from planner.state.applyset import RunRecord, current_generation, run_records
from planner.writes import KubeWriter


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
    """The runtime IDs that failed, and whether every one followed was steady at the end; `ok` when
    none failed and, for a monitor that was to run until done, all were steady."""

    failed: tuple[str, ...]
    steady: bool
    until_done: bool = False

    @property
    def ok(self) -> bool:
        return not self.failed and (self.steady or not self.until_done)


def plan_runtime_ids(plan: Plan, default_namespace: str) -> list[RuntimeID]:
    """Every workload's and sandbox's runtime ID, in plan order."""
    workloads = [workload_runtime_id(plan, w, default_namespace) for w in plan.workloads]
    return workloads + [sandbox_runtime_id(plan, s, default_namespace) for s in plan.sandboxes]


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
) -> MonitorResult:
    """Follow runtime IDs (and with `attach_all` every managed workload) through one informer per kind,
    reporting Container* events to `sink` from the informers' threads."""
    rids = list(dict.fromkeys(RuntimeID.parse(text) for text in runtime_ids))  # once each, in order
    if not rids and not options.attach_all:
        raise PlannerError("name at least one runtime ID, or --all")
    client = target.client
    scope = monitor_scope(rids, target=target, attach_all=options.attach_all)
    runs = recorded_runs(client, scope)
    informers = Informers(client)

    def discover() -> list[tuple[ObjectRef, str]]:  # the runs of applies made since the monitor started
        return [(parent, run.run_key) for parent, run in recorded_runs(client, scope)]

    recorder = RunRecorder(client, KubeWriter(client), discover=discover)
    try:
        for parent, record in runs:  # with an outcome too: its Job may still hold the run-record finalizer
            recorder.expect(parent, [record.run_key])
        return follow(
            informers,
            rids,
            options=options,
            sink=sink,
            scope=scope,
            clock=clock,
            recorded=by_runtime_id(runs),
            recorder=recorder,
        )
    finally:
        recorder.close()
        informers.stop()


def recorded_runs(client: KubeClient, scope: frozenset[str] | None) -> list[tuple[ObjectRef, RunRecord]]:
    """Every run planner's ApplySet parents in `scope` (None: everywhere) record, with its parent, so
    the monitor can report a Job deleted (by its TTL) while no monitor ran, with how it ended, and record
    the outcomes of the runs that have none yet. Best effort: without permission to list Secrets there
    is no record, and only labelled workloads are found."""
    try:
        parents = read_parents(client, scope)
    except ForbiddenError:
        return []
    return [(ref_of(parent), run) for parent in parents for run in run_records(parent).values()]


# Run records are of Jobs: the runtime ID kind of the workload a Job is.
_RUN_KIND = workloads.named_for(JOB).name


def by_runtime_id(runs: Sequence[tuple[ObjectRef, RunRecord]]) -> dict[RuntimeID, RunRecord]:
    """The records of the runs that ran, by their Job's runtime ID (what `Monitor` reads them by)."""
    return {rid: run for _, run in runs if run.ran and (rid := _recorded_runtime_id(run))}


def _recorded_runtime_id(record: RunRecord) -> RuntimeID | None:
    try:
        if record.runtime_id:
            parsed = RuntimeID.parse(record.runtime_id)
            return parsed if parsed.kind == _RUN_KIND else None
        return RuntimeID(runtime="k8s", namespace=record.namespace, kind=_RUN_KIND, name=record.name)
    except RuntimeIDError:
        return None


def follow(
    informers: Informers,
    runtime_ids: Sequence[RuntimeID],
    *,
    options: MonitorOptions,
    sink: EventSink,
    scope: frozenset[str] | None,
    clock: Clock | None = None,
    recorded: Mapping[RuntimeID, RunRecord] | None = None,
    recorder: RunRecorder | None = None,
) -> MonitorResult:
    """The monitor over informers the caller owns (and stops): `apply --watch` hands its applied runtime
    IDs here with the informers its waits used, so one process keeps one informer per kind. `scope`
    must be covered by the informers already created (Informers refuses a wider one). `recorder`
    starts only once every runtime ID is registered: a Job it lets go may vanish at once (its TTL has
    passed), and the monitor must have seen it end first, else it would report it Deleted."""
    watcher = Monitor(informers, sink, clock=clock or SystemClock(), namespaces=scope, recorded=recorded)
    try:
        for rid in runtime_ids:
            watcher.mark_if_not_monitoring(rid)
        if options.attach_all:
            watcher.attach_all(scope, follow=not options.until_done)
        if recorder is not None and recorder.expecting:
            recorder.follow(informers.informer(JOB, namespaces=scope), snapshot=True)
        if options.until_done:
            steady = watcher.wait_until_steady(options.timeout)
        else:
            watcher.follow_for(options.timeout)
            steady = watcher.all_steady()
    finally:
        watcher.stop()
    return MonitorResult(failed=tuple(watcher.failed()), steady=steady, until_done=options.until_done)


STATUS_KINDS = (JOB, PERSISTENT_VOLUME_CLAIM, POD)


def status_kinds(rids: Sequence[RuntimeID]) -> list[KindInfo]:
    """What `status` reads: pods, claims and runs always, the workloads' own kinds only for runtime IDs
    of their kind, so a user who may not list a kind still sees the rest."""
    wanted = {
        kind
        for rid in rids
        if rid.kind != workloads.SANDBOX
        for kind in workloads.named(rid.kind).watched
        if kind not in STATUS_KINDS
    }
    return [*STATUS_KINDS, *sorted(wanted, key=lambda kind: kind.kind)]


def status_runtime_ids(arguments: Sequence[str], *, target: Target) -> tuple[list[RuntimeID], frozenset[str]]:
    """Runtime IDs from the arguments: each one with a `|` is a runtime ID, a plan file or directory
    lists its workloads and sandboxes in plan order, and a plan name (`NAME`, `NS/NAME`) those its
    current generation applied. Every argument is checked before any request. Also the objects of those
    plans their current generation's apply never created (`_never_created`)."""
    ids = [RuntimeID.parse(a) for a in arguments if "|" in a]
    paths = [a for a in arguments if "|" not in a and Path(a).exists()]
    named = selected_plans([a for a in arguments if "|" not in a and not Path(a).exists()], target=target)
    never: frozenset[str] = frozenset()
    if paths:
        _, rendered = render_plans(paths, target=target)
        for each in rendered:
            ids += plan_runtime_ids(each.plan, each.default_namespace)
            never |= _never_created(target.client, each.plan.name, each.namespace)
    for ref in named:
        ids += applied_runtime_ids(target.client, ref)
        never |= _never_created(target.client, ref.name, ref.namespace)
    return list(dict.fromkeys(ids)), never


def _never_created(client: KubeClient, plan: str, namespace: str) -> frozenset[str]:
    """The objects (`deployment/ns/web`) whose create the plan's current generation failed or skipped —
    a workload skipped because its dependency failed: absent, it was never created, not deleted."""
    current = current_generation(get_or_none(client, SECRET, namespace, plan))
    if current is None or current.result == CONVERGED:
        return frozenset()
    try:
        generation = read_generation(client, plan, namespace, current.number)
    except PlannerError:
        return frozenset()  # pruned or unreadable: nothing to tell
    return frozenset(
        task.removeprefix("create ") for task in generation.failed_tasks if task.startswith("create ")
    )


def applied_runtime_ids(client: KubeClient, ref: PlanRef) -> list[RuntimeID]:
    """The runtime IDs of what the plan's current generation applied, in its closure's order."""
    at = current(client, ref.name, ref.namespace)
    if at is None:
        raise PlannerError(
            f"plan {ref.name} (namespace {ref.namespace}) has no recorded apply: name its plan file"
        )
    closure = read_generation(client, ref.name, ref.namespace, at.number).closure
    found = (annotations_of(manifest).get(ANNOTATION_RUNTIME_ID) for manifest in closure)
    return [RuntimeID.parse(str(text)) for text in dict.fromkeys(found) if text]


def _cache_rows(
    informers: Informers, rids: Sequence[RuntimeID], scope: frozenset[str], now: float, never: frozenset[str]
) -> list[StatusRow]:
    def lookup(kind: KindInfo, namespace: str, name: str) -> Manifest | None:
        return informers.informer(kind, namespaces=scope).get(namespace, name)

    def pods_of(namespace: str, name: str) -> list[Manifest]:
        pods = informers.informer(POD, namespaces=scope).items([namespace])
        return [p for p in pods if labels_of(p).get(LABEL_WORKLOAD) == name]

    return status_rows(rids, lookup=lookup, pods_of=pods_of, now=now, never_created=never)


def status(
    arguments: Sequence[str],
    *,
    target: Target,
    on_rows: Callable[[list[StatusRow]], None],
    watch: bool = False,
    timeout: float | None = None,
    clock: Clock | None = None,
) -> list[StatusRow]:
    """Rows for the runtime IDs (or plans) given, read through one informer per kind; `on_rows` gets them
    once, and with `watch` again whenever they change, until `timeout` (None: until interrupted)."""
    rids, never_created = status_runtime_ids(arguments, target=target)
    if not rids:
        raise PlannerError(
            f"{', '.join(arguments)}: no workloads or sandboxes to show (status shows those; `planner "
            "plan` tells whether a plan's other objects match)"
            if arguments
            else "name runtime IDs or plan files"
        )
    clock = clock or SystemClock()
    scope = frozenset(rid.namespace for rid in rids)
    informers = Informers(target.client)
    changed = threading.Event()
    try:
        for kind in status_kinds(rids):
            informer = informers.informer(kind, namespaces=scope)
            informer.wait_until_synced(60.0)
            informer.subscribe(lambda _type, _obj: changed.set())
        rows = _cache_rows(informers, rids, scope, clock.now(), never_created)
        on_rows(rows)
        deadline = None if timeout is None else clock.now() + timeout
        while watch and (deadline is None or clock.now() < deadline):
            changed.wait(1.0 if deadline is None else max(0.0, min(1.0, deadline - clock.now())))
            changed.clear()
            fresh = _cache_rows(informers, rids, scope, clock.now(), never_created)
            if _without_age(fresh) != _without_age(rows):
                rows = fresh
                on_rows(rows)
    finally:
        informers.stop()
    return rows


def _without_age(rows: Sequence[StatusRow]) -> list[StatusRow]:
    """Rows compared for `--watch`: a change is news, time passing is not."""
    return [dataclasses.replace(row, age="") for row in rows]
