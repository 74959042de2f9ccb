"""`reconcile`: every plan under some paths, each on its own — take its lock, plan, apply what drifted or
is pending (prune included), release — several at once, one plan's failure never stopping another.

`reconcile_plan` is the unit: one rendered plan in, one `PlanOutcome` out, every error caught into the
outcome. `planner reconcile` runs it over the plans `find_plan_files` finds; a long-running controller
calls it per plan on its own schedule, with its own stop event.

Plans are found by `find_plan_files`, the rule every command that takes plan paths follows (recursive,
path order; see planner/plan/load.py). Every file loads on its own, so a broken one fails only its own
row; two files declaring the same plan in the same namespace (they would share a lock and fight over one
ApplySet) both fail.

With `check`, nothing is written: no lock is taken (a Lease is a write), and each plan's changes are
reported with their cause (drift or pending) as `plan` finds them.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for_futures
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from planner.app.applying import Applier, ApplyOptions, create_lock_namespaces
from planner.app.planning import (
    PlannedChanges,
    check_data_loss,
    checked_before_writing,
    plan_rendered,
)
from planner.app.rendering import RenderedPlan, render_loaded
from planner.app.target import Target, chart_capabilities, secret_refs
from planner.diff import ChangeSet
from planner.errors import LockHeldError, PlannerError
from planner.events import Event
from planner.execute import INTERRUPTED, ExecutionResult
from planner.kube.informer import Informers
from planner.plan import load_plans
from planner.plan.helm_engine import Capabilities
from planner.plan.load import find_plan_files
from planner.plan.secrets import SecretRefs
from planner.state.runlock import Notice, holding

Result = Literal["unchanged", "applied", "changes", "locked", "failed"]
SIGNAL_POLL_SECONDS = 0.2


@dataclass(frozen=True, kw_only=True)
class ReconcileOptions:
    """`apply` is what each plan is applied with (its lock options included); `check` writes nothing;
    `parallel_plans` is how many plans run at once; `prune=False` keeps what left the plan (a Plan
    object's `reconcile.prune`); `correct_drift=False` leaves drifted objects as they are (a Plan
    object's `reconcile.driftCorrection: off`); `namespace_exists`: the plan's namespace holds the
    plan itself (a Plan object), so its run lock's namespace is neither listed nor created."""

    apply: ApplyOptions = dataclasses.field(default_factory=ApplyOptions)
    check: bool = False
    parallel_plans: int = 4
    prune: bool = True
    correct_drift: bool = True
    namespace_exists: bool = False


@dataclass(frozen=True, kw_only=True)
class PlanOutcome:
    """One plan's reconcile. `result`: `unchanged` (nothing drifted or pending), `applied` (changes
    applied and converged), `changes` (`--check` found some), `locked` (another run holds its lock;
    skipped), `failed`. `changeset` is what the plan found (None when it never got that far), `message`
    says what happened in a sentence, `finished` is when (seconds since the epoch), `generation` the
    number of the generation it recorded (None: it wrote nothing, or `--no-history`)."""

    file: str
    plan: str
    namespace: str
    result: Result
    changeset: ChangeSet | None = None
    message: str = ""
    duration: float = 0.0
    finished: float = 0.0
    generation: int | None = None
    drift_left: int = 0  # drift found and left as it was (`correct_drift=False`): not in `changeset`

    @property
    def drift(self) -> int:
        """The drift found: corrected, or left as found."""
        return (len(self.changeset.caused_by("drift")) if self.changeset else 0) + self.drift_left

    @property
    def drift_corrected(self) -> int:
        """The drift this reconcile put back: what it found when it applied, but what it left."""
        return self.drift - self.drift_left if self.result == "applied" else 0

    @property
    def pending(self) -> int:
        return len(self.changeset.caused_by("pending")) if self.changeset else 0


class _Unheard:
    """The executor's events during a reconcile: the outcome summarises them, nothing prints them."""

    def emit(self, event: Event) -> None:
        return None


# --- one plan ----------------------------------------------------------------------------------------


def reconcile_plan(
    rendered: RenderedPlan,
    *,
    target: Target,
    options: ReconcileOptions,
    notice: Notice,
    stop: threading.Event | None = None,
    informers: Informers | None = None,
) -> PlanOutcome:
    """Reconcile one plan: under its lock, plan it and apply what drifted or is pending (prune
    included), then release; with `options.check`, only plan. Never raises a PlannerError: every
    failure is the outcome's. Setting `stop` ends a wait for the lock and stops the apply from starting
    further tasks (a controller shutting down, Ctrl-C). The apply waits through `informers` when given
    (a controller's, shared by all its reconciles), else through watches of its own."""
    started = time.monotonic()
    done = _Outcome(rendered, started)
    try:
        if options.check:
            (planned,) = plan_rendered([rendered], client=target.client, options=options.apply.plan)
            # what the apply would refuse fails the check too
            check_data_loss([planned], consent=options.apply.plan.data_loss_consent)
            changeset = planned.changeset
            if changeset.conflicts:
                return done("failed", changeset, "; ".join(changeset.conflicts))
            return done(_check_result(changeset), changeset, _check_message(changeset))
        return _apply(
            rendered, target=target, options=options, notice=notice, stop=stop, done=done, informers=informers
        )
    except LockHeldError as held:
        return done("locked", None, f"locked by {held.holder}" if held.holder else str(held))
    except PlannerError as error:
        return done("failed", None, str(error))
    except Exception as bug:  # a bug in one plan's reconcile must not take the others down
        return done("failed", None, f"{type(bug).__name__}: {bug}")


class _Outcome:
    def __init__(self, rendered: RenderedPlan, started: float) -> None:
        self.rendered, self.started = rendered, started

    def __call__(
        self,
        result: Result,
        changeset: ChangeSet | None,
        message: str,
        generation: int | None = None,
        *,
        drift_left: int = 0,
    ) -> PlanOutcome:
        return PlanOutcome(
            file=self.rendered.plan.source.file,
            plan=self.rendered.plan.name,
            namespace=self.rendered.namespace,
            result=result,
            changeset=changeset,
            message=message,
            duration=time.monotonic() - self.started,
            finished=time.time(),
            generation=generation,
            drift_left=drift_left,
        )


def _apply(
    rendered: RenderedPlan,
    *,
    target: Target,
    options: ReconcileOptions,
    notice: Notice,
    stop: threading.Event | None,
    done: _Outcome,
    informers: Informers | None,
) -> PlanOutcome:
    client = target.client
    applying = options.apply
    (rendered,) = checked_before_writing(client, [rendered])  # nothing is written for a broken plan
    keys = [(rendered.plan.name, rendered.namespace)]
    made = frozenset() if options.namespace_exists else create_lock_namespaces(client, keys, notice)
    with holding(client, keys, options=applying.lock, notice=notice, stop=stop) as locks:
        (planned,) = plan_rendered(
            [rendered],
            client=client,
            options=applying.plan,
            probe_foreign=False,
            created_by_run=made,
            references_checked=True,
            locked=True,
        )
        if not options.prune:
            planned = _without_prune(planned)
        left = 0 if options.correct_drift else len(planned.changeset.caused_by("drift"))
        if left:
            planned = _without_drift(planned)

        def stopped() -> str | None:
            return locks.lost() or (INTERRUPTED if stop is not None and stop.is_set() else None)

        applier = Applier.for_target(
            target, options=applying, sink=_Unheard(), stop=stopped, informers=informers
        )
        (applied,) = applier.execute_all([planned])
        lost = locks.lost()
    changeset = planned.changeset
    generation = applier.recorded[-1].number if applier.recorded else None
    if lost:
        return done("failed", changeset, lost, generation, drift_left=left)
    if not applied.result.ok:
        return done("failed", changeset, _failure_message(applied.result), generation, drift_left=left)
    kept = f"; {objects_phrase(left)} drifted, left as found (driftCorrection: off)" if left else ""
    if not changeset.has_changes:
        message = f"the cluster matches plan {changeset.plan}" if not left else "nothing written"
        if changeset.unready:
            message += f" (waited for {objects_phrase(len(changeset.unready))} to become ready)"
        return done("unchanged", changeset, message + kept, drift_left=left)
    return done("applied", changeset, _applied_message(planned) + kept, generation, drift_left=left)


def _without_prune(planned: PlannedChanges) -> PlannedChanges:
    """Each delete of something that left the plan kept instead, as a keep annotation keeps it: still a
    member of the plan's ApplySet, never deleted."""
    kept = tuple(
        dataclasses.replace(change, action="noop", reason="kept: reconcile.prune is false", drift=False)
        if change.action == "delete" and change.desired is None
        else change
        for change in planned.changeset.changes
    )
    return dataclasses.replace(planned, changeset=dataclasses.replace(planned.changeset, changes=kept))


def _without_drift(planned: PlannedChanges) -> PlannedChanges:
    """Each change that is only drift kept as it is found: nothing written for it."""
    kept = tuple(
        dataclasses.replace(change, action="noop", reason="left: driftCorrection is off", drift=False)
        if change.cause == "drift"
        else change
        for change in planned.changeset.changes
    )
    return dataclasses.replace(planned, changeset=dataclasses.replace(planned.changeset, changes=kept))


def _check_result(changeset: ChangeSet) -> Result:
    """`changes` when anything is to write; else `failed` when anything is not ready (the plan is not
    live: an apply would wait for it); else `unchanged`."""
    if changeset.has_changes:
        return "changes"
    return "failed" if changeset.unready else "unchanged"


def _check_message(changeset: ChangeSet) -> str:
    unready = _unready_message(changeset)
    if not changeset.has_changes:
        if unready:
            return f"{unready}; nothing written (--check)"
        return f"the cluster matches plan {changeset.plan}"
    drift, pending = len(changeset.caused_by("drift")), len(changeset.caused_by("pending"))
    also = f"; {unready}" if unready else ""
    return f"{drift} drift, {pending} pending{also}; nothing written (--check)"


def objects_phrase(count: int) -> str:
    return f"{count} object{'' if count == 1 else 's'}"


def _unready_message(changeset: ChangeSet) -> str:
    """`not ready: deployment shop/api (available 0/2)`, the first of them and how many more."""
    unready = changeset.unready
    if not unready:
        return ""
    first = unready[0]
    more = f" (and {len(unready) - 1} more)" if len(unready) > 1 else ""
    return f"not ready: {first.ref.described} ({first.unready}){more}"


def _applied_message(planned: PlannedChanges) -> str:
    changeset = planned.changeset
    drift, pending = len(changeset.caused_by("drift")), len(changeset.caused_by("pending"))
    return f"applied {drift} drift and {pending} pending changes; converged"


TOLD_FAILURES = 3  # failed tasks a reconcile's message names; how many more it counts


def _failure_message(result: ExecutionResult) -> str:
    """The failed tasks (then the skipped ones), each with why, the first few by name: a status and
    an Event must say what failed, not only that more did."""
    if result.stopped:
        return f"stopped: {result.stopped}"
    told = [f"{each.task}: {each.message}" for each in (*result.failed, *result.skipped)]
    more = len(told) - TOLD_FAILURES
    return "; ".join(told[:TOLD_FAILURES]) + (f" (and {more} more failed or skipped)" if more > 0 else "")


# --- many plans --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Prepared:
    """A plan file loaded and rendered, or the outcome that says why it could not be."""

    rendered: RenderedPlan | None
    failed: PlanOutcome | None


def _prepare(
    file: Path,
    default_namespace: str,
    notice: Notice,
    refs: SecretRefs,
    capabilities: Callable[[], Capabilities],
) -> _Prepared:
    try:
        loaded = load_plans([file], secret_refs=refs, capabilities=capabilities)
    except PlannerError as broken:
        outcome = PlanOutcome(
            file=str(file), plan="", namespace="", result="failed", message=str(broken), finished=time.time()
        )
        return _Prepared(None, outcome)
    for warning in loaded.warnings:
        notice(f"{warning}")
    (rendered,) = render_loaded(loaded, default_namespace)
    return _Prepared(rendered, None)


def _without_duplicates(prepared: list[_Prepared]) -> list[_Prepared]:
    """Two files declaring one plan in one namespace fail both: they would fight over one ApplySet."""
    files: dict[tuple[str, str], list[str]] = {}
    for each in prepared:
        if each.rendered is not None:
            key = (each.rendered.plan.name, each.rendered.namespace)
            files.setdefault(key, []).append(each.rendered.plan.source.file)
    result = []
    for each in prepared:
        rendered = each.rendered
        twins = files.get((rendered.plan.name, rendered.namespace), []) if rendered else []
        if rendered is not None and len(twins) > 1:
            message = (
                f"plan {rendered.plan.name} (namespace {rendered.namespace}) is declared by "
                f"{' and '.join(twins)}: one plan, one file"
            )
            failed = PlanOutcome(
                file=rendered.plan.source.file,
                plan=rendered.plan.name,
                namespace=rendered.namespace,
                result="failed",
                message=message,
                finished=time.time(),
            )
            each = _Prepared(None, failed)
        result.append(each)
    return result


def reconcile(
    paths: Sequence[str | Path],
    *,
    target: Target,
    options: ReconcileOptions,
    notice: Notice,
    on_outcome: Callable[[PlanOutcome], None],
) -> list[PlanOutcome]:
    """Reconcile every plan under `paths`, `options.parallel_plans` at a time. `on_outcome` gets each
    plan's outcome as it finishes (from this thread); the list returned is in the order the plans were
    found. Ctrl-C (or SIGTERM, which the CLI turns into it) stops every plan from starting further tasks,
    lets them release their locks, and is raised again."""
    files = find_plan_files(paths)
    if not files:
        raise PlannerError(
            f"no plan files (*.yaml, *.yml declaring kind: Plan) under {', '.join(map(str, paths))}"
        )
    default_namespace = target.default_namespace()
    refs = secret_refs(target)
    capabilities = chart_capabilities(target)
    prepared = _without_duplicates(
        [_prepare(file, default_namespace, notice, refs, capabilities) for file in files]
    )
    outcomes: list[PlanOutcome | None] = [each.failed for each in prepared]
    for outcome in outcomes:
        if outcome is not None:
            on_outcome(outcome)
    todo = [(index, each.rendered) for index, each in enumerate(prepared) if each.rendered is not None]
    if todo:
        _ = target.client  # built once here, then shared by every plan's thread

    def finished(index: int, outcome: PlanOutcome) -> None:
        outcomes[index] = outcome
        on_outcome(outcome)

    _run_all(todo, target=target, options=options, notice=notice, finished=finished)
    return [outcome for outcome in outcomes if outcome is not None]


def _run_all(
    todo: list[tuple[int, RenderedPlan]],
    *,
    target: Target,
    options: ReconcileOptions,
    notice: Notice,
    finished: Callable[[int, PlanOutcome], None],
) -> None:
    """Each plan in a pool of `parallel_plans` threads; `finished` gets each outcome in this thread.
    Whatever interrupts this thread (Ctrl-C, SIGTERM) stops every plan from starting further tasks,
    and their locks are released before it is raised again."""
    stop = threading.Event()
    pool = ThreadPoolExecutor(max_workers=max(1, options.parallel_plans), thread_name_prefix="reconcile")
    try:
        futures: dict[Future[PlanOutcome], int] = {
            pool.submit(
                reconcile_plan, rendered, target=target, options=options, notice=notice, stop=stop
            ): index
            for index, rendered in todo
        }
        pending = set(futures)
        while pending:
            # Timed: Python runs a signal's handler (SIGTERM's, Ctrl-C's) on this thread only, between
            # bytecodes, and a signal the kernel delivered to another thread does not wake an untimed
            # wait here, which then never ends (seen: reconcile ignoring SIGTERM). A timed one wakes,
            # and the handler raises within this period.
            done, pending = wait_for_futures(
                pending, timeout=SIGNAL_POLL_SECONDS, return_when=FIRST_COMPLETED
            )
            for future in sorted(done, key=futures.__getitem__):
                finished(futures[future], future.result())
    except BaseException:
        stop.set()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


__all__ = [
    "PlanOutcome",
    "ReconcileOptions",
    "reconcile",
    "reconcile_plan",
]
