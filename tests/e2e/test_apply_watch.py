"""`planner apply --watch`: after converging, the applied workloads' lifecycle events, on the same
informers, until each is steady (issue 9's handoff)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.e2e.conftest import Runner, write_plan


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
