"""A Job runs once and its outcome is never lost, whatever instant apply dies at and however short its
TTL: every Job planner creates holds the finalizer `planner.dev/run-record` until how it ended is in
the plan's ApplySet parent.

Each case kills `planner apply` at a crash point around the Job's create (the writer's test-only
`PLANNER_TEST_CRASH_AT`), lets the Job run, fail with exit code 7 and meet its TTL (0, 1 or 3 s), then
runs planner again. The pods that ran are counted from the server's own watch history (raw HTTP), the
Job and the parent are read through raw HTTP: never through planner's reader.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.e2e.conftest import Runner, current_rv, events_since, http, write_plan
from tests.paths import REPO
from tests.simulated import eventually

FINALIZER = "planner.dev/run-record"


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.2, simulate=True) as handle:
        yield handle


def job_plan(namespace: str, ttl: int) -> str:
    return (
        f"apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {{name: batch, namespace: {namespace}}}\n"
        "workloads:\n"
        f"  - {{name: migrate, kind: job, image: 'busybox:1.36', ttlSecondsAfterFinished: {ttl},\n"
        "      backoffLimit: 0, podAnnotations: {sim.planner.dev/exit-code: '7'}}\n"
    )


def job_path(namespace: str) -> str:
    return f"/apis/batch/v1/namespaces/{namespace}/jobs/migrate"


def job(cluster: ClusterHandle, namespace: str) -> dict[str, Any] | None:
    status, body = http(cluster, "GET", job_path(namespace))
    return body if status == 200 else None


def held_after_its_ttl(cluster: ClusterHandle, namespace: str) -> dict[str, Any] | None:
    """The Job once it failed and its TTL deleted it: still there, Terminating, held by the finalizer."""
    found = job(cluster, namespace)
    if found is None or not found["metadata"].get("deletionTimestamp"):
        return None
    return found


def pods_that_ran(cluster: ClusterHandle, namespace: str, since: int) -> list[str]:
    """The name of every pod created in `namespace` after resourceVersion `since`."""
    events = events_since(cluster, f"/api/v1/namespaces/{namespace}/pods", since)
    return [e["object"]["metadata"]["name"] for e in events if e["type"] == "ADDED"]


def jobs_created(cluster: ClusterHandle, namespace: str, since: int) -> list[str]:
    events = events_since(cluster, f"/apis/batch/v1/namespaces/{namespace}/jobs", since)
    return [e["object"]["metadata"]["uid"] for e in events if e["type"] == "ADDED"]


def run_record(cluster: ClusterHandle, namespace: str) -> dict[str, Any]:
    status, parent = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/secrets/batch")
    assert status == 200, parent
    records = [
        json.loads(base64.b64decode(value))
        for key, value in (parent.get("data") or {}).items()
        if not key.startswith("planner.")
    ]
    assert len(records) == 1, records
    return dict(records[0])


def killed(planner: Runner, plan: Path, point: str, *args: str) -> None:
    env = {"PLANNER_TEST_CRASH_AT": point}
    result = planner("apply", str(plan), "--parallelism", "1", *args, env=env)
    assert result.returncode == -signal.SIGKILL, result.stdout + result.stderr


OUTCOME = {
    "result": "failed",
    "reason": "BackoffLimitExceeded",
    "message": "Job has reached the specified backoff limit",
    "exitCode": 7,
}
CREATED_BEFORE_THE_KILL = {"after-writes:1", "after-record-run"}


@pytest.mark.parametrize("ttl", [0, 1, 3], ids=lambda ttl: f"ttl {ttl}s")
@pytest.mark.parametrize(
    "point",
    ["before-parent", "after-parent", "after-writes:1", "after-record-run"],
    ids=[
        "killed before the parent is written",
        "killed after the run is recorded pending, before the Job's create",
        "killed after the Job's create, before its run is confirmed",
        "killed after the run is confirmed",
    ],
)
def test_a_job_killed_around_its_create_runs_once_and_its_outcome_is_recorded_whatever_its_ttl(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path, point: str, ttl: int
) -> None:
    plan = write_plan(tmp_path, job_plan(namespace, ttl))
    since = current_rv(cluster)
    killed(planner, plan, point)
    if point in CREATED_BEFORE_THE_KILL:
        held = eventually(lambda: held_after_its_ttl(cluster, namespace), timeout=60)
        assert FINALIZER in held["metadata"]["finalizers"], held["metadata"]  # not gone unrecorded
        assert held["status"]["failed"] == 1, held["status"]

    again = planner("apply", str(plan))  # the dead run's lock is taken over at once

    # A Job it created now fails (exit 1); one the dead run created is recorded and let go (exit 0).
    assert again.returncode == (0 if point in CREATED_BEFORE_THE_KILL else 1), again.stdout + again.stderr
    eventually(lambda: job(cluster, namespace) is None, timeout=60)  # let go: its TTL removed it
    rerun = planner("apply", str(plan))
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "create job" not in rerun.stdout, rerun.stdout
    uids = jobs_created(cluster, namespace, since)
    assert len(uids) == 1, uids
    assert len(pods_that_ran(cluster, namespace, since)) == 1
    record = run_record(cluster, namespace)
    assert (record["uid"], record["outcome"]) == (uids[0], OUTCOME)


def monitored(planner: Runner, namespace: str) -> list[dict[str, Any]]:
    result = planner("monitor", "--all", "-n", namespace, "--until-done", "--timeout", "60s", "-o", "json")
    assert result.returncode == 1, result.stdout + result.stderr  # the Job failed
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("point", "args"),
    [("after-writes:1", ()), ("after-record-run", ()), ("", ("--no-wait",))],
    ids=[
        "killed after the Job's create",
        "killed after the run is confirmed",
        "an apply that did not wait",
    ],
)
def test_a_monitor_started_after_the_ttl_reports_the_jobs_own_failure_and_exit_code(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path, point: str, args: tuple[str, ...]
) -> None:
    plan = write_plan(tmp_path, job_plan(namespace, 0))
    if point:
        killed(planner, plan, point, *args)
    else:
        applied = planner("apply", str(plan), *args)
        assert applied.returncode == 0, applied.stdout + applied.stderr
    held = eventually(lambda: held_after_its_ttl(cluster, namespace), timeout=60)

    events = monitored(planner, namespace)

    ends = [(e["type"], e.get("exit_code"), e["message"]) for e in events if e["type"] != "ContainerStarted"]
    assert ends == [("ContainerFailed", 7, "Job has reached the specified backoff limit")], events
    assert {e["runtime_id"] for e in events} == {f"k8s-{namespace}|job|migrate"}
    eventually(lambda: job(cluster, namespace) is None, timeout=60)
    record = run_record(cluster, namespace)
    assert (record["uid"], record["outcome"]) == (held["metadata"]["uid"], OUTCOME)
    again = monitored(planner, namespace)  # the Job is gone now: its record tells the same story
    assert [(e["type"], e["event_id"]) for e in again] == [(e["type"], e["event_id"]) for e in events]


def test_prune_and_planner_delete_let_a_held_job_go(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, job_plan(namespace, 3600))
    applied = planner("apply", str(plan), "--no-wait")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert FINALIZER in (job(cluster, namespace) or {})["metadata"]["finalizers"]

    deleted = planner("delete", f"k8s-{namespace}|job|migrate")

    assert deleted.returncode == 0, deleted.stdout + deleted.stderr
    eventually(lambda: job(cluster, namespace) is None, timeout=30)
    again = planner("apply", str(plan), "--no-wait", "--rerun", "migrate")
    assert again.returncode == 0, again.stdout + again.stderr
    assert FINALIZER in (job(cluster, namespace) or {})["metadata"]["finalizers"]
    write_plan(
        tmp_path,
        f"apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {{name: batch, namespace: {namespace}}}\n"
        "configMaps:\n  - {name: settings, data: {a: '1'}}\n",
    )

    pruned = planner("apply", str(plan), "--no-wait")

    assert pruned.returncode == 0, pruned.stdout + pruned.stderr
    eventually(lambda: job(cluster, namespace) is None, timeout=30)


def test_a_monitor_started_before_a_no_wait_apply_records_the_jobs_end_and_lets_it_go(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    """The monitor learns of a run recorded after it started (issue 39, item 13): the Job the apply
    created holds the run-record finalizer, and the monitor records its outcome and lets it go, as
    docs/cli.md says it does."""
    plan = write_plan(tmp_path, job_plan(namespace, 3600))
    command = [
        sys.executable,
        "-m",
        "planner",
        "monitor",
        "--all",
        "-n",
        namespace,
        "--timeout",
        "60s",
        "-o",
        "json",
    ]
    environment = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    with subprocess.Popen(command, cwd=REPO, env=environment, stdout=subprocess.PIPE, text=True) as monitor:
        try:
            time.sleep(2)  # the monitor is watching before the apply
            applied = planner("apply", str(plan), "--no-wait")
            assert applied.returncode == 0, applied.stdout + applied.stderr
            recorded = eventually(lambda: run_record(cluster, namespace).get("outcome"), timeout=60)
            assert recorded == OUTCOME
            let_go = eventually(
                lambda: (
                    FINALIZER
                    not in ((job(cluster, namespace) or {}).get("metadata", {}).get("finalizers") or [])
                    and job(cluster, namespace)
                ),
                timeout=60,
            )
            assert let_go["status"]["failed"] == 1
        finally:
            monitor.send_signal(signal.SIGINT)
            monitor.wait(timeout=30)
