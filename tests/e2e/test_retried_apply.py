"""A run ends 0 only when every object of the plan is ready, not only what it wrote (issue 39, item 1).

A Deployment that can never be scheduled (node affinity `disktype In [ssd]`, no such node): the first
apply fails with the scheduler's reason. A retry — the next CI attempt, the next cron run — has nothing
to write, and must fail the same way rather than say "no changes" over an application that is down:
apply waits for the unchanged Deployment with the same rules and timeout and exits 1 with the reason,
`plan` counts it ("1 not ready") and `--detailed-exitcode` exits 2, `reconcile --check` fails. Once the
object is ready, a retry exits 0 and writes nothing. Checked through kubectl and raw HTTP.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.e2e.conftest import Runner, current_rv, events_since, http, write_plan


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.2, simulate=True) as handle:
        yield handle


def unschedulable_plan(namespace: str, *, disk: str = "ssd") -> str:
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: shop, namespace: {namespace}}}\n"
        "workloads:\n"
        "  - name: api\n    image: nginx:1.27\n    replicas: 2\n"
        f"    scheduling: [{{type: node, key: disktype, operator: In, values: [{disk}]}}]\n"
        "  - name: web\n    image: nginx:1.27\n"
    )


def retried_apply_fails(planner: Runner, namespace: str, tmp_path: Path, timeout: str) -> Path:
    """Apply the unschedulable plan (it fails), then again: the retry, which has nothing to write, fails
    too, with the scheduler's reason (both tiers run it). The plan file."""
    plan = write_plan(tmp_path, unschedulable_plan(namespace))
    first = planner("apply", str(plan), "--timeout", timeout)
    assert first.returncode == 1, first.stdout + first.stderr

    retry = planner("apply", str(plan), "--timeout", timeout)

    assert retry.returncode == 1, retry.stdout + retry.stderr
    failed = [line for line in retry.stdout.splitlines() if line.startswith("  failed wait-ready")]
    assert len(failed) == 1, retry.stdout
    waited = f"  failed wait-ready deployment/{namespace}/api: timed out after {timeout}"
    assert failed[0].startswith(waited), failed
    assert "didn't match Pod's node affinity/selector" in failed[0], failed
    return plan


def test_a_retried_apply_of_an_application_that_is_down_fails_with_the_reason(
    planner: Runner, kubectl: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    plan = retried_apply_fails(planner, namespace, tmp_path, "4s")
    shown = kubectl("get", "deploy", "api", "-n", namespace, "-o", "jsonpath={.status.availableReplicas}")
    assert shown.stdout in ("", "0"), shown.stdout  # kubectl agrees: nothing is available

    planned = planner("plan", "--detailed-exitcode", str(plan))
    assert planned.returncode == 2, planned.stdout + planned.stderr
    assert f"= unchanged deployment/{namespace}/api (not ready: available 0/2)" in planned.stdout
    assert "No changes, but 1 not ready: apply waits for it, and fails if it cannot." in planned.stdout
    records = [json.loads(line) for line in planner("plan", str(plan), "-o", "json").stdout.splitlines()]
    assert records[-1]["unready"] == 1, records[-1]
    assert [r["object"] for r in records if r["type"] == "Planned" and r.get("unready")] == [
        f"deployment/{namespace}/api"
    ]

    check = planner("reconcile", "--check", str(plan))
    assert check.returncode == 1, check.stdout + check.stderr
    assert f"not ready: deployment {namespace}/api (available 0/2); nothing written (--check)" in check.stdout

    reconciled = planner("reconcile", str(plan), "--timeout", "3s")
    assert reconciled.returncode == 1, reconciled.stdout + reconciled.stderr
    assert "didn't match Pod's node affinity/selector" in reconciled.stdout


def test_a_retry_once_the_application_is_up_writes_nothing_and_exits_0(
    planner: Runner, kubectl: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, unschedulable_plan(namespace, disk="hdd"))
    first = planner("apply", str(plan), "--timeout", "3s")
    assert first.returncode == 1, first.stdout + first.stderr
    # The node gets the label the pods ask for: the scheduler places them, the Deployment becomes ready.
    node = kubectl("get", "nodes", "-o", "jsonpath={.items[0].metadata.name}").stdout
    labelled = kubectl("label", "node", node, "disktype=hdd", "--overwrite")
    assert labelled.returncode == 0, labelled.stderr
    try:
        rolled = kubectl("rollout", "status", "deployment/api", "-n", namespace, "--timeout=60s")
        assert rolled.returncode == 0, rolled.stdout + rolled.stderr

        retry = planner("apply", str(plan), "--timeout", "10s")
        assert retry.returncode == 0, retry.stdout + retry.stderr  # settles the parent: converged now
        before = current_rv(cluster)
        again = planner("apply", str(plan), "--timeout", "10s")
        assert again.returncode == 0, again.stdout + again.stderr
        assert "no changes" in again.stdout, again.stdout
        planned = planner("plan", "--detailed-exitcode", str(plan))
        assert planned.returncode == 0, planned.stdout + planned.stderr
        assert "No changes. The cluster matches plan shop." in planned.stdout
        written = [
            event["object"]["metadata"]["name"]
            for path in (
                f"/apis/apps/v1/namespaces/{namespace}/deployments",
                f"/api/v1/namespaces/{namespace}/secrets",
            )
            for event in events_since(cluster, path, before)
        ]
        assert written == [], written  # neither a workload nor the parent was written again
    finally:
        kubectl("label", "node", node, "disktype-")
    status, body = http(cluster, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/api")
    assert status == 200 and body["status"]["availableReplicas"] == 2, body.get("status")
