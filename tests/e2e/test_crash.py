"""Crash safety end to end: `planner apply` SIGKILLed at each crash point, then run again, converges —
and nothing the plan still declares is ever pruned. The kill is deterministic: the writer's test-only
`PLANNER_TEST_CRASH_AT` (planner/writes.py) kills the process right after the named write. The whole
set of ApplySet members is read back through raw HTTP after each run.

A killed run leaves its run lock behind; the next run, on the same host, takes it over at once.
"""

from __future__ import annotations

import base64
import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.e2e.conftest import Runner, http, write_plan

PART_OF = "applyset.kubernetes.io/part-of"
COLLECTIONS = {
    "ConfigMap": "/api/v1/namespaces/{ns}/configmaps",
    "Secret": "/api/v1/namespaces/{ns}/secrets",
    "Service": "/api/v1/namespaces/{ns}/services",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
}


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.2, simulate=True) as handle:
        yield handle


def members(cluster: ClusterHandle, *namespaces: str) -> set[str]:
    """Every object labelled as a member of any ApplySet, as `Kind/namespace/name`."""
    found = set()
    for namespace in namespaces:
        for kind, collection in COLLECTIONS.items():
            status, body = http(cluster, "GET", collection.format(ns=namespace) + f"?labelSelector={PART_OF}")
            assert status == 200, body
            found |= {f"{kind}/{namespace}/{item['metadata']['name']}" for item in body["items"]}
    return found


def shop(namespace: str, *, workloads: list[tuple[str, str]], config_maps: list[str]) -> str:
    """`workloads` are (name, namespace) pairs, each exposed."""
    text = f"apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {{name: shop, namespace: {namespace}}}\n"
    text += "configMaps:\n" + "".join(f"  - {{name: {n}, data: {{a: '1'}}}}\n" for n in config_maps)
    text += "workloads:\n" + "".join(
        f"  - {{name: {n}, image: 'nginx:1.27', port: 80, expose: true, runtimeNamespace: {ns}}}\n"
        for n, ns in workloads
    )
    return text


def expected(workloads: list[tuple[str, str]], config_maps: list[str], namespace: str) -> set[str]:
    objects = {f"ConfigMap/{namespace}/{n}" for n in config_maps}
    objects |= {f"Deployment/{ns}/{n}" for n, ns in workloads} | {
        f"Service/{ns}/{n}-svc" for n, ns in workloads
    }
    return objects


def killed(planner: Runner, plan: Path, point: str, *args: str) -> None:
    env = {"PLANNER_TEST_CRASH_AT": point}
    result = planner("apply", str(plan), "--no-wait", "--lock-duration", "3s", *args, env=env)
    assert result.returncode == -signal.SIGKILL, result.stdout + result.stderr


def converges(planner: Runner, plan: Path) -> None:
    """The next run converges: it exits 0 once every object is ready, and leaves nothing to do."""
    result = planner("apply", str(plan), "--timeout", "60s", "--lock-timeout", "1m")
    assert result.returncode == 0, result.stdout + result.stderr
    again = planner("plan", str(plan), "--detailed-exitcode")
    assert again.returncode == 0, again.stdout + again.stderr


@pytest.fixture
def second(cluster: ClusterHandle, namespace: str) -> str:
    name = f"{namespace}-b"
    status, body = http(cluster, "POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    assert status == 201, body
    return name


@pytest.mark.parametrize(
    ("point", "written"),
    [("after-parent", 0), ("after-writes:1", 1), ("after-writes:3", 3)],
    ids=[
        "killed between the parent's write and the first member write",
        "killed after the first member write",
        "killed mid-graph, after the third member write",
    ],
)
def test_a_first_apply_killed_then_run_again_converges(
    planner: Runner,
    cluster: ClusterHandle,
    namespace: str,
    second: str,
    tmp_path: Path,
    point: str,
    written: int,
) -> None:
    workloads, config_maps = [("web", namespace), ("api", second)], ["settings"]
    plan = write_plan(tmp_path, shop(namespace, workloads=workloads, config_maps=config_maps))
    killed(planner, plan, point, "--parallelism", "1")  # one write at a time: the kill is exact
    partial = members(cluster, namespace, second)
    assert len(partial) == written and partial <= expected(workloads, config_maps, namespace)
    converges(planner, plan)
    assert members(cluster, namespace, second) == expected(workloads, config_maps, namespace)


@pytest.mark.parametrize(
    "point",
    ["after-parent", "after-writes:1", "after-deletes:1", "after-deletes:2"],
    ids=[
        "killed after the parent's superset write, before anything moved",
        "killed after the moved workload's first write in its new namespace",
        "killed during prune, after the first delete",
        "killed during prune, after the second delete",
    ],
)
def test_a_changed_plan_killed_then_run_again_prunes_exactly_what_it_no_longer_declares(
    planner: Runner, cluster: ClusterHandle, namespace: str, second: str, tmp_path: Path, point: str
) -> None:
    before = [("web", namespace), ("api", namespace)], ["settings", "old"]
    plan = write_plan(tmp_path, shop(namespace, workloads=before[0], config_maps=before[1]))
    converges(planner, plan)
    after = [("web", namespace), ("api", second)], ["settings"]  # api moves; old goes
    write_plan(tmp_path, shop(namespace, workloads=after[0], config_maps=after[1]))
    killed(planner, plan, point)
    declared = expected(*after, namespace)
    still = expected(*before, namespace) & declared
    assert still <= members(cluster, namespace, second)  # nothing still declared was pruned
    converges(planner, plan)
    assert members(cluster, namespace, second) == declared
    status, parent = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/secrets/shop")
    assert status == 200, parent
    assert parent["metadata"]["annotations"]["applyset.kubernetes.io/additional-namespaces"] == second


def test_a_replace_killed_between_its_delete_and_its_create_is_created_by_the_next_run(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    def jobs(image: str) -> str:
        return (
            f"apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {{name: shop, namespace: {namespace}}}\n"
            f"workloads:\n  - {{name: migrate, kind: job, image: '{image}'}}\n"
        )

    plan = write_plan(tmp_path, jobs("busybox:1.36"))
    converges(planner, plan)
    write_plan(tmp_path, jobs("busybox:1.37"))  # a new template: the Job is replaced
    killed(planner, plan, "after-deletes:1")
    path = f"/apis/batch/v1/namespaces/{namespace}/jobs/migrate"
    status, deleting = http(cluster, "GET", path)  # gone, or still finishing its Foreground delete
    assert status == 404 or deleting["metadata"]["deletionTimestamp"], deleting
    converges(planner, plan)
    status, job = http(cluster, "GET", path)
    assert status == 200, job
    assert job["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox:1.37"


# --- run-once: a Job runs once per run-key whatever instant apply dies at ----------------------------


def job_plan(namespace: str) -> str:
    return (
        f"apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {{name: batch, namespace: {namespace}}}\n"
        "workloads:\n  - {name: migrate, kind: job, image: 'busybox:1.36', ttlSecondsAfterFinished: 5}\n"
    )


def run_record(cluster: ClusterHandle, namespace: str) -> dict[str, Any]:
    """The parent Secret's one run record, decoded."""
    status, parent = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/secrets/batch")
    assert status == 200, parent
    records = [
        json.loads(base64.b64decode(value))
        for key, value in (parent.get("data") or {}).items()
        if len(key) == 64
    ]
    assert len(records) == 1, records
    return dict(records[0])


def test_a_run_recorded_pending_whose_job_never_appeared_is_retried_not_treated_as_ran(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, job_plan(namespace))
    killed(planner, plan, "after-parent")
    record = run_record(cluster, namespace)
    assert "uid" not in record and record["name"] == "migrate", record  # pending: no Job yet
    planned = planner("plan", str(plan), "--detailed-exitcode")
    assert planned.returncode == 2, planned.stdout + planned.stderr
    assert f"create job/{namespace}/migrate" in planned.stdout


def test_the_run_after_a_killed_one_records_every_object_written_since_the_last_generation(
    planner: Runner, cluster: ClusterHandle, namespace: str, second: str, tmp_path: Path
) -> None:
    """A run killed mid-apply (a leader SIGKILLed, a cancelled CI job) records no generation; the run
    that finishes its work records one counting every object written since the last — the killed run's
    three and its own four, 7 created — not only its own writes."""
    workloads, config_maps = [("web", namespace), ("api", second)], ["a", "b", "c"]
    plan = write_plan(tmp_path, shop(namespace, workloads=workloads, config_maps=config_maps))

    killed(planner, plan, "after-writes:3", "--parallelism", "1")
    converges(planner, plan)
    status, record = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/secrets/planner.shop.g1")

    assert status == 200, record
    assert record["metadata"]["annotations"]["planner.dev/changes"] == "7 created"
    assert members(cluster, namespace, second) == expected(workloads, config_maps, namespace)
