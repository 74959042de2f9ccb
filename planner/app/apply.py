"""The `apply` command: `apply_plans`, its entry point, chooses between `apply` (plan each file once,
then apply the plans through `planner.app.applying`), `apply --watch` (apply, then follow what was
written on the same informers through `planner.app.watching`) and `apply FILE`, the apply of a saved
plan after checking it was made against this cluster and docs/design.md §4's staleness checks.

Every plan is planned, applied and settled under its run lock (`planner.state.runlock.holding`): the locks are
taken after the plan files loaded (a broken file never locks anything) and before anything is read
for the diff, so the diff a run applies is never older than the last other writer's work; the
executor stops starting tasks once a lock is lost (`locks.lost` is its stop check)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.app.applying import (
    AppliedPlan,
    Applier,
    ApplyOptions,
    create_lock_namespaces,
    unheard,
)
from planner.app.history import read_generation
from planner.app.planning import (
    PlannedChanges,
    PlanOptions,
    checked_before_writing,
    plan,
    plan_rendered,
    recorded_plan,
)
from planner.app.rendering import render_loaded
from planner.app.target import Target, chart_capabilities, secret_refs
from planner.app.watching import (
    MonitorOptions,
    MonitorResult,
    by_runtime_id,
    follow,
    plan_runtime_ids,
    recorded_runs,
)
from planner.errors import (
    PlanFilesChangedError,
    SecretValuesChangedError,
    StalePlanError,
    UsageError,
    WrongClusterError,
)
from planner.events import Clock, EventSink, Skipped, SystemClock
from planner.execute import TaskOutcome
from planner.kube.informer import Informers
from planner.plan import LoadResult, load_plans
from planner.render.identity import RuntimeID
from planner.savedplan import (
    changed_secrets,
    closure_digest,
    cluster_mismatch,
    is_saved_plan,
    key_id,
    moved_objects,
    plan_files,
    read_saved_plans,
)
from planner.state.applyset import digest_key
from planner.state.runlock import Notice, holding
from planner.writes import new_digest_key


@dataclass(frozen=True, kw_only=True)
class ApplyResult:
    """What one apply did: the plans it loaded (for their warnings), each plan's execution, and why
    the run lost its lock (None when it held it to the end)."""

    loaded: LoadResult
    applied: list[AppliedPlan]
    lost: str | None = None


MANY_PLANS = 20  # from this many plans on, an apply says how far it got before its first write
PROGRESS_SECONDS = 1.0


class PhaseProgress:
    """Where an apply of many plans stands before its first write — loading the files, taking the
    locks, reading the cluster — as `notice` lines: the first as soon as a phase starts, then at most
    one a second. Silent under `MANY_PLANS`, where the phases take no time worth telling."""

    def __init__(self, notice: Notice, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.notice, self.clock = notice, clock
        self.phase, self.last = "", 0.0

    def of(self, phase: str) -> Callable[[int, int], None]:
        """The progress callback of `phase` (`loaded plan files`), called with (done, total)."""

        def heard(done: int, total: int) -> None:
            if total < MANY_PLANS:
                return
            now = self.clock()
            if phase != self.phase or now - self.last >= PROGRESS_SECONDS or done == total:
                self.phase, self.last = phase, now
                self.notice(f"{phase}: {done}/{total}")

        return heard


@dataclass(frozen=True, kw_only=True)
class ApplyRun:
    """What `apply` did: the plans it loaded (for their warnings), each plan's execution, why it lost
    its run lock (None when it did not), and with `--watch` what the monitor saw afterwards (None when
    the apply was interrupted or lost its lock)."""

    loaded: LoadResult
    applied: list[AppliedPlan]
    lost: str | None = None
    watched: bool = False
    followed: MonitorResult | None = None

    @classmethod
    def of(
        cls, done: ApplyResult, *, watched: bool = False, followed: MonitorResult | None = None
    ) -> ApplyRun:
        return cls(
            loaded=done.loaded, applied=done.applied, lost=done.lost, watched=watched, followed=followed
        )

    @property
    def ok(self) -> bool:
        """Every plan converged under its lock and, when watched, every workload became steady and none
        failed."""
        if self.lost or not all(each.result.ok for each in self.applied):
            return False
        followed = self.followed
        return not self.watched or (followed is not None and not followed.failed and followed.steady)


def apply_plans(
    arguments: Sequence[str | Path],
    *,
    target: Target,
    options: ApplyOptions,
    watch: MonitorOptions | None,
    sink: EventSink,
    notice: Notice,
) -> ApplyRun:
    """`apply`: plan files and directories, followed afterwards with `watch`; or one saved plan
    (`plan --out`), applied alone with the options and namespace it carries, and never watched. The
    run lock's sentences (waiting, taking over, failing to release) go to `notice`."""
    saved = [Path(argument) for argument in arguments if is_saved_plan(Path(argument))]
    if saved:
        if len(arguments) > 1 or options.plan != PlanOptions() or target.namespace is not None:
            raise UsageError(
                "a saved plan is applied alone and carries its own options: drop the other plans and "
                "-n, --allow-data-loss, --adopt, --rerun, --allow-empty"
            )
        if watch is not None:
            raise UsageError("--watch follows plan files; run `planner monitor` after applying a saved plan")
        return ApplyRun.of(apply_saved(saved[0], target=target, options=options, sink=sink, notice=notice))
    if watch is not None:
        done, followed = apply_and_watch(
            arguments, target=target, options=options, watch=watch, sink=sink, notice=notice
        )
        return ApplyRun.of(done, watched=True, followed=followed)
    return ApplyRun.of(apply(arguments, target=target, options=options, sink=sink, notice=notice))


def apply(
    paths: Sequence[str | Path],
    *,
    target: Target,
    options: ApplyOptions,
    sink: EventSink,
    notice: Notice = unheard,
    clock: Clock | None = None,
    informers: Informers | None = None,
) -> ApplyResult:
    """Plan every file under its run lock, then run each plan's execution along its DAG, waiting through
    informer caches (one per kind). Events go to `sink`, the lock's sentences (waiting for it, taking
    it over) to `notice`; the result says what converged. Informers passed in stay the caller's to stop
    (so `apply --watch` can hand them to the monitor); otherwise they stop here."""
    progress = PhaseProgress(notice)
    # A broken plan is reported as such before any cluster is looked for.
    loaded = load_plans(
        paths,
        progress=progress.of("loading plan files"),
        secret_refs=secret_refs(target),
        capabilities=chart_capabilities(target),
    )
    client = target.client
    # Every check that asks the cluster comes before the run's first write (the lock namespaces).
    rendered = checked_before_writing(client, render_loaded(loaded, target.default_namespace()))
    keys = [(each.plan.name, each.namespace) for each in rendered]
    made = create_lock_namespaces(client, keys, notice)
    with holding(
        client, keys, options=options.lock, notice=notice, progress=progress.of("taking run locks")
    ) as locks:
        # --adopt must see foreign objects to apply over them; otherwise a create's 409 finds them.
        probe = options.plan.adopt
        planned = plan_rendered(
            rendered,
            client=client,
            options=options.plan,
            probe_foreign=probe,
            created_by_run=made,
            progress=progress.of("reading the cluster"),
            references_checked=True,
            locked=True,
        )
        run = Applier.for_target(
            target,
            options=options,
            sink=sink,
            clock=clock,
            informers=informers,
            stop=locks.lost,
        )
        applied = run.execute_all(planned)
        return ApplyResult(loaded=loaded, applied=applied, lost=locks.lost())


def apply_and_watch(
    paths: Sequence[str | Path],
    *,
    target: Target,
    options: ApplyOptions,
    watch: MonitorOptions,
    sink: EventSink,
    notice: Notice,
    clock: Clock | None = None,
) -> tuple[ApplyResult, MonitorResult | None]:
    """`apply --watch`: apply (under the run lock, released once the apply is done: following writes
    nothing), then hand the runtime IDs `followed_after` picks to the monitor on the same informers
    (one per kind per process) and follow them until each is steady or `watch.timeout`; each one not
    followed is reported as a `Skipped` event naming the failure behind it. An apply that was
    interrupted or lost its run lock follows nothing (the result is None)."""
    informers = Informers(target.client)
    clock = clock or SystemClock()
    try:
        done = apply(
            paths, target=target, options=options, sink=sink, notice=notice, clock=clock, informers=informers
        )
        if done.lost or any(each.result.interrupted for each in done.applied):
            return done, None
        rids, not_followed = followed_after(done.applied)
        for each in not_followed:
            sink.emit(_not_followed_event(each, clock))
        scope = frozenset(rid.namespace for rid in rids)
        # read after the apply: a Job it saw end is recorded and let go, and its TTL may remove it first
        recorded = by_runtime_id(recorded_runs(target.client, scope)) if rids else {}
        followed = follow(
            informers, rids, options=watch, sink=sink, scope=scope, clock=clock, recorded=recorded
        )
        return done, followed
    finally:
        informers.stop()


def _not_followed_event(not_followed: NotFollowed, clock: Clock) -> Skipped:
    return Skipped(
        time=clock.now(),
        message=f"not followed: {not_followed.because} failed",
        object=str(not_followed.outcome.ref),
        runtime_id=str(not_followed.runtime_id),
        task=f"watch {not_followed.runtime_id}",
        because=not_followed.because,
    )


@dataclass(frozen=True, kw_only=True)
class NotFollowed:
    """A runtime ID `apply --watch` does not follow: `outcome` is its task that was skipped (because a
    dependency failed) or whose write failed, so its objects were not all written."""

    runtime_id: RuntimeID
    outcome: TaskOutcome

    @property
    def because(self) -> str:
        return self.outcome.because or self.outcome.task


def followed_after(applied: Sequence[AppliedPlan]) -> tuple[list[RuntimeID], list[NotFollowed]]:
    """Which runtime IDs an apply hands to the monitor: every one whose objects were written or already
    current, those whose waits failed included (a failed Job then reports ContainerFailed); not those
    with a task skipped because a dependency failed, or a write that failed. Plan order."""
    followed: list[RuntimeID] = []
    not_followed: list[NotFollowed] = []
    for each in applied:
        rendered = each.planned.rendered
        tasks = {task.id: task for task in each.execution.tasks}
        outcomes: dict[str, list[TaskOutcome]] = {}
        for outcome in each.result.outcomes:
            owner = tasks[outcome.task].runtime_id
            if owner is not None:
                outcomes.setdefault(owner, []).append(outcome)
        for rid in plan_runtime_ids(rendered.plan, rendered.default_namespace):
            held = [
                o
                for o in outcomes.get(str(rid), [])
                if o.status == "skipped" or (o.status == "failed" and not tasks[o.task].is_wait)
            ]
            if held:
                not_followed.append(NotFollowed(runtime_id=rid, outcome=held[0]))
            else:
                followed.append(rid)
    return followed, not_followed


def apply_saved(
    path: Path, *, target: Target, options: ApplyOptions, sink: EventSink, notice: Notice = unheard
) -> ApplyResult:
    """Apply exactly the changes of a saved plan (`plan --out`), after its checks.

    A saved plan made against another cluster is refused first (WrongClusterError). Then, under the
    run lock of every plan it holds, each recorded plan is made again from its files (secrets resolved
    again, never read from the saved plan) with its recorded options, into its recorded namespace; it
    is refused when the files render a different closure (PlanFilesChangedError) or any object moved
    (StalePlanError, naming each), and only then executed. `options.plan` is ignored: the saved plan
    carries its own."""
    documents, cluster = read_saved_plans(path)
    if not documents:
        raise UsageError(f"{path}: the saved plan holds no plans")
    mismatch = cluster_mismatch(cluster, target.identity())
    if mismatch:
        raise WrongClusterError(f"{path}: {mismatch}")
    client = target.client
    keys = [(str(document["plan"]), str(document["namespace"])) for document in documents]
    made = create_lock_namespaces(client, keys, notice)
    with holding(client, keys, options=options.lock, notice=notice) as locks:
        checked: list[PlannedChanges] = []
        loaded = LoadResult(plans=())
        for document in documents:
            loaded, fresh = _replanned(document, target=target, made=made)
            checked.append(fresh)
        run = Applier.for_target(target, options=options, sink=sink, stop=locks.lost)
        applied = run.execute_all(checked)
        return ApplyResult(loaded=loaded, applied=applied, lost=locks.lost())


def _replanned(
    document: dict[str, Any], *, target: Target, made: frozenset[str]
) -> tuple[LoadResult, PlannedChanges]:
    """The saved plan's plan made again now (the namespaces this run `made` planned as missing, as they
    were before it), refused when its closure or its objects moved."""
    files = plan_files(document, Path.cwd())  # none for a rollback's plan
    options = PlanOptions.from_recorded(document.get("options") or {})
    here = target.in_namespace(str(document["namespace"]))
    rollback = document.get("rollback")
    if isinstance(rollback, dict):  # a rollback's plan: made again from its generation's record
        number = int(rollback["generation"])
        files = [f"generation {number} of plan {document['plan']}"]
        generation = read_generation(here.client, str(document["plan"]), str(document["namespace"]), number)
        loaded = LoadResult(plans=())
        rendered = [recorded_plan(generation)]
        results = plan_rendered(rendered, client=here.client, options=options, created_by_run=made)
    else:
        loaded, results = plan(files, target=here, options=options, created_by_run=made, pools=False)
    fresh = next((r for r in results if r.rendered.plan.name == document["plan"]), None)
    key = checking_key(document, fresh)
    if fresh is None:
        raise PlanFilesChangedError(
            f"plan files changed since the plan was made: {', '.join(files)} no longer declare plan "
            f"{document['plan']}"
        )
    _check_closure(document, fresh, key, files)
    remade = fresh.saved(options, key, root=Path(str(document.get("root") or Path.cwd())))
    moved = moved_objects(document, remade) or changed_differently(document, remade)
    if moved:
        raise StalePlanError(moved)
    return loaded, fresh


def changed_differently(saved: dict[str, Any], remade: dict[str, Any]) -> list[tuple[str, str]]:
    """The objects whose change differs between the saved plan and the same plan made now."""
    before = {c["object"]: c for c in saved["changes"]}
    after = {c["object"]: c for c in remade["changes"]}
    return [
        (name, "would change differently")
        for name in sorted(before.keys() | after.keys())
        if before.get(name) != after.get(name)
    ]


def _check_closure(
    document: dict[str, Any], fresh: PlannedChanges, key: bytes | None, files: list[str]
) -> None:
    """Refuse a plan whose files render another closure now, naming the Secrets when only their values
    (resolved again from the environment or files beside the plan) differ."""
    manifests = fresh.rendered.manifests
    if closure_digest(manifests, key) == document["closure_digest"]:
        return
    plan_name = document["plan"]
    if secrets := changed_secrets(document, manifests, key):
        raise SecretValuesChangedError(
            f"secret values changed since the plan was made: {', '.join(secrets)} (plan {plan_name}): the "
            "plan files are the same, but a secret they read from the environment or a file now resolves "
            "to another value than the one reviewed; give apply the same secrets, or plan again"
        )
    raise PlanFilesChangedError(
        f"plan files changed since the plan was made: {', '.join(files)} (plan {plan_name})"
    )


def checking_key(document: dict[str, Any], fresh: PlannedChanges | None) -> bytes | None:
    """The digest key to check a saved plan with: the one its plan's parent holds, which must be the one
    the plan was made with (`digest_key_id`). A plan saved without Secrets to digest names none; should
    Secrets be there now, a random key makes their digests differ, so the checks name what changed."""
    if fresh is None:
        return None
    if "digest_key_id" not in document:
        return new_digest_key() if fresh.needs_key else None
    key = digest_key(fresh.live.parent)
    if key is None or key_id(key) != document["digest_key_id"]:
        gone = "is gone" if key is None else "is another"
        reason = f"its key for digesting Secret values {gone} (the parent was deleted or replaced)"
        raise StalePlanError([(str(fresh.parent_ref), reason)])
    return key
