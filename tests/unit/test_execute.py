"""execute: the DAG executor against a fake Writer and a scripted StatusSource (tests/fakes.py).

Plans are written as the text `ExecutionPlan.as_text()` prints, so each test shows the graph it runs.
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from planner.errors import AlreadyExistsError, CacheSyncError, PlannerError
from planner.events import Applied, Event, Failed, Planned, Ready, Skipped, Summary, Waiting, to_json_dict
from planner.execute import ExecutionResult, StopCheck, execute_plans
from planner.graph import ExecutionPlan, GraphError, Task, TaskAction
from planner.objects import ObjectRef
from planner.state.applyset import ParentRecord
from planner.wait.readiness import Readiness
from tests.fakes import Concurrency, FakeClock, FakeWriter, RecordingSink, ScriptedStatus

LINE = re.compile(
    r"^(?P<action>\S+) (?P<ref>\S+)(?: \[timeout (?P<timeout>[\d.]+)s\])?(?: <- (?P<after>.*))?$"
)


def ref_from(text: str) -> ObjectRef:
    parts = text.split("/")
    namespace, name = (parts[1], parts[2]) if len(parts) == 3 else (None, parts[1])
    return ObjectRef(group="", kind=parts[0], namespace=namespace, name=name)


def task_from(line: str) -> Task:
    found = LINE.match(line)
    assert found is not None, line
    ref = ref_from(found["ref"])
    action: TaskAction = found["action"]  # type: ignore[assignment]
    manifest = None
    if action in ("create", "apply"):
        manifest = {"kind": ref.kind, "metadata": {"name": ref.name, "namespace": ref.namespace}}
    return Task(
        id=f"{action} {found['ref']}",
        action=action,
        ref=ref,
        predecessors=tuple(found["after"].split(", ")) if found["after"] else (),
        timeout=float(found["timeout"]) if found["timeout"] else None,
        manifest=manifest,
        parent=ParentRecord(group_kinds=(), namespaces=(), run_keys=()) if action == "parent" else None,
        propagation="Foreground" if action == "delete" else None,
    )


def plan_from(text: str, *, name: str = "shop", namespace: str = "shop") -> ExecutionPlan:
    tasks = tuple(task_from(line) for line in text.strip().splitlines())
    return ExecutionPlan(plan=name, namespace=namespace, tasks=tasks)


WEB_STACK = plan_from("""
parent secret/shop/shop
create configmap/shop/web-config <- parent secret/shop/shop
create secret/shop/db-credentials <- parent secret/shop/shop
create job/shop/migrate <- create secret/shop/db-credentials
record-run job/shop/migrate <- create job/shop/migrate
wait-ready job/shop/migrate [timeout 300s] <- create job/shop/migrate
create deployment/shop/web <- create configmap/shop/web-config, wait-ready job/shop/migrate
wait-ready deployment/shop/web <- create deployment/shop/web
create service/shop/web-svc <- parent secret/shop/shop
""")


class Harness:
    def __init__(self, *, delay: float = 0.0) -> None:
        self.clock = FakeClock()
        self.concurrency = Concurrency()
        self.writer = FakeWriter(concurrency=self.concurrency, delay=delay)
        self.status = ScriptedStatus(clock=self.clock)
        self.sink = RecordingSink()

    def run(
        self,
        plan: ExecutionPlan,
        *,
        parallelism: int = 16,
        default_timeout: float | None = 60.0,
        no_wait: bool = False,
        stop: StopCheck | None = None,
    ) -> ExecutionResult:
        (result,) = execute_plans(
            [plan],
            writer=self.writer,
            status=self.status,
            sink=self.sink,
            parallelism=parallelism,
            default_timeout=default_timeout,
            no_wait=no_wait,
            clock=self.clock,
            stop=stop,
        )
        return result


def ids(outcomes: tuple[object, ...]) -> set[str]:
    return {outcome.task for outcome in outcomes}  # type: ignore[attr-defined]


def test_every_task_runs_after_its_predecessors_and_the_job_run_is_recorded_with_its_uid() -> None:
    harness = Harness()
    result = harness.run(WEB_STACK)
    assert result.ok
    assert ids(result.done) == {task.id for task in WEB_STACK.tasks}
    calls = harness.writer.calls
    assert calls.index("create secret/shop/db-credentials") < calls.index("create job/shop/migrate")
    assert calls.index("create job/shop/migrate") < calls.index("create deployment/shop/web")
    assert "record-run job/shop/migrate uid=uid-migrate in secret/shop/shop" in calls
    assert calls[0] == "parent secret/shop/shop"
    assert [key for key, _ in harness.status.waits] == ["ready job/shop/migrate", "ready deployment/shop/web"]


JOB_FAILED = Readiness(status="Failed", message="failed (complete 0/1): BackoffLimitExceeded")
NOT_OURS = AlreadyExistsError(
    "secret shop/db-credentials exists and is not managed by plan shop: `planner apply --adopt` of this plan takes it over",
    status=409,
    reason="AlreadyExists",
)

FAILURE_CASES = [
    pytest.param(
        {"status": {"ready job/shop/migrate": JOB_FAILED}},
        {"wait-ready job/shop/migrate": "failed (complete 0/1): BackoffLimitExceeded"},
        {
            "create deployment/shop/web": "wait-ready job/shop/migrate",
            "wait-ready deployment/shop/web": "wait-ready job/shop/migrate",
        },
        id="a failed job skips exactly the deployment that depends on it; config, service, run record finish",
    ),
    pytest.param(
        {"writer": {"create secret/shop/db-credentials": NOT_OURS}},
        {"create secret/shop/db-credentials": str(NOT_OURS)},
        {
            "create job/shop/migrate": "create secret/shop/db-credentials",
            "record-run job/shop/migrate": "create secret/shop/db-credentials",
            "wait-ready job/shop/migrate": "create secret/shop/db-credentials",
            "create deployment/shop/web": "create secret/shop/db-credentials",
            "wait-ready deployment/shop/web": "create secret/shop/db-credentials",
        },
        id="an ownership error on the secret skips everything that uses it, the configmap and service finish",
    ),
    pytest.param(
        {"writer": {"create service/shop/web-svc": ValueError("boom")}},
        {"create service/shop/web-svc": "ValueError: boom"},
        {},
        id="an unexpected error in a leaf fails only that task, named with its exception type",
    ),
    pytest.param(
        {"writer": {"parent secret/shop/shop": PlannerError("resourceVersion conflict")}},
        {"parent secret/shop/shop": "resourceVersion conflict"},
        {task.id: "parent secret/shop/shop" for task in WEB_STACK.tasks[1:]},
        id="a parent that cannot be written skips every member write",
    ),
]


@pytest.mark.parametrize(("inject", "failed", "skipped"), FAILURE_CASES)
def test_a_failure_skips_only_its_transitive_dependents(
    inject: dict[str, dict[str, object]], failed: dict[str, str], skipped: dict[str, str]
) -> None:
    harness = Harness()
    harness.status.script.update(inject.get("status", {}))  # type: ignore[arg-type]
    harness.writer.failures.update(inject.get("writer", {}))  # type: ignore[arg-type]
    result = harness.run(WEB_STACK)
    assert {o.task: o.message for o in result.failed} == failed
    assert {o.task: o.because for o in result.skipped} == skipped
    everything_else = {task.id for task in WEB_STACK.tasks} - failed.keys() - skipped.keys()
    assert ids(result.done) == everything_else
    assert {(e.task, e.because) for e in harness.sink.of_type(Skipped)} == set(skipped.items())
    assert not result.ok


def test_the_summary_lists_done_failed_and_skipped_tasks_with_reasons() -> None:
    harness = Harness()
    harness.status.script["ready job/shop/migrate"] = JOB_FAILED
    harness.run(WEB_STACK)
    summary = harness.sink.events[-1]
    assert isinstance(summary, Summary)
    assert summary.message == "6 done, 1 failed, 2 skipped"
    assert summary.failed == ("wait-ready job/shop/migrate",)
    assert summary.skipped == ("create deployment/shop/web", "wait-ready deployment/shop/web")
    assert set(summary.done) == {
        "parent secret/shop/shop",
        "create configmap/shop/web-config",
        "create secret/shop/db-credentials",
        "create job/shop/migrate",
        "record-run job/shop/migrate",
        "create service/shop/web-svc",
    }
    assert dict(summary.reasons) == {
        "wait-ready job/shop/migrate": "failed (complete 0/1): BackoffLimitExceeded",
        "create deployment/shop/web": "wait-ready job/shop/migrate failed",
        "wait-ready deployment/shop/web": "wait-ready job/shop/migrate failed",
    }
    as_json = to_json_dict(summary)
    assert as_json["type"] == "Summary"
    assert as_json["time"] == "2027-01-15T08:00:00.000Z"
    assert as_json["reasons"]["create deployment/shop/web"] == "wait-ready job/shop/migrate failed"
    assert "object" not in as_json


def test_failed_and_skipped_events_name_the_object_and_the_failed_predecessor() -> None:
    harness = Harness()
    harness.status.script["ready job/shop/migrate"] = JOB_FAILED
    harness.run(WEB_STACK)
    failed = harness.sink.of_type(Failed)
    assert [(e.object, e.message) for e in failed] == [("job/shop/migrate", JOB_FAILED.message)]
    assert to_json_dict(harness.sink.of_type(Skipped)[0]) == {
        "time": "2027-01-15T08:00:00.000Z",
        "type": "Skipped",
        "object": "deployment/shop/web",
        "message": "wait-ready job/shop/migrate failed",
        "task": "create deployment/shop/web",
        "because": "wait-ready job/shop/migrate",
    }


@pytest.mark.parametrize(
    ("default_timeout", "expected"),
    [
        pytest.param(
            60.0,
            [("ready job/shop/migrate", 300.0), ("ready deployment/shop/web", 60.0)],
            id="the plan's per-object timeout wins, the CLI default covers the rest",
        ),
        pytest.param(
            None,
            [("ready job/shop/migrate", 300.0), ("ready deployment/shop/web", float("inf"))],
            id="without a CLI default an object without its own timeout waits without limit",
        ),
    ],
)
def test_each_wait_gets_its_own_timeout(
    default_timeout: float | None, expected: list[tuple[str, float]]
) -> None:
    harness = Harness()
    harness.run(WEB_STACK, default_timeout=default_timeout)
    assert harness.status.waits == expected


def test_a_wait_that_times_out_fails_with_the_last_readiness_and_skips_its_dependents() -> None:
    harness = Harness()
    still_running = Readiness(status="InProgress", message="complete 0/1")
    harness.status.script["ready job/shop/migrate"] = harness.status.still(still_running)
    started = harness.clock.now()
    result = harness.run(WEB_STACK)
    assert {o.task: o.message for o in result.failed} == {
        "wait-ready job/shop/migrate": "timed out after 5m waiting until ready: complete 0/1"
    }
    assert ids(result.skipped) == {"create deployment/shop/web", "wait-ready deployment/shop/web"}
    assert harness.clock.now() - started == 300.0


UNSCHEDULED = (
    "0/2 pods scheduled: 0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector"
)


def test_a_timeout_says_the_last_reason_the_wait_was_held_up_by_and_its_failed_event_carries_it() -> None:
    harness = Harness()
    stuck = Readiness(status="InProgress", message="ready 0/2", reason=UNSCHEDULED)
    harness.status.script["ready deployment/shop/web"] = harness.status.still(stuck)
    result = harness.run(WEB_STACK)
    assert {o.task: o.message for o in result.failed} == {
        "wait-ready deployment/shop/web": f"timed out after 1m waiting until ready: {UNSCHEDULED}"
    }
    [failed] = harness.sink.of_type(Failed)
    assert (failed.task, failed.reason) == ("wait-ready deployment/shop/web", UNSCHEDULED)
    assert to_json_dict(failed)["reason"] == UNSCHEDULED


def test_a_failed_verdict_keeps_its_message_and_carries_its_reason() -> None:
    harness = Harness()
    crashed = Readiness(
        status="Failed",
        message="container web: CrashLoopBackOff",
        reason="CrashLoopBackOff (3 restarts): container web exited with code 1",
    )
    harness.status.script["ready deployment/shop/web"] = crashed
    harness.run(WEB_STACK)
    [failed] = harness.sink.of_type(Failed)
    assert (failed.message, failed.reason) == (crashed.message, crashed.reason)


def test_a_write_failure_has_no_reason() -> None:
    harness = Harness()
    harness.writer.failures["create configmap/shop/web-config"] = NOT_OURS
    harness.run(WEB_STACK)
    [failed] = harness.sink.of_type(Failed)
    assert failed.reason is None
    assert "reason" not in to_json_dict(failed)


def test_a_pending_waits_progress_becomes_a_waiting_event_with_its_reason_before_its_outcome() -> None:
    harness = Harness()
    key = "ready deployment/shop/web"
    harness.status.progress[key] = [
        Readiness(status="InProgress", message="ready 0/2", reason=UNSCHEDULED),
        Readiness(status="InProgress", message="ready 1/2", reason="ImagePullBackOff (1/2 pods): not found"),
    ]
    result = harness.run(WEB_STACK)
    assert result.ok
    about_web = [
        (type(e).__name__, e.message, getattr(e, "reason", None))
        for e in harness.sink.events
        if e.object == "deployment/shop/web" and isinstance(e, Waiting | Ready)
    ]
    assert about_web == [
        ("Waiting", "waiting until ready", None),
        ("Waiting", "still waiting until ready: ready 0/2", UNSCHEDULED),
        ("Waiting", "still waiting until ready: ready 1/2", "ImagePullBackOff (1/2 pods): not found"),
        ("Ready", "ready", None),
    ]
    again = harness.sink.of_type(Waiting)[-1]
    assert to_json_dict(again) | {"time": "t"} == {
        "time": "t",
        "type": "Waiting",
        "message": "still waiting until ready: ready 1/2",
        "object": "deployment/shop/web",
        "task": "wait-ready deployment/shop/web",
        "until": "ready",
        "timeout": 60.0,
        "reason": "ImagePullBackOff (1/2 pods): not found",
    }


def test_progress_after_the_wait_was_answered_is_not_reported() -> None:
    late = Readiness(status="InProgress", message="ready 0/2", reason=UNSCHEDULED)

    class ReportsLate(ScriptedStatus):
        def watch(self, ref: ObjectRef, **kwargs: Any) -> Any:
            cancel = super().watch(ref, **kwargs)  # answered at once: unscripted objects are ready
            kwargs["progress"](late)
            return cancel

    harness = Harness()
    harness.status = ReportsLate(clock=harness.clock)
    assert harness.run(WEB_STACK).ok
    assert [e.reason for e in harness.sink.of_type(Waiting)] == [None, None]


def test_parallelism_is_never_exceeded() -> None:
    twelve = "\n".join(f"create configmap/ns/c{i:02d}" for i in range(12))
    harness = Harness(delay=0.02)
    result = harness.run(plan_from(twelve), parallelism=3)
    assert len(result.done) == 12
    assert harness.concurrency.peak == 3


def test_a_wait_holds_no_worker_so_a_dependent_starts_while_an_unrelated_wait_is_pending() -> None:
    plan = plan_from("""
create job/ns/slow
wait-ready job/ns/slow <- create job/ns/slow
create job/ns/fast
wait-ready job/ns/fast <- create job/ns/fast
create deployment/ns/after-fast <- wait-ready job/ns/fast
""")
    harness = Harness()
    harness.status.hold("ready job/ns/slow")
    pending_then: list[list[str]] = []

    def release_the_slow_job(_: str) -> None:
        pending_then.append(harness.status.pending())
        harness.status.release("ready job/ns/slow")

    harness.writer.hooks["create deployment/ns/after-fast"] = release_the_slow_job
    result = run_bounded(harness, plan, parallelism=1)
    assert result.ok, result.failed
    assert pending_then == [["ready job/ns/slow"]]


def test_waits_never_delay_independent_writes_even_with_more_waiting_objects_than_workers() -> None:
    deployments = [f"deployment/ns/app-{i}" for i in range(10)]
    config_maps = [f"configmap/ns/config-{i}" for i in range(10)]
    plan = plan_from(
        "parent secret/ns/bench\n"
        + "".join(
            f"create {d} <- parent secret/ns/bench\nwait-ready {d} <- create {d}\n" for d in deployments
        )
        + "".join(f"create {c} <- parent secret/ns/bench\n" for c in config_maps)
    )
    harness = Harness()
    harness.status.hold(*(f"ready {d}" for d in deployments))
    writes = 1 + len(deployments) + len(config_maps)
    pending_at_last_write: list[list[str]] = []

    def release_after_the_last_write(event: Event) -> None:
        if isinstance(event, Applied) and len(harness.sink.of_type(Applied)) == writes:
            pending_at_last_write.append(harness.status.pending())
            for deployment in deployments:
                harness.status.release(f"ready {deployment}")

    harness.sink.hooks.append(release_after_the_last_write)
    result = run_bounded(harness, plan, parallelism=2)
    assert result.ok, result.failed
    assert pending_at_last_write == [sorted(f"ready {d}" for d in deployments)]
    kinds = [type(event).__name__ for event in harness.sink.events if isinstance(event, Applied | Ready)]
    assert kinds == ["Applied"] * writes + ["Ready"] * len(deployments)
    assert harness.concurrency.peak <= 2


def run_bounded(
    harness: Harness, plan: ExecutionPlan, *, parallelism: int, stop: StopCheck | None = None
) -> ExecutionResult:
    """Run on a helper thread, so an executor that let waits hold workers (or never asked `stop` again
    while they pend) fails here rather than hang: its writes would queue behind waits that are released
    only after the last write."""
    results: list[ExecutionResult] = []
    runner = threading.Thread(
        target=lambda: results.append(harness.run(plan, parallelism=parallelism, stop=stop))
    )
    runner.daemon = True
    runner.start()
    runner.join(timeout=30)
    assert results, f"the executor stalled after {harness.writer.calls}"
    return results[0]


SLOW_PLAN = plan_from(
    """
parent secret/a/slow
create deployment/a/web <- parent secret/a/slow
wait-ready deployment/a/web <- create deployment/a/web
create service/a/web <- wait-ready deployment/a/web
""",
    name="slow",
    namespace="a",
)
QUICK_PLAN = plan_from(
    """
parent secret/b/quick
create configmap/b/settings <- parent secret/b/quick
create configmap/b/flags <- parent secret/b/quick
""",
    name="quick",
    namespace="b",
)


def run_plans(
    harness: Harness,
    plans: list[ExecutionPlan],
    *,
    parallelism: int = 16,
    stop: StopCheck | None = None,
    finished: Callable[[int, ExecutionResult], None] | None = None,
) -> list[ExecutionResult]:
    """`execute_plans` on a helper thread, so an executor that made one plan wait for another fails
    here rather than hang (the held wait is released only by what the other plan does)."""
    results: list[list[ExecutionResult]] = []
    runner = threading.Thread(
        target=lambda: results.append(
            execute_plans(
                plans,
                writer=harness.writer,
                status=harness.status,
                sink=harness.sink,
                parallelism=parallelism,
                default_timeout=60.0,
                clock=harness.clock,
                stop=stop,
                finished=finished,
            )
        ),
        daemon=True,
    )
    runner.start()
    runner.join(timeout=30)
    assert results, f"the executor stalled after {harness.writer.calls}"
    return results[0]


def test_one_plans_wait_never_holds_up_another_plans_writes_and_each_plan_ends_on_its_own() -> None:
    harness = Harness()
    harness.status.hold("ready deployment/a/web")
    ended: list[tuple[int, bool, list[str]]] = []

    def finished(index: int, result: ExecutionResult) -> None:
        ended.append((index, result.ok, harness.status.pending()))
        if index == 1:  # the quick plan is over while the slow one's Deployment is still rolling out
            harness.status.release("ready deployment/a/web")

    slow, quick = run_plans(harness, [SLOW_PLAN, QUICK_PLAN], parallelism=1, finished=finished)
    assert slow.ok and quick.ok
    assert ended == [(1, True, ["ready deployment/a/web"]), (0, True, [])]
    assert ids(slow.done) == {t.id for t in SLOW_PLAN.tasks}
    assert ids(quick.done) == {t.id for t in QUICK_PLAN.tasks}
    summaries = harness.sink.of_type(Summary)
    assert [summary.done[0] for summary in summaries] == ["parent secret/b/quick", "parent secret/a/slow"]
    assert harness.writer.calls.index("create configmap/b/flags") < harness.writer.calls.index(
        "create service/a/web"
    )


def test_parallelism_bounds_the_writes_of_all_plans_together() -> None:
    plans = [
        plan_from("\n".join(f"create configmap/{ns}/c{i:02d}" for i in range(8)), name=ns, namespace=ns)
        for ns in ("one", "two", "three")
    ]
    harness = Harness(delay=0.02)
    results = run_plans(harness, plans, parallelism=2)
    assert [len(result.done) for result in results] == [8, 8, 8]
    assert harness.concurrency.peak == 2
    # in turn: each plan's first write among the first three, not the first plan's eight first
    assert {call.split("/")[1] for call in harness.writer.calls[:3]} == {"one", "two", "three"}


def test_an_interrupt_stops_every_plan_and_each_reports_what_ran() -> None:
    def interrupt(_: str) -> None:
        raise KeyboardInterrupt

    harness = Harness()
    harness.status.hold("ready deployment/a/web")
    harness.writer.hooks["create configmap/b/flags"] = interrupt
    slow, quick = run_plans(harness, [SLOW_PLAN, QUICK_PLAN], parallelism=1)
    assert slow.interrupted and quick.interrupted
    assert {o.task: o.status for o in slow.failed} == {"wait-ready deployment/a/web": "interrupted"}
    assert ids(slow.skipped) == {"create service/a/web"}
    assert {o.task: o.status for o in quick.failed} == {"create configmap/b/flags": "interrupted"}
    assert "create service/a/web" not in harness.writer.calls
    assert harness.status.cancelled == ["ready deployment/a/web"]
    assert [s.interrupted for s in harness.sink.of_type(Summary)] == [True, True]


def test_a_stop_ends_every_plan_with_its_reason() -> None:
    harness = Harness()
    harness.status.hold("ready deployment/a/web")
    lost: list[str] = []
    harness.writer.hooks["create configmap/b/flags"] = lambda _: lost.append("lock lost")
    slow, quick = run_plans(
        harness, [SLOW_PLAN, QUICK_PLAN], parallelism=1, stop=lambda: lost[0] if lost else None
    )
    assert (slow.stopped, quick.stopped) == ("lock lost", "lock lost")
    assert ids(slow.skipped) == {"create service/a/web"}
    assert {o.task: o.status for o in slow.failed} == {"wait-ready deployment/a/web": "interrupted"}
    assert ids(quick.done) == {t.id for t in QUICK_PLAN.tasks}  # the write in flight finished


def test_a_source_that_cannot_start_a_wait_fails_only_that_wait() -> None:
    class Refusing(ScriptedStatus):
        def watch(self, ref: ObjectRef, **kwargs: Any) -> Any:
            if ref.name == "migrate":
                raise CacheSyncError("the jobs cache (shop): forbidden")
            return super().watch(ref, **kwargs)

    harness = Harness()
    harness.status = Refusing(clock=harness.clock)
    result = harness.run(WEB_STACK)
    assert {o.task: o.message for o in result.failed} == {
        "wait-ready job/shop/migrate": "the jobs cache (shop): forbidden"
    }
    assert ids(result.skipped) == {"create deployment/shop/web", "wait-ready deployment/shop/web"}


def test_a_wait_answered_with_an_error_fails_with_that_error() -> None:
    harness = Harness()
    harness.status.script["ready job/shop/migrate"] = CacheSyncError("the jobs cache (shop) did not sync")
    result = harness.run(WEB_STACK)
    assert {o.task: o.message for o in result.failed} == {
        "wait-ready job/shop/migrate": "the jobs cache (shop) did not sync"
    }


def test_no_wait_skips_ready_waits_but_still_waits_until_a_replaced_object_is_gone() -> None:
    plan = plan_from("""
parent secret/shop/shop
delete job/shop/migrate <- parent secret/shop/shop
wait-gone job/shop/migrate <- delete job/shop/migrate
create job/shop/migrate <- wait-gone job/shop/migrate
wait-ready job/shop/migrate <- create job/shop/migrate
create deployment/shop/web <- wait-ready job/shop/migrate
""")
    harness = Harness()
    result = harness.run(plan, no_wait=True)
    assert [key for key, _ in harness.status.waits] == ["gone job/shop/migrate"]
    assert {o.task: o.status for o in result.outcomes if o.status != "done"} == {
        "wait-ready job/shop/migrate": "not-waited"
    }
    assert result.ok
    assert "delete job/shop/migrate (Foreground)" in harness.writer.calls
    assert [e.task for e in harness.sink.of_type(Waiting)] == ["wait-gone job/shop/migrate"]
    assert harness.writer.calls[-1] == "create deployment/shop/web"


@pytest.mark.parametrize("no_wait", [True, False], ids=["no-wait", "waiting"])
def test_a_wait_already_failed_when_planned_fails_at_once_and_skips_its_dependents(no_wait: bool) -> None:
    plan = plan_from("""
parent secret/shop/shop
wait-ready job/shop/migrate
create deployment/shop/web <- parent secret/shop/shop, wait-ready job/shop/migrate
create configmap/shop/other <- parent secret/shop/shop
""")
    why = "failed (complete 0/1): BackoffLimitExceeded; its run-key ran: change its template or pass --rerun migrate"
    failed = dataclasses.replace(plan.task("wait-ready job/shop/migrate"), failed=why)
    plan = dataclasses.replace(plan, tasks=tuple(failed if t.id == failed.id else t for t in plan.tasks))
    harness = Harness()
    result = harness.run(plan, no_wait=no_wait)
    assert harness.status.waits == []  # nothing asked of the cluster: the plan already knew
    assert {o.task: (o.status, o.message) for o in result.outcomes if o.status != "done"} == {
        "wait-ready job/shop/migrate": ("failed", why),
        "create deployment/shop/web": ("skipped", "wait-ready job/shop/migrate failed"),
    }
    assert not result.ok
    assert harness.writer.calls == ["parent secret/shop/shop", "create configmap/shop/other"]
    assert [(e.task, e.message) for e in harness.sink.of_type(Failed)] == [
        ("wait-ready job/shop/migrate", why)
    ]


def test_events_announce_the_plan_then_report_each_wait() -> None:
    harness = Harness()
    harness.run(WEB_STACK)
    planned = harness.sink.of_type(Planned)
    assert [e.task for e in planned] == [task.id for task in WEB_STACK.tasks]
    assert harness.sink.events[: len(planned)] == planned
    assert [(e.object, e.message) for e in harness.sink.of_type(Ready)] == [
        ("job/shop/migrate", "ready"),
        ("deployment/shop/web", "ready"),
    ]


def test_an_interrupt_stops_starting_tasks_and_reports_what_ran() -> None:
    def interrupt(_: str) -> None:
        raise KeyboardInterrupt

    harness = Harness()
    harness.writer.hooks["create job/shop/migrate"] = interrupt
    result = harness.run(WEB_STACK, parallelism=1)
    assert result.interrupted
    assert ids(result.done) == {
        "parent secret/shop/shop",
        "create configmap/shop/web-config",
        "create secret/shop/db-credentials",
    }
    assert {o.task: o.status for o in result.failed} == {"create job/shop/migrate": "interrupted"}
    assert ids(result.skipped) == {
        "record-run job/shop/migrate",
        "wait-ready job/shop/migrate",
        "create deployment/shop/web",
        "wait-ready deployment/shop/web",
        "create service/shop/web-svc",
    }
    summary = harness.sink.events[-1]
    assert isinstance(summary, Summary) and summary.interrupted
    assert "create service/shop/web-svc" not in harness.writer.calls


def test_a_ctrl_c_while_a_wait_is_being_started_reports_that_wait_interrupted_not_skipped() -> None:
    class Interrupted(ScriptedStatus):
        def watch(self, ref: ObjectRef, **kwargs: Any) -> Any:
            if ref.name == "migrate":
                raise KeyboardInterrupt  # SIGTERM or Ctrl-C landing inside the source's watch
            return super().watch(ref, **kwargs)

    harness = Harness()
    harness.status = Interrupted(clock=harness.clock)
    result = harness.run(WEB_STACK, parallelism=1)

    assert result.interrupted
    assert {o.task: o.status for o in result.failed} == {"wait-ready job/shop/migrate": "interrupted"}
    waiting = [event.object for event in harness.sink.of_type(Waiting)]
    assert waiting == ["job/shop/migrate"]  # announced, so reported as in flight


LOST = "lost the lock of plan shop (namespace shop): could not renew it for 20s"


def test_a_stop_is_asked_before_each_task_and_nothing_starts_once_it_answers() -> None:
    lost = threading.Event()
    harness = Harness()
    harness.writer.hooks["create secret/shop/db-credentials"] = lambda _: lost.set()

    result = harness.run(WEB_STACK, parallelism=1, stop=lambda: LOST if lost.is_set() else None)

    assert result.stopped == LOST and not result.ok and not result.interrupted
    assert ids(result.done) == {
        "parent secret/shop/shop",
        "create configmap/shop/web-config",
        "create secret/shop/db-credentials",  # in flight when the lock was lost: it finishes
    }
    assert {o.task: o.message for o in result.skipped} == {
        "create job/shop/migrate": LOST,
        "record-run job/shop/migrate": LOST,
        "wait-ready job/shop/migrate": LOST,
        "create deployment/shop/web": LOST,
        "wait-ready deployment/shop/web": LOST,
        "create service/shop/web-svc": LOST,
    }
    assert harness.writer.calls[-1] == "create secret/shop/db-credentials"
    summary = harness.sink.events[-1]
    assert isinstance(summary, Summary) and summary.message.endswith(f"(stopped: {LOST})")


def test_a_stop_cancels_waits_in_flight_and_lets_writes_in_flight_finish() -> None:
    plan = plan_from("""
create job/ns/slow
wait-ready job/ns/slow <- create job/ns/slow
create configmap/ns/late
create deployment/ns/after <- wait-ready job/ns/slow
""")
    harness = Harness()
    harness.status.hold("ready job/ns/slow")
    waiting, lost, answered = threading.Event(), threading.Event(), threading.Event()
    harness.sink.hooks.append(
        lambda event: waiting.set() if isinstance(event, Waiting) and event.object == "job/ns/slow" else None
    )

    def stop() -> str | None:
        if not lost.is_set():
            return None
        answered.set()
        return LOST

    def lose_the_lock_while_writing(_: str) -> None:
        waiting.wait(timeout=5.0)
        lost.set()  # the lock is lost while this create and the wait on job/ns/slow are in flight
        answered.wait(timeout=5.0)  # the run has stopped before this write returns

    harness.writer.hooks["create configmap/ns/late"] = lose_the_lock_while_writing
    result = run_bounded(harness, plan, parallelism=4, stop=stop)

    assert answered.is_set()
    assert {o.task: (o.status, o.message) for o in result.outcomes} == {
        "create job/ns/slow": ("done", "created"),
        "wait-ready job/ns/slow": ("interrupted", LOST),
        "create configmap/ns/late": ("done", "created"),
        "create deployment/ns/after": ("skipped", LOST),
    }
    assert result.stopped == LOST and not result.interrupted
    assert harness.status.cancelled == ["ready job/ns/slow"] and harness.status.pending() == []
    assert "create deployment/ns/after" not in harness.writer.calls


def test_a_stop_that_never_answers_changes_nothing() -> None:
    result = Harness().run(WEB_STACK, stop=lambda: None)
    assert result.ok and result.stopped == ""


def test_a_plan_whose_task_waits_for_an_unlisted_task_is_refused_before_anything_runs() -> None:
    harness = Harness()
    broken = plan_from("create deployment/shop/web <- wait-ready job/shop/migrate")
    with pytest.raises(GraphError, match="not listed before it"):
        harness.run(broken)
    assert harness.writer.calls == []


def test_runs_on_one_thread_reuse_its_write_pool_and_a_forked_child_starts_its_own() -> None:
    three = "\n".join(f"create configmap/ns/c{i}" for i in range(3))
    harness = Harness()

    def writers() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name.startswith("planner-apply")}

    before = writers()  # other tests' pools on this thread
    assert len(harness.run(plan_from(three), parallelism=5).done) == 3
    first = writers() - before
    assert len(harness.run(plan_from(three), parallelism=5).done) == 3
    second = writers() - before
    assert first and first <= second and len(second) <= 5  # its threads wait for the next run, and serve it

    child = os.fork()
    if child == 0:  # the parent's pool is here, its threads are not: a run on it would never end
        done = Harness().run(plan_from(three), parallelism=5).done
        os._exit(0 if len(done) == 3 else 1)
    deadline = time.monotonic() + 20
    while (waited := os.waitpid(child, os.WNOHANG)) == (0, 0) and time.monotonic() < deadline:
        time.sleep(0.05)
    if waited == (0, 0):
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
    assert waited[0] == child and os.waitstatus_to_exitcode(waited[1]) == 0, "the child's run never ended"


# --- a chart's hook Job deleted after its run, as its Helm delete policy says ---

HOOK_RUN = """
parent secret/shop/shop
create job/shop/hook <- parent secret/shop/shop
wait-ready job/shop/hook <- create job/shop/hook
create deployment/shop/web <- wait-ready job/shop/hook
delete-hook job/shop/hook <- wait-ready job/shop/hook
"""


def hook_plan(*policies: str) -> ExecutionPlan:
    plan = plan_from(HOOK_RUN)
    tasks = tuple(
        dataclasses.replace(task, policies=policies) if task.action == "delete-hook" else task
        for task in plan.tasks
    )
    return dataclasses.replace(plan, tasks=tasks)


@pytest.mark.parametrize(
    ("policies", "failed", "deleted", "outcomes"),
    [
        (("hook-succeeded",), False, True, {"create deployment/shop/web": "done"}),
        (("hook-failed",), False, False, {"create deployment/shop/web": "done"}),
        (("hook-succeeded",), True, False, {"create deployment/shop/web": "skipped"}),
        (("hook-failed",), True, True, {"create deployment/shop/web": "skipped"}),
    ],
    ids=[
        "succeeded, deleted on success",
        "succeeded, kept: deleted on failure only",
        "failed, kept: deleted on success only",
        "failed, deleted on failure, and the chart's objects still skipped",
    ],
)
def test_a_hook_job_is_deleted_after_its_run_only_when_its_policy_names_how_the_run_ended(
    policies: tuple[str, ...], failed: bool, deleted: bool, outcomes: dict[str, str]
) -> None:
    harness = Harness()
    if failed:
        harness.status.script["ready job/shop/hook"] = JOB_FAILED
    result = harness.run(hook_plan(*policies))
    assert ("delete job/shop/hook (Background)" in harness.writer.calls) == deleted
    statuses = {o.task: o.status for o in result.outcomes}
    assert statuses["delete-hook job/shop/hook"] == ("skipped" if failed and not deleted else "done")
    assert {task: statuses[task] for task in outcomes} == outcomes
    assert result.ok == (not failed)


def test_a_hook_job_not_waited_for_is_kept() -> None:
    harness = Harness()
    result = harness.run(hook_plan("hook-succeeded"), no_wait=True)
    assert result.ok
    assert not [call for call in harness.writer.calls if call.startswith("delete")]
    kept = {o.task: o.message for o in result.outcomes}["delete-hook job/shop/hook"]
    assert kept == "kept: its run was not waited for"


# --- a chart's other hook (not a Job) deleted once its phase's hook Jobs ran ---

OTHER_HOOK_RUN = """
parent secret/shop/shop
apply serviceaccount/shop/migrator <- parent secret/shop/shop
record-run serviceaccount/shop/migrator <- apply serviceaccount/shop/migrator
create job/shop/hook <- apply serviceaccount/shop/migrator
wait-ready job/shop/hook <- create job/shop/hook
delete-hook serviceaccount/shop/migrator <- record-run serviceaccount/shop/migrator, wait-ready job/shop/hook
"""


def other_hook_plan() -> ExecutionPlan:
    plan = plan_from(OTHER_HOOK_RUN)
    tasks = tuple(
        dataclasses.replace(task, policies=("hook-succeeded",)) if task.action == "delete-hook" else task
        for task in plan.tasks
    )
    return dataclasses.replace(plan, tasks=tasks)


@pytest.mark.parametrize(
    ("failed", "no_wait", "deleted", "status"),
    [(False, False, True, "done"), (True, False, False, "skipped"), (False, True, False, "done")],
    ids=["the Job succeeded: deleted", "the Job failed: kept, as Helm keeps it", "not waited for: kept"],
)
def test_another_hook_is_recorded_as_written_and_deleted_only_after_its_phases_job_succeeded(
    failed: bool, no_wait: bool, deleted: bool, status: str
) -> None:
    harness = Harness()
    if failed:
        harness.status.script["ready job/shop/hook"] = JOB_FAILED
    result = harness.run(other_hook_plan(), no_wait=no_wait)
    assert "record-run serviceaccount/shop/migrator uid=None in secret/shop/shop" in harness.writer.calls
    assert ("delete serviceaccount/shop/migrator (Background)" in harness.writer.calls) == deleted
    outcomes = {o.task: (o.status, o.message) for o in result.outcomes}
    assert outcomes["delete-hook serviceaccount/shop/migrator"][0] == status
    if no_wait:
        assert outcomes["delete-hook serviceaccount/shop/migrator"][1] == "kept: its run was not waited for"
