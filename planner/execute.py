"""Run an ExecutionPlan along its DAG: as parallel as the graph allows, never in waves (docs/design.md §4).

A task becomes runnable the moment its own predecessors are done. Writes run in a thread pool of
`parallelism` workers (the kubernetes client is synchronous), so `--parallelism` bounds concurrent API
writes and nothing else. Waits hold no worker: a wait is a subscription on the `StatusSource`, which
answers later, from its own thread, when the event that makes the object ready (or gone) arrives or
when the wait's timeout passes. So no number of Deployments still rolling out can hold up a write that
does not depend on them, and a wait's dependents start as soon as that one object is ready.

Several plans run as one run (`execute_plans`, an apply of several plan files): every plan's tasks
start as their own predecessors are done, `parallelism` bounds the writes in flight across all of them
(the plans take turns starting one), so no plan's waits hold up another plan's writes. Each plan is
concluded the moment its last task ends (its Summary, then the caller's `finished`), while the others
run on. A stop or an interrupt ends them all.

One loop on the calling thread owns all state: it starts what is runnable, then takes the next finished
write, answered wait or wait's progress from a queue the workers and the source put into. A pending
wait's progress (why it is not over yet, when the source has news) becomes another `Waiting` event with
a `reason`, emitted by that loop like every other event. A failure or a timeout skips
only the tasks that depend on it, transitively; everything else runs on, and the result says which
tasks were done, failed or skipped, and why. Events go to an `EventSink` from the calling thread only.

What the executor touches is passed in as Protocols defined here: a `Writer` for the writes each task
kind needs, and a `StatusSource` to subscribe to. app passes `planner.writes.KubeWriter` and
`planner.waiting.CacheStatusSource` (the informer caches judged by `planner.wait.readiness`), so the
executor never imports `kube`; the tests pass fakes.

Timeouts apply to waits: the task's own (app's execution plan gives every wait the plan's per-object
`timeout`, else apply's `--timeout`), else `default_timeout`, else none. Writes rely on the client's own
request timeouts and retries. `no_wait` marks every `wait-ready` as not waited; `wait-gone` still runs,
because a replace must not create before the old object is gone. On KeyboardInterrupt no further task
starts and pending waits are cancelled; the result marks running tasks interrupted and the rest skipped.

`stop`, when given, is asked before each task starts (and at least every `STOP_POLL_SECONDS` while
tasks run, the loop's queue read timing out to ask) whether the run must stop, and why (app passes the
run lock's `lost`). Once it answers, no further task starts: writes in flight finish (a request sent
cannot be taken back), waits in flight are cancelled and marked interrupted, every other task is skipped
with that reason, and the result carries it in `stopped`.
"""

from __future__ import annotations

import heapq
import math
import os
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal, Protocol

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
from planner.graph import HOOK_FAILED, HOOK_SUCCEEDED, ExecutionPlan, GraphError, Task, task_id
from planner.objects import HOOK_DELETE_POLICY, Manifest, ObjectRef
from planner.plan.durations import format_duration
from planner.state.applyset import ParentRecord
from planner.wait.readiness import Readiness

Until = Literal["ready", "gone"]
OutcomeStatus = Literal["done", "not-waited", "failed", "skipped", "interrupted"]
INTERRUPTED = "interrupted"
STOP_POLL_SECONDS = 0.2
StopCheck = Callable[[], str | None]

Answer = Readiness | PlannerError
"""What a wait ends with: the readiness that settled it (or the last one seen when it timed out), or
the error that keeps the source from judging the object at all (a cache that cannot sync)."""

Cancel = Callable[[], None]

Progress = Callable[[Readiness], None]
"""What a pending wait's source reports: the current verdict, whose `reason` says what holds it up."""


class Writer(Protocol):
    """The writes the task kinds need. Each returns the object as written (or None for a delete) or
    raises a `planner.errors.PlannerError` (an `ApiError` subclass for API failures, an ownership error
    when `create` meets an object this plan does not own)."""

    def ensure_namespace(self, name: str) -> tuple[Manifest, bool]:
        """Create the Namespace when it is missing; return it either way, and whether this call created it."""
        ...

    def write_parent(self, ref: ObjectRef, record: ParentRecord) -> Manifest:
        """Create or update the ApplySet parent Secret with the union of its listed group-kinds and
        namespaces and `record`'s; trim its run record to `record.run_keys`."""
        ...

    def create(self, manifest: Manifest) -> Manifest:
        """Create; a 409 for this plan's own object (its part-of label) returns the existing object,
        and a foreign object is never written (an ownership error)."""
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
    def watch(
        self,
        ref: ObjectRef,
        *,
        until: Until,
        timeout: float,
        done: Callable[[Answer], None],
        progress: Progress | None = None,
    ) -> Cancel:
        """Start waiting until the object is Current or Failed (`ready`) or NotFound (`gone`), without
        blocking. Call `done` exactly once, from any thread (possibly before `watch` returns): with the
        first readiness that `settled` accepts, or with the last readiness seen once `timeout` seconds
        (math.inf for none) have passed, or with the error that keeps the object from being judged.
        Meanwhile `progress` may be called, from any thread, with a verdict whose `reason` is news.
        The returned function cancels the wait; `done` is not called after it returns."""
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
    reason: str | None = None  # a wait's last reason


@dataclass(frozen=True, kw_only=True)
class _Progress:
    verdict: Readiness


# What workers and the status source hand the loop: a task's result, a pending wait's progress, or None
# when a worker was interrupted (Ctrl-C delivered to it rather than to the calling thread).
_Message = _Finished | _Progress | None
Post = Callable[["_Execution", str, _Message], None]
Finished = Callable[[int, ExecutionResult], None]


class _Execution:
    """One plan's part of a run: its tasks, what is runnable, being written or waited for, and how each
    ended. The run's loop calls it; its workers and its waits' source answer through `post`."""

    def __init__(
        self,
        plan: ExecutionPlan,
        *,
        writer: Writer,
        status: StatusSource,
        sink: EventSink,
        default_timeout: float | None,
        no_wait: bool,
        clock: Clock,
        post: Post,
    ) -> None:
        self.plan, self.writer, self.status, self.sink, self.clock = plan, writer, status, sink, clock
        self.post = post
        self.default_timeout = default_timeout
        self.no_wait = no_wait
        self.tasks = {task.id: task for task in plan.tasks}
        self.index = {task.id: position for position, task in enumerate(plan.tasks)}
        self.check_order()
        self.successors = plan.successors()
        self.waiting_on = {task.id: len(task.predecessors) for task in plan.tasks}
        # Runnable tasks by plan position: waits start at once, writes when a worker is free.
        self.runnable_waits: list[tuple[int, str]] = []
        self.runnable_writes: list[tuple[int, str]] = []
        self.writing: set[str] = set()
        self.waiting: dict[str, Cancel] = {}
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

    # --- scheduling (the calling thread only) ---

    def announce(self) -> None:
        """The Planned events, then the tasks that wait for nothing are runnable."""
        for task in self.plan.tasks:
            self.emit(Planned, task, task.id, action=task.action, predecessors=task.predecessors)
        for task in self.plan.tasks:
            if not task.predecessors:
                self.make_runnable(task)

    @property
    def busy(self) -> bool:
        """Whether any task may still start or end (when not, every task has its outcome)."""
        return bool(self.runnable_waits or self.runnable_writes or self.writing or self.waiting)

    def result(self, *, interrupted: bool, stopped: str) -> ExecutionResult:
        return ExecutionResult(
            outcomes=tuple(self.outcomes[t.id] for t in self.plan.tasks if t.id in self.outcomes),
            interrupted=interrupted,
            stopped=stopped,
        )

    def receive(self, done_id: str, finished: _Finished | _Progress) -> None:
        if isinstance(finished, _Progress):
            self.progressed(self.tasks[done_id], finished.verdict)
            return
        if done_id in self.writing or done_id in self.waiting:  # a second answer is not heard
            self.writing.discard(done_id)
            self.waiting.pop(done_id, None)
            self.finish(self.tasks[done_id], finished)

    def start_next_wait(self) -> None:
        self.start_wait(self.tasks[heapq.heappop(self.runnable_waits)[1]])

    def start_next_write(self, pool: ThreadPoolExecutor) -> None:
        self.start_write(pool, self.tasks[heapq.heappop(self.runnable_writes)[1]])

    def make_runnable(self, task: Task) -> None:
        runnable = self.runnable_waits if task.is_wait else self.runnable_writes
        heapq.heappush(runnable, (self.index[task.id], task.id))

    def start_write(self, pool: ThreadPoolExecutor, task: Task) -> None:
        kept = self.hook_kept(task) if task.action == "delete-hook" else None
        if kept is not None:
            self.emit(Applied, task, kept, action=task.action)
            self.settle(task, TaskOutcome(task=task.id, ref=task.ref, status="done", message=kept))
            return
        self.emit(Applying, task, task.action, action=task.action)
        self.writing.add(task.id)
        pool.submit(self.perform, task)

    def start_wait(self, task: Task) -> None:
        if task.failed is not None:  # known when planned: no wait can change it, --no-wait or not
            self.finish(task, _Finished(status="failed", message=task.failed))
            return
        if task.action == "wait-ready" and self.no_wait:
            self.settle(
                task, TaskOutcome(task=task.id, ref=task.ref, status="not-waited", message="--no-wait")
            )
            return
        until: Until = "gone" if task.action == "wait-gone" else "ready"
        timeout = self.timeout_of(task)
        self.emit(Waiting, task, f"waiting until {until}", until=until, timeout=timeout)

        def answered(answer: Answer) -> None:
            self.post(self, task.id, _waited(answer, until=until, timeout=timeout))

        def progressed(verdict: Readiness) -> None:
            self.post(self, task.id, _Progress(verdict=verdict))

        limit = math.inf if timeout is None else timeout
        # In flight from here: a Ctrl-C that lands inside `watch` reports this wait interrupted (the
        # source's own `close` ends a wait whose cancel never came back).
        self.waiting[task.id] = _nothing_to_cancel
        try:
            self.waiting[task.id] = self.status.watch(
                task.ref, until=until, timeout=limit, done=answered, progress=progressed
            )
        except Exception as error:  # a source that cannot even start the wait fails only this task
            del self.waiting[task.id]
            self.finish(task, _failure(error))

    def hook_kept(self, task: Task) -> str | None:
        """Why a `delete-hook` task leaves its hook as it is — its run ended in a way its policies do not
        name, or was not waited for (nor, for another hook object, the hook Jobs of its phase) — or None
        to delete it."""
        waited = self.outcomes.get(task_id("wait-ready", task.ref))
        waits = (self.outcomes.get(p) for p in task.predecessors if self.tasks[p].action == "wait-ready")
        if any(each is not None and each.status == "not-waited" for each in waits):
            return "kept: its run was not waited for"
        failed = waited is not None and waited.status == "failed"
        if (HOOK_FAILED if failed else HOOK_SUCCEEDED) in task.policies:
            return None
        return f"kept: its run {'failed' if failed else 'succeeded'} ({HOOK_DELETE_POLICY} {','.join(task.policies)})"

    def progressed(self, task: Task, verdict: Readiness) -> None:
        """A pending wait's news: another Waiting event, with what holds it up."""
        if task.id not in self.waiting or verdict.reason is None:
            return  # answered meanwhile
        until = "gone" if task.action == "wait-gone" else "ready"
        message = f"still waiting until {until}: {verdict.message}"
        self.emit(Waiting, task, message, until=until, timeout=self.timeout_of(task), reason=verdict.reason)

    def finish(self, task: Task, finished: _Finished) -> None:
        if finished.written is not None:
            self.written[task.id] = finished.written
        if finished.status == "failed":
            self.emit(Failed, task, finished.message, reason=finished.reason)
            self.outcomes[task.id] = TaskOutcome(
                task=task.id, ref=task.ref, status="failed", message=finished.message
            )
            self.skip_dependents(task, spared=self.spared_by(task))
            return
        if task.action == "wait-ready":
            self.emit(Ready, task, finished.message)
        elif task.action in ("delete", "wait-gone", "delete-hook"):
            self.emit(Deleted, task, finished.message)
        else:
            self.emit(Applied, task, finished.message, action=task.action)
        self.settle(task, TaskOutcome(task=task.id, ref=task.ref, status="done", message=finished.message))

    def settle(self, task: Task, outcome: TaskOutcome) -> None:
        self.outcomes[task.id] = outcome
        for successor in self.successors[task.id]:
            self.waiting_on[successor] -= 1
            if self.waiting_on[successor] == 0 and successor not in self.outcomes:
                self.make_runnable(self.tasks[successor])

    def spared_by(self, failed: Task) -> frozenset[str]:
        """The `delete-hook` tasks a failed wait still starts, because their policy is `hook-failed`."""
        spared = frozenset(
            successor
            for successor in self.successors[failed.id]
            if self.tasks[successor].action == "delete-hook" and HOOK_FAILED in self.tasks[successor].policies
        )
        for successor in spared:
            self.waiting_on[successor] -= 1
            if self.waiting_on[successor] == 0:
                self.make_runnable(self.tasks[successor])
        return spared

    def skip_dependents(self, failed: Task, *, spared: frozenset[str] = frozenset()) -> None:
        pending = [successor for successor in self.successors[failed.id] if successor not in spared]
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

    def cancel_waits(self) -> None:
        for cancel in self.waiting.values():
            cancel()

    def abandon(self, reason: str) -> None:
        """After an interrupt or a stop: running tasks are interrupted, tasks never started are skipped,
        each with `reason`."""
        running = self.writing | self.waiting.keys()
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

    def timeout_of(self, task: Task) -> float | None:
        return task.timeout if task.timeout is not None else self.default_timeout

    # --- performing one write (in a worker thread) ---

    def perform(self, task: Task) -> None:
        try:
            finished = self.write(task)
        except KeyboardInterrupt:
            self.post(self, task.id, None)
            return
        except Exception as error:  # a bug in a writer must not take down the other branches
            finished = _failure(error)
        self.post(self, task.id, finished)

    def write(self, task: Task) -> _Finished:
        written: Manifest | None
        if task.action == "ensure":
            written, created = self.writer.ensure_namespace(task.ref.name)
            message = "namespace created" if created else "namespace present"
            return _Finished(status="done", message=message, written=written)
        elif task.action == "parent" and task.parent is not None:
            written = self.writer.write_parent(task.ref, task.parent)
        elif task.action in ("create", "apply") and task.manifest is not None:
            write = self.writer.create if task.action == "create" else self.writer.apply
            written = write(task.manifest)
        elif task.action == "delete":
            self.writer.delete(task.ref, propagation=task.propagation or "Foreground")
            return _Finished(status="done", message="deletion requested")
        elif task.action == "delete-hook":  # as Helm deletes a hook: its pods go after it
            self.writer.delete(task.ref, propagation="Background")
            return _Finished(
                status="done", message=f"hook deleted ({HOOK_DELETE_POLICY} {','.join(task.policies)})"
            )
        elif task.action == "record-run":
            ran = self.written.get(task_id("create", task.ref)) or self.written[task_id("apply", task.ref)]
            written = self.writer.record_run(self.plan.parent_ref, ran)
        else:
            return _Finished(status="failed", message=f"task {task.id} has nothing to write")
        return _Finished(status="done", message=_DONE_MESSAGES[task.action], written=written)


def _nothing_to_cancel() -> None:
    """The cancel of a wait whose `watch` has not returned yet."""


def _failure(error: Exception) -> _Finished:
    """A planner error says what went wrong; anything else is a bug, named with its type."""
    if isinstance(error, PlannerError):
        return _Finished(status="failed", message=str(error))
    return _Finished(status="failed", message=f"{type(error).__name__}: {error}")


def _waited(answer: Answer, *, until: Until, timeout: float | None) -> _Finished:
    """A wait's outcome from the source's answer (on the source's thread: pure)."""
    if isinstance(answer, PlannerError):
        return _Finished(status="failed", message=str(answer))
    if until == "gone" and answer.status == "NotFound":
        return _Finished(status="done", message="gone")
    if until == "ready" and answer.status == "Current":
        return _Finished(status="done", message=answer.message)
    if until == "ready" and answer.status == "Failed":
        return _Finished(status="failed", message=answer.message, reason=answer.reason)
    limit = "" if timeout is None else f" after {format_duration(timeout)}"
    why = answer.reason or answer.message
    return _Finished(
        status="failed", message=f"timed out{limit} waiting until {until}: {why}", reason=answer.reason
    )


_DONE_MESSAGES = {
    "parent": "parent written",
    "create": "created",
    "apply": "applied",
    "record-run": "run recorded",
}


class _Run:
    """The loop on the calling thread that owns every execution's state: it starts what is runnable in
    each, at most `parallelism` writes in flight across them all, then takes the next answer from the
    queue their workers and waits post to. An execution with nothing left to start or end is concluded
    at once (its Summary, then `finished`), whatever the others still do."""

    def __init__(self, parallelism: int, stop: StopCheck | None, finished: Finished | None) -> None:
        self.parallelism = max(1, parallelism)
        self.stop, self.stopped = stop, ""
        self.poll = STOP_POLL_SECONDS if stop is not None else None
        self.finished = finished
        self.inbox: queue.SimpleQueue[tuple[_Execution, str, _Message]] = queue.SimpleQueue()
        self.executions: list[_Execution] = []
        self.open: list[_Execution] = []
        self.results: dict[int, ExecutionResult] = {}
        self.turn = 0  # whose write starts next: the plans take turns

    def post(self, execution: _Execution, task_id: str, message: _Message) -> None:
        self.inbox.put((execution, task_id, message))

    def run(self, executions: list[_Execution]) -> list[ExecutionResult]:
        self.executions, self.open = executions, list(executions)
        for execution in executions:
            execution.announce()
        interrupted = finished = False
        pool = _POOLS.take(self.parallelism)
        try:
            self.loop(pool)
            finished = True  # every write started has answered: the pool is idle
        except KeyboardInterrupt:
            interrupted = True
        finally:
            for execution in self.open:
                execution.cancel_waits()
            if finished:
                _POOLS.keep(self.parallelism, pool)
            else:
                pool.shutdown(wait=not interrupted, cancel_futures=True)
        for execution in list(self.open):
            if interrupted or self.stopped:
                execution.abandon(self.stopped or INTERRUPTED)
            self.conclude(execution, interrupted=interrupted)
        return [self.results[index] for index in range(len(executions))]

    def must_stop(self) -> bool:
        if not self.stopped and self.stop is not None:
            self.stopped = self.stop() or ""
        return bool(self.stopped)

    def loop(self, pool: ThreadPoolExecutor) -> None:
        while self.open:
            if self.must_stop():
                self.finish_writes()
                return
            self.start_runnable(pool)
            for execution in [e for e in self.open if not e.busy]:
                self.conclude(execution, interrupted=False)
            if not any(e.writing or e.waiting for e in self.open):
                continue
            try:
                execution, task_id, message = self.inbox.get(timeout=self.poll)
            except queue.Empty:  # time to ask `stop` again
                continue
            self.receive(execution, task_id, message)

    def finish_writes(self) -> None:
        """After a stop: let the writes in flight finish and report them (and any wait answered
        meanwhile); the waits still pending are left to be cancelled."""
        while any(e.writing for e in self.open):
            self.receive(*self.inbox.get())

    def receive(self, execution: _Execution, task_id: str, message: _Message) -> None:
        if message is None:
            raise KeyboardInterrupt
        execution.receive(task_id, message)

    def start_runnable(self, pool: ThreadPoolExecutor) -> None:
        """Every runnable wait; then writes while a slot is free, one plan's next write after
        another's in turn, so a large plan does not keep a small one's writes queued behind its own."""
        for execution in self.open:
            while execution.runnable_waits and not self.must_stop():
                execution.start_next_wait()
        in_flight = sum(len(e.writing) for e in self.open)
        passed = 0  # plans passed over in a row for having no runnable write
        while in_flight < self.parallelism and passed < len(self.open) and not self.must_stop():
            execution = self.open[self.turn % len(self.open)]
            self.turn += 1
            if execution.runnable_writes:
                execution.start_next_write(pool)
                in_flight, passed = in_flight + 1, 0
            else:
                passed += 1

    def conclude(self, execution: _Execution, *, interrupted: bool) -> None:
        """The plan's result (kept first, so a Ctrl-C while it is reported cannot lose it), then its
        Summary and the caller's `finished`."""
        index = self.executions.index(execution)
        result = self.results[index] = execution.result(interrupted=interrupted, stopped=self.stopped)
        self.open.remove(execution)
        execution.summarize(result)
        if self.finished is not None:
            self.finished(index, result)


class _IdlePools(threading.local):
    """Each thread's idle write pool of each size, kept from one of its runs to the next: a controller
    worker applies plan after plan, and a new pool starts its threads anew (`Thread.start` waits until
    each is scheduled), which took a third of a worker's time at 300 Plans. A run that ends with writes
    still in flight (an interrupt, a failure) shuts its pool down instead."""

    def __init__(self) -> None:
        self.idle: dict[int, ThreadPoolExecutor] = {}

    def take(self, size: int) -> ThreadPoolExecutor:
        return self.idle.pop(size, None) or ThreadPoolExecutor(
            max_workers=size, thread_name_prefix="planner-apply"
        )

    def keep(self, size: int, pool: ThreadPoolExecutor) -> None:
        self.idle[size] = pool


_POOLS = _IdlePools()
# A forked child has none of its parent's threads, so none of its pools: it starts its own.
os.register_at_fork(after_in_child=lambda: _POOLS.idle.clear())  # the forking thread's, the only one left


def execute_plans(
    plans: Sequence[ExecutionPlan],
    *,
    writer: Writer,
    status: StatusSource,
    sink: EventSink,
    parallelism: int = 16,
    default_timeout: float | None = None,
    no_wait: bool = False,
    clock: Clock,
    stop: StopCheck | None = None,
    finished: Finished | None = None,
) -> list[ExecutionResult]:
    """Run every task of every plan at once, as one run: `parallelism` bounds the writes in flight
    across all of them, one plan's waits never hold up another's writes, and a stop or an interrupt
    ends them all. `finished(index, result)` is called on the calling thread as each plan ends, after
    its Summary. The results are in the plans' order; see the module docstring for the rules."""
    run = _Run(parallelism, stop, finished)
    executions = [
        _Execution(
            plan,
            writer=writer,
            status=status,
            sink=sink,
            default_timeout=default_timeout,
            no_wait=no_wait,
            clock=clock,
            post=run.post,
        )
        for plan in plans
    ]
    return run.run(executions)
