"""`planner apply --watch`: after converging, the applied workloads' lifecycle events, on the same
informers, until each is steady (issue 9's handoff)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.e2e.conftest import Runner, http, write_plan
from tests.paths import REPO


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.2, simulate=True) as handle:
        yield handle


def watched_plan(namespace: str, *, job_exit: int = 0) -> str:
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: watched, namespace: {namespace}}}\n"
        "workloads:\n"
        "  - name: seed\n    kind: job\n    image: busybox:1.36\n    backoffLimit: 0\n"
        f"    podAnnotations: {{sim.planner.dev/exit-code: '{job_exit}'}}\n"
        "  - {name: web, image: 'nginx:1.27', replicas: 1, dependsOn: [seed]}\n"
    )


def test_apply_watch_streams_each_workload_until_steady_and_exits_0(
    planner: Runner, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, watched_plan(namespace))
    result = planner("apply", str(plan), "--watch", "--watch-timeout", "60s", "-o", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    lifecycle = [
        (record["type"], record["runtime_id"], record["message"])
        for record in map(json.loads, result.stdout.splitlines())
        if record["type"].startswith("Container")
    ]
    job, web = f"k8s-{namespace}|job|seed", f"k8s-{namespace}|deployment|web"
    job_events = [(kind, message) for kind, rid, message in lifecycle if rid == job]
    assert [kind for kind, _ in job_events] == ["ContainerStarted", "ContainerExited"]
    assert job_events[1][1] == "0"
    assert [event[0] for event in lifecycle if event[1] == web] == ["ContainerStarted"]


def test_apply_watch_exits_1_when_a_workload_fails(planner: Runner, namespace: str, tmp_path: Path) -> None:
    plan = write_plan(tmp_path, watched_plan(namespace, job_exit=1))
    result = planner("apply", str(plan), "--watch", "--watch-timeout", "60s")
    assert result.returncode == 1
    assert f"job/{namespace}/seed" in result.stdout


def test_after_a_partial_failure_watch_follows_what_was_written_and_reports_the_skipped_as_not_followed(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(
        tmp_path,
        watched_plan(namespace, job_exit=3) + "  - {name: other, image: 'nginx:1.27'}\n",
    )
    result = planner("apply", str(plan), "--watch", "--watch-timeout", "60s", "-o", "json")
    assert result.returncode == 1, result.stdout + result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    schema = json.loads((REPO / "schemas" / "events.schema.json").read_text())
    for record in records:
        jsonschema.validate(record, schema)
    job, web, other = (
        f"k8s-{namespace}|{kind}|{name}"
        for kind, name in (("job", "seed"), ("deployment", "web"), ("deployment", "other"))
    )
    lifecycle = [(r["type"], r["runtime_id"]) for r in records if r["type"].startswith("Container")]
    assert ("ContainerFailed", job) in lifecycle  # the Job that failed is followed to its end
    [failed] = [r for r in records if r["type"] == "ContainerFailed"]
    assert (failed["runtime_id"], failed["exit_code"]) == (job, 3)
    assert ("ContainerStarted", other) in lifecycle  # the independent Deployment that converged
    assert not [kind for kind, rid in lifecycle if rid == web]  # the dependent was never written
    [not_followed] = [r for r in records if r["type"] == "Skipped" and r["task"] == f"watch {web}"]
    assert not_followed["because"] == f"wait-ready job/{namespace}/seed"
    assert not_followed["message"] == f"not followed: wait-ready job/{namespace}/seed failed"
    assert records.index(not_followed) < min(
        i for i, r in enumerate(records) if r["type"].startswith("Container")
    )  # said before anything is followed
    status, _ = http(cluster, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    assert status == 404
