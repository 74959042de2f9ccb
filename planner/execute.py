"""Run an ExecutionPlan along its DAG: as parallel as the graph allows, never in waves (DESIGN §4).

A task starts as soon as its own predecessors are done, in a bounded thread pool (the kubernetes client
is synchronous, and waits block). A failure or a timeout skips only the tasks that depend on it,
transitively; everything else runs on, and the result says which tasks were done, failed or skipped,
and why. Events go to an `EventSink` from the calling thread only, never from the pool.

What the executor touches is passed in as Protocols defined here: a `Writer` for the writes each task
kind needs, and a `StatusSource` that blocks until an object is ready or gone. app passes
`planner.writes.KubeWriter` and `planner.waiting.CacheStatusSource` (the informer caches judged by
`planner.readiness`), so the executor never imports `kube`; the tests pass fakes.

Timeouts apply to waits: the task's own (app's execution plan gives every wait the plan's per-object
`timeout`, else apply's `--timeout`), else `default_timeout`, else none. Writes rely on the client's own
request timeouts and retries. `no_wait` marks every `wait-ready` as not waited; `wait-gone` still runs,
because a replace must not create before the old object is gone. On KeyboardInterrupt no further task
starts; the result marks running tasks interrupted and the rest skipped.

`stop`, when given, is asked before each task starts (and at least every `STOP_POLL_SECONDS` while
tasks run) whether the run must stop, and why (app passes the run lock's `lost`). Once it answers, no
further task starts: writes in flight finish (a request sent cannot be taken back), waits in flight are
abandoned as interrupted, every other task is skipped with that reason, and the result carries it in
`stopped`.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for_futures
from dataclasses import dataclass
from typing import Literal, Protocol

from planner.applyset import ParentRecord
from planner.errors import PlannerError
from planner.events import (
    Applied,
    Applying,
    Clock,
    Deleted,
    Event,
    EventSink,
    Failed,
    Planned,
    Ready,
    Skipped,
    Summary,
    Waiting,
)
from planner.graph import ExecutionPlan, GraphError, Task, task_id
from planner.objects import Manifest, ObjectRef
from planner.readiness import Readiness

Until = Literal["ready", "gone"]
OutcomeStatus = Literal["done", "not-waited", "failed", "skipped", "interrupted"]
INTERRUPTED = "interrupted"
STOP_POLL_SECONDS = 0.2
StopCheck = Callable[[], str | None]


class Writer(Protocol):
    """The writes the task kinds need. Each returns the object as written (or None for a delete) or
    raises a `planner.errors.PlannerError` (an `ApiError` subclass for API failures, an ownership error
    when `create` meets an object this plan does not own)."""

    def ensure_namespace(self, name: str) -> Manifest:
        """Create the Namespace when it is missing; return it either way."""
        ...

    def write_parent(self, ref: ObjectRef, record: ParentRecord) -> Manifest:
        """Create or update the ApplySet parent Secret with the union of its listed group-kinds and
        namespaces and `record`'s; trim its run record to `record.run_keys`."""
        ...

    def create(self, manifest: Manifest) -> Manifest:
        """POST; a 409 for this plan's own object (its part-of label) returns the existing object."""
        ...

    def apply(self, manifest: Manifest) -> Manifest:
        """Server-side apply with field manager `planner` and force."""
        ...

    def delete(self, ref: ObjectRef, *, propagation: str) -> None:
        """Delete with the given propagation policy; an object already gone is not an error."""
        ...

    def record_run(self, parent: ObjectRef, job: Manifest) -> Manifest:
        """Record the created Job's run-key annotation → uid in the parent (resourceVersion checked)."""
        ...


class StatusSource(Protocol):
    def wait(self, ref: ObjectRef, *, until: Until, timeout: float) -> Readiness:
        """Block until the object is Current or Failed (`ready`) or NotFound (`gone`), or until `timeout`
        seconds (math.inf for none) have passed; return the last readiness seen."""
        ...


def settled(verdict: Readiness, until: Until) -> bool:
    """Whether a wait can stop: gone means NotFound; ready means Current, or Failed (no point waiting)."""
    if until == "gone":
        return verdict.status == "NotFound"
    return verdict.status in ("Current", "Failed")


@dataclass(frozen=True, kw_only=True)
class TaskOutcome:
    task: str
    ref: ObjectRef
    status: OutcomeStatus
    message: str
    because: str | None = None  # for a skipped task: the failed task it depended on


@dataclass(frozen=True, kw_only=True)
class ExecutionResult:
    outcomes: tuple[TaskOutcome, ...]  # in plan order
    interrupted: bool = False
    stopped: str = ""  # why the run stopped starting tasks (`stop` answered), "" when it did not

    def _with(self, *statuses: OutcomeStatus) -> tuple[TaskOutcome, ...]:
        return tuple(outcome for outcome in self.outcomes if outcome.status in statuses)

    @property
    def done(self) -> tuple[TaskOutcome, ...]:
        return self._with("done", "not-waited")

    @property
    def failed(self) -> tuple[TaskOutcome, ...]:
        return self._with("failed", "interrupted")

    @property
    def skipped(self) -> tuple[TaskOutcome, ...]:
        return self._with("skipped")

    @property
    def ok(self) -> bool:
        return not self.failed and not self.skipped and not self.interrupted and not self.stopped


@dataclass(frozen=True, kw_only=True)
class _Finished:
    status: Literal["done", "failed"]
    message: str
    written: Manifest | None = None


class _Execution:
    def __init__(
        self,
        plan: ExecutionPlan,
        *,
        writer: Writer,
        status: StatusSource,
        sink: EventSink,
        parallelism: int,
        default_timeout: float | None,
        no_wait: bool,
        clock: Clock,
        stop: StopCheck | None = None,
    ) -> None:
        self.plan, self.writer, self.status, self.sink, self.clock = plan, writer, status, sink, clock
        self.stop, self.stopped = stop, ""
        self.parallelism = max(1, parallelism)
        self.default_timeout = default_timeout
        self.no_wait = no_wait
        self.tasks = {task.id: task for task in plan.tasks}
        self.index = {task.id: position for position, task in enumerate(plan.tasks)}
        self.check_order()
        self.successors = plan.successors()
        self.waiting_on = {task.id: len(task.predecessors) for task in plan.tasks}
        self.ready: list[tuple[int, str]] = []
        self.running: dict[Future[_Finished], str] = {}
        self.outcomes: dict[str, TaskOutcome] = {}
        self.written: dict[str, Manifest] = {}

    def check_order(self) -> None:
        """Every predecessor must be a task listed earlier, or some task would never start."""
        for task in self.plan.tasks:
            for predecessor in task.predecessors:
                if self.index.get(predecessor, len(self.index)) >= self.index[task.id]:
                    raise GraphError(
                        f"task {task.id!r} waits for {predecessor!r}, which is not listed before it"
                    )

    # --- events ---

    def emit(self, make: Callable[..., Event], task: Task, message: str, **fields: object) -> None:
        self.sink.emit(
            make(
                time=self.clock.now(),
                message=message,
                object=str(task.ref),
                runtime_id=task.runtime_id,
                task=task.id,
                **fields,
            )
        )

    # --- scheduling ---

    def run(self) -> ExecutionResult:
        for task in self.plan.tasks:
            self.emit(Planned, task, task.id, action=task.action, predecessors=task.predecessors)
        for task in self.plan.tasks:
            if not task.predecessors:
                heapq.heappush(self.ready, (self.index[task.id], task.id))
        interrupted = False
        pool = ThreadPoolExecutor(max_workers=self.parallelism, thread_name_prefix="planner-apply")
        try:
            self.loop(pool)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            pool.shutdown(wait=not (interrupted or self.stopped), cancel_futures=True)
        if interrupted or self.stopped:
            self.abandon(self.stopped or INTERRUPTED)
        result = ExecutionResult(
            outcomes=tuple(self.outcomes[t.id] for t in self.plan.tasks if t.id in self.outcomes),
            interrupted=interrupted,
            stopped=self.stopped,
        )
        self.summarize(result)
        return result

    def must_stop(self) -> bool:
        if not self.stopped and self.stop is not None:
            self.stopped = self.stop() or ""
        return bool(self.stopped)

    def loop(self, pool: ThreadPoolExecutor) -> None:
        while self.ready or self.running:
            if self.must_stop():
                self.finish_writes()
                return
            while self.ready and len(self.running) < self.parallelism and not self.must_stop():
                self.start(pool, self.tasks[heapq.heappop(self.ready)[1]])
            if not self.running:
                continue
            poll = STOP_POLL_SECONDS if self.stop is not None else None
            finished, _ = wait_for_futures(self.running, timeout=poll, return_when=FIRST_COMPLETED)
            self.finish_all(finished)

    def finish_writes(self) -> None:
        """After a stop: let the writes in flight finish and report them; waits stay in flight."""
        writes = [future for future, task in self.running.items() if not self.tasks[task].is_wait]
        self.finish_all(wait_for_futures(writes).done)

    def finish_all(self, finished: set[Future[_Finished]]) -> None:
        for future in sorted(finished, key=lambda f: self.index[self.running[f]]):
            task = self.tasks[self.running.pop(future)]
            if isinstance(future.exception(), KeyboardInterrupt):
                self.running[future] = task.id  # still counts as in flight when reported
                raise KeyboardInterrupt
            self.finish(task, future.result())

    def start(self, pool: ThreadPoolExecutor, task: Task) -> None:
        if task.action == "wait-ready" and self.no_wait:
            self.settle(
                task, TaskOutcome(task=task.id, ref=task.ref, status="not-waited", message="--no-wait")
            )
            return
        if task.is_wait:
            until: Until = "gone" if task.action == "wait-gone" else "ready"
            self.emit(Waiting, task, f"waiting until {until}", until=until, timeout=self.timeout_of(task))
        else:
            self.emit(Applying, task, task.action, action=task.action)
        self.running[pool.submit(self.perform, task)] = task.id

    def finish(self, task: Task, finished: _Finished) -> None:
        if finished.written is not None:
            self.written[task.id] = finished.written
        if finished.status == "failed":
            self.emit(Failed, task, finished.message)
            self.outcomes[task.id] = TaskOutcome(
                task=task.id, ref=task.ref, status="failed", message=finished.message
            )
            self.skip_dependents(task)
            return
        if task.action == "wait-ready":
            self.emit(Ready, task, finished.message)
        elif task.action in ("delete", "wait-gone"):
            self.emit(Deleted, task, finished.message)
        else:
            self.emit(Applied, task, finished.message, action=task.action)
        self.settle(task, TaskOutcome(task=task.id, ref=task.ref, status="done", message=finished.message))

    def settle(self, task: Task, outcome: TaskOutcome) -> None:
        self.outcomes[task.id] = outcome
        for successor in self.successors[task.id]:
            self.waiting_on[successor] -= 1
            if self.waiting_on[successor] == 0 and successor not in self.outcomes:
                heapq.heappush(self.ready, (self.index[successor], successor))

    def skip_dependents(self, failed: Task) -> None:
        pending = list(self.successors[failed.id])
        while pending:
            dependent = self.tasks[pending.pop()]
            if dependent.id in self.outcomes:
                continue
            message = f"{failed.id} failed"
            self.outcomes[dependent.id] = TaskOutcome(
                task=dependent.id, ref=dependent.ref, status="skipped", message=message, because=failed.id
            )
            self.emit(Skipped, dependent, message, because=failed.id)
            pending.extend(self.successors[dependent.id])

    def abandon(self, reason: str) -> None:
        """After an interrupt or a stop: running tasks are interrupted, tasks never started are skipped,
        each with `reason`."""
        running = set(self.running.values())
        for task in self.plan.tasks:
            if task.id in self.outcomes:
                continue
            status: OutcomeStatus = "interrupted" if task.id in running else "skipped"
            self.outcomes[task.id] = TaskOutcome(task=task.id, ref=task.ref, status=status, message=reason)

    def summarize(self, result: ExecutionResult) -> None:
        reasons = tuple((o.task, o.message) for o in (*result.failed, *result.skipped))
        message = f"{len(result.done)} done, {len(result.failed)} failed, {len(result.skipped)} skipped"
        if result.interrupted:
            message += " (interrupted)"
        elif result.stopped:
            message += f" (stopped: {result.stopped})"
        self.sink.emit(
            Summary(
                time=self.clock.now(),
                message=message,
                done=tuple(o.task for o in result.done),
                failed=tuple(o.task for o in result.failed),
                skipped=tuple(o.task for o in result.skipped),
                reasons=reasons,
                interrupted=result.interrupted,
            )
        )

    # --- performing one task (in a worker thread) ---

    def timeout_of(self, task: Task) -> float | None:
        return task.timeout if task.timeout is not None else self.default_timeout

    def perform(self, task: Task) -> _Finished:
        try:
            if task.is_wait:
                return self.await_status(task)
            return self.write(task)
        except PlannerError as error:
            return _Finished(status="failed", message=str(error))
        except Exception as error:  # a bug in a writer must not take down the other branches
            return _Finished(status="failed", message=f"{type(error).__name__}: {error}")

    def write(self, task: Task) -> _Finished:
        written: Manifest | None
        if task.action == "ensure":
            written = self.writer.ensure_namespace(task.ref.name)
        elif task.action == "parent" and task.parent is not None:
            written = self.writer.write_parent(task.ref, task.parent)
        elif task.action in ("create", "apply") and task.manifest is not None:
            write = self.writer.create if task.action == "create" else self.writer.apply
            written = write(task.manifest)
        elif task.action == "delete":
            self.writer.delete(task.ref, propagation=task.propagation or "Foreground")
            return _Finished(status="done", message="deletion requested")
        elif task.action == "record-run":
            job = self.written[task_id("create", task.ref)]
            written = self.writer.record_run(self.plan.parent_ref, job)
        else:
            return _Finished(status="failed", message=f"task {task.id} has nothing to write")
        return _Finished(status="done", message=_DONE_MESSAGES[task.action], written=written)

    def await_status(self, task: Task) -> _Finished:
        until: Until = "gone" if task.action == "wait-gone" else "ready"
        timeout = self.timeout_of(task)
        last = self.status.wait(task.ref, until=until, timeout=math.inf if timeout is None else timeout)
        if until == "gone" and last.status == "NotFound":
            return _Finished(status="done", message="gone")
        if until == "ready" and last.status == "Current":
            return _Finished(status="done", message=last.message)
        if until == "ready" and last.status == "Failed":
            return _Finished(status="failed", message=last.message)
        limit = "" if timeout is None else f" after {timeout:g}s"
        return _Finished(status="failed", message=f"timed out{limit} waiting until {until}: {last.message}")


_DONE_MESSAGES = {
    "ensure": "namespace present",
    "parent": "parent written",
    "create": "created",
    "apply": "applied",
    "record-run": "run recorded",
}


def execute(
    plan: ExecutionPlan,
    *,
    writer: Writer,
    status: StatusSource,
    sink: EventSink,
    parallelism: int = 16,
    default_timeout: float | None = None,
    no_wait: bool = False,
    clock: Clock,
    stop: StopCheck | None = None,
) -> ExecutionResult:
    """Run every task of `plan`; see the module docstring for the rules."""
    return _Execution(
        plan,
        writer=writer,
        status=status,
        sink=sink,
        parallelism=parallelism,
        default_timeout=default_timeout,
        no_wait=no_wait,
        clock=clock,
        stop=stop,
    ).run()
