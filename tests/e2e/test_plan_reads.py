"""A plan reads one LIST per kind and namespace whatever its size (issue #45): a first plan of more objects
of each kind than a LIST page holds, and the same plan once applied, counted by verb, resource and code in
the embedded cluster's request log. Counts, never times.

Before, a LIST was paged at `LIST_PAGE` objects, so a plan of 10,000 workloads read each kind 20 times.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from planner.live import LIST_PAGE
from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import SlimAdmin
from tests.e2e.conftest import Runner, write_plan

WORKLOADS = LIST_PAGE + 20  # a ConfigMap, a Deployment and a Service each: more of each than a page


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    """Request log on, controllers and node agent paused: nothing but planner writes or reads."""
    with running_cluster(simulate=True, paused=("controllers", "nodeagent")) as handle:
        yield handle


def plan_text(namespace: str) -> str:
    lines = ["apiVersion: planner.dev/v1", "kind: Plan", f"metadata: {{name: reads, namespace: {namespace}}}"]
    lines += ["configMaps:", *(f"  - {{name: c{i}, data: {{INDEX: '{i}'}}}}" for i in range(WORKLOADS))]
    lines.append("workloads:")
    lines += [
        f"  - {{name: w{i}, image: 'nginx:1.27', port: 8080, expose: true,"
        f" volumes: [{{configMap: c{i}, mountPath: /etc/app}}]}}"
        for i in range(WORKLOADS)
    ]
    return "\n".join(lines) + "\n"


def reads(admin: SlimAdmin) -> Counter[str]:
    """`verb resource code` of every request logged since the log was last cleared."""
    return Counter(f"{r['verb']} {r['resource']} {r['code']}" for r in admin.requests())


def test_a_first_plan_and_a_no_op_plan_of_more_objects_than_a_page_list_each_kind_once(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, plan_text(namespace))
    admin = SlimAdmin.of(cluster)

    admin.clear_requests()
    first = planner("plan", str(plan))
    assert first.returncode == 0, first.stderr
    assert f"{3 * WORKLOADS} to create" in first.stdout, first.stdout[-2000:]
    assert reads(admin) == {
        "get secrets 404": 1,  # the ApplySet parent: none yet
        "list namespaces 200": 1,
        # Per kind: its members (none), then every object there, for a same-named one the plan does
        # not own (more creates than a few GETs would be worth).
        "list configmaps 200": 2,
        "list deployments 200": 2,
        "list services 200": 2,
    }

    applied = planner("apply", str(plan), "--no-wait")
    assert applied.returncode == 0, applied.stderr

    admin.clear_requests()
    again = planner("plan", str(plan))
    assert again.returncode == 0, again.stderr
    assert reads(admin) == {
        "get secrets 200": 1,
        "list namespaces 200": 1,
        "list configmaps 200": 1,
        "list deployments 200": 1,
        "list services 200": 1,
    }
