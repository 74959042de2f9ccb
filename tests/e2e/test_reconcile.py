"""`planner reconcile` end to end: every plan under some paths, each locked, planned and applied on its
own, several at once; `--check` names each change as drift or pending and writes nothing; exit codes
0/1/2/3; the metrics file. Cluster state is read through raw HTTP and kubectl.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import SlimAdmin
from tests.e2e.conftest import Runner, current_rv, events_since, http
from tests.paths import REPO
from tests.simulated import eventually

TIME_SCALE = 0.2


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=TIME_SCALE, simulate=True) as handle:
        yield handle


def plan_text(name: str, namespace: str, *, image: str = "nginx:1.27", extra: str = "", **pod: str) -> str:
    annotations = ", ".join(
        f"sim.planner.dev/{key.replace('_', '-')}: '{value}'" for key, value in pod.items()
    )
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: {name}, namespace: {namespace}}}\n"
        f"configMaps:\n  - {{name: settings, data: {{MODE: fast}}}}\n{extra}"
        "workloads:\n"
        f"  - name: web\n    image: '{image}'\n    replicas: 2\n"
        f"    podAnnotations: {{{annotations}}}\n"
    )


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def records(result: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines and lines[-1]["type"] == "ReconcileSummary", result.stdout + result.stderr
    return lines[:-1], lines[-1]


def by_plan(lines: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {line["plan"] or line["file"]: line for line in lines}


def exists(cluster: ClusterHandle, path: str) -> bool:
    return http(cluster, "GET", path)[0] == 200


def test_every_plan_found_is_applied_then_reported_unchanged(
    cluster: ClusterHandle, planner: Runner, namespace: str, tmp_path: Path
) -> None:
    root = tmp_path / "plans"
    write(root / "shop.yaml", plan_text("shop", f"{namespace}-shop"))
    write(root / "teams" / "web.yaml", plan_text("web", f"{namespace}-web"))
    write(root / "teams" / "values.yaml", "replicas: 3\n")  # not a plan: left alone
    write(root / ".hidden" / "ghost.yaml", plan_text("ghost", f"{namespace}-ghost"))

    first = planner("reconcile", str(root))
    second = planner("reconcile", str(root), "-o", "json")

    assert first.returncode == 0, first.stdout + first.stderr
    table = first.stdout.splitlines()
    assert re.match(r"PLAN +NAMESPACE +RESULT +CHANGES +DURATION +MESSAGE$", table[0])
    # Each plan's namespace is among its pending changes: the run created it (with its lock) as `plan` says.
    assert re.match(rf"shop +{namespace}-shop +applied +0 drift, 3 pending +\d+\.\ds +applied ", table[1])
    assert re.match(rf"web +{namespace}-web +applied +0 drift, 3 pending ", table[2])
    assert table[-1] == "2 plans: 2 applied"
    for plan in ("shop", "web"):
        assert exists(cluster, f"/apis/apps/v1/namespaces/{namespace}-{plan}/deployments/web")
    assert not exists(cluster, f"/api/v1/namespaces/{namespace}-ghost")
    assert second.returncode == 0, second.stdout + second.stderr
    lines, summary = records(second)
    assert [(line["plan"], line["result"], line["changes"]) for line in lines] in (
        [("shop", "unchanged", []), ("web", "unchanged", [])],
        [("web", "unchanged", []), ("shop", "unchanged", [])],
    )
    assert (summary["plans"], summary["unchanged"], summary["exit_code"]) == (2, 2, 0)


def test_check_names_drift_and_pending_changes_writes_nothing_and_exits_2(
    cluster: ClusterHandle, planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    plan = write(tmp_path / "plans" / "shop.yaml", plan_text("shop", namespace))
    applied = planner("reconcile", str(plan.parent))
    assert applied.returncode == 0, applied.stdout + applied.stderr
    # Drift: someone deletes the ConfigMap and scales the Deployment the plan gives 2 replicas.
    assert kubectl("-n", namespace, "delete", "configmap", "settings").returncode == 0
    assert kubectl("-n", namespace, "scale", "deployment", "web", "--replicas=5").returncode == 0
    # Pending: the plan gains a ConfigMap.
    write(plan, plan_text("shop", namespace, extra="  - {name: extra, data: {A: b}}\n"))
    admin = SlimAdmin.of(cluster)
    before = admin.request_counts()

    checked = planner("reconcile", str(plan.parent), "--check", "-o", "json")

    writes = {
        key: n - before.get(key, 0)
        for key, n in admin.request_counts().items()
        if key[0] in ("create", "update", "patch", "delete", "deletecollection") and n > before.get(key, 0)
    }
    assert writes == {}
    assert checked.returncode == 2, checked.stdout + checked.stderr
    (line,), summary = records(checked)
    assert (line["result"], line["drift"], line["pending"]) == ("changes", 2, 1)
    assert line["changes"] == [
        {
            "object": f"configmap/{namespace}/extra",
            "actions": ["create"],
            "cause": "pending",
            "reason": "",
        },
        {
            "object": f"configmap/{namespace}/settings",
            "actions": ["create"],
            "cause": "drift",
            "reason": "deleted outside the plan",
        },
        {
            "object": f"deployment/{namespace}/web",
            "actions": ["update"],
            "cause": "drift",
            "reason": "changed outside the plan by kubectl",
        },
    ]
    assert (summary["drift"], summary["pending"], summary["exit_code"]) == (2, 1, 2)

    shown = planner("plan", str(plan))
    assert shown.stdout.splitlines()[1] == "  cluster is at generation 1 of plan shop (converged)"
    assert shown.stdout.splitlines()[2:] == [
        f"  + create configmap/{namespace}/extra",
        f"  + create configmap/{namespace}/settings (deleted outside the plan; drift)",
        f"  ~ update deployment/{namespace}/web (changed outside the plan by kubectl; drift)",
        f"      .spec.replicas: 5 → 2 (now owned by kubectl) (from {plan}:10:5)",
        "Plan: 2 to create, 1 to update, 0 to replace, 0 to delete (2 drift, 1 pending).",
    ]

    told = planner("reconcile", str(plan.parent), "--check")
    assert told.stdout.splitlines()[3:8] == [
        f"shop (namespace {namespace}):",
        f"  pending   + create configmap/{namespace}/extra",
        f"  drift     + create configmap/{namespace}/settings (deleted outside the plan)",
        f"  drift     ~ update deployment/{namespace}/web (changed outside the plan by kubectl)",
        f"              .spec.replicas: 5 → 2 (now owned by kubectl) (from {plan}:10:5)",
    ], told.stdout

    fixed = planner("reconcile", str(plan.parent))
    again = planner("reconcile", str(plan.parent), "--check")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert again.returncode == 0, again.stdout + again.stderr
    assert re.match(rf"shop +{namespace} +unchanged +- ", again.stdout.splitlines()[1])


def hold_lock(cluster: ClusterHandle, plan: str, namespace: str) -> str:
    """Another run's lock on `plan`, renewed just now, as a Lease written by hand."""
    assert http(cluster, "POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})[0] in (201, 409)
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    holder = "ci@runner-7/4242/0badc0de"
    body = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": f"planner-lock-{plan}", "namespace": namespace},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 300, "acquireTime": now, "renewTime": now},
    }
    status, created = http(
        cluster, "POST", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases", body
    )
    assert status == 201, created
    return holder


def test_a_locked_plan_is_skipped_the_others_still_reconcile_and_the_run_exits_3(
    cluster: ClusterHandle, planner: Runner, namespace: str, tmp_path: Path
) -> None:
    root = tmp_path / "plans"
    write(root / "a.yaml", plan_text("busy", f"{namespace}-a"))
    write(root / "b.yaml", plan_text("free", f"{namespace}-b"))
    holder = hold_lock(cluster, "busy", f"{namespace}-a")

    result = planner("reconcile", str(root), "-o", "json")

    assert result.returncode == 3, result.stdout + result.stderr
    lines, summary = records(result)
    rows = by_plan(lines)
    assert rows["busy"]["result"] == "locked"
    assert rows["busy"]["message"].startswith(f"locked by {holder} since ")
    assert rows["free"]["result"] == "applied"
    assert (summary["locked"], summary["applied"], summary["exit_code"]) == (1, 1, 3)
    assert not exists(cluster, f"/apis/apps/v1/namespaces/{namespace}-a/deployments/web")
    assert exists(cluster, f"/apis/apps/v1/namespaces/{namespace}-b/deployments/web")


def samples(path: Path) -> dict[tuple[str, str], float]:
    return {
        (sample.name, sample.labels["plan"]): sample.value
        for family in text_string_to_metric_families(path.read_text())
        for sample in family.samples
    }


def test_one_failing_plan_never_stops_the_others_the_run_exits_1_and_the_metrics_say_so(
    cluster: ClusterHandle, planner: Runner, namespace: str, tmp_path: Path
) -> None:
    root = tmp_path / "plans"
    good = write(root / "good.yaml", plan_text("good", f"{namespace}-good"))
    stuck = plan_text("stuck", f"{namespace}-stuck", never_ready="true").replace(
        "    replicas: 2\n", "    replicas: 2\n    timeout: 2s\n"
    )
    write(root / "stuck.yaml", stuck)
    write(root / "broken.yaml", "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: 7}\n")
    write(root / "twin-1.yaml", plan_text("twin", f"{namespace}-twin"))
    write(root / "twin-2.yaml", plan_text("twin", f"{namespace}-twin", image="nginx:1.28"))
    hold_lock(cluster, "locked", f"{namespace}-locked")
    write(root / "locked.yaml", plan_text("locked", f"{namespace}-locked"))
    metrics = tmp_path / "textfile" / "planner.prom"
    metrics.parent.mkdir()
    first = planner("reconcile", str(good), "--metrics-file", str(metrics))
    assert first.returncode == 0, first.stdout + first.stderr
    succeeded = samples(metrics)[("planner_reconcile_last_success_timestamp_seconds", "good")]

    result = planner("reconcile", str(root), "-o", "json", "--metrics-file", str(metrics))

    assert result.returncode == 1, result.stdout + result.stderr
    lines, summary = records(result)
    rows = by_plan(lines)
    assert {plan: row["result"] for plan, row in rows.items()} == {
        "good": "unchanged",
        "stuck": "failed",
        str(root / "broken.yaml"): "failed",
        "twin": "failed",
        "locked": "locked",
    }
    assert "timed out after 2s waiting until ready" in rows["stuck"]["message"]
    assert rows[str(root / "broken.yaml")]["message"].startswith(f"{root / 'broken.yaml'}:3:")
    twins = [line for line in lines if line["plan"] == "twin"]
    assert len(twins) == 2 and all("is declared by" in twin["message"] for twin in twins)
    assert not exists(cluster, f"/api/v1/namespaces/{namespace}-twin")
    assert summary["exit_code"] == 1
    values = samples(metrics)
    assert values[("planner_reconcile_failed", "stuck")] == 1.0
    assert values[("planner_reconcile_failed", "good")] == 0.0
    assert values[("planner_reconcile_failed", str(root / "broken.yaml"))] == 1.0
    assert values[("planner_reconcile_last_success_timestamp_seconds", "good")] > succeeded
    assert ("planner_reconcile_last_success_timestamp_seconds", "stuck") not in values
    assert values[("planner_reconcile_drift_objects", "stuck")] == 0.0
    assert values[("planner_reconcile_pending_objects", "stuck")] == 3.0  # its namespace among them

    # The good plan fails next time: its last success stays the one before, its last run moves on.
    never = plan_text("good", f"{namespace}-good", image="nginx:1.28", never_ready="true")
    write(good, never.replace("    replicas: 2\n", "    replicas: 2\n    timeout: 2s\n"))
    failing = planner("reconcile", str(good), "--metrics-file", str(metrics))
    assert failing.returncode == 1, failing.stdout + failing.stderr
    after = samples(metrics)
    last_success = ("planner_reconcile_last_success_timestamp_seconds", "good")
    last_run = ("planner_reconcile_last_run_timestamp_seconds", "good")
    assert after[("planner_reconcile_failed", "good")] == 1.0
    assert after[last_success] == values[last_success]
    assert after[last_run] > values[last_run]


def most_held_at_once(cluster: ClusterHandle, since: int, namespaces: set[str]) -> int:
    """The most run locks of these namespaces that existed at the same time, from the server's history."""
    held, most = set(), 0
    for event in events_since(cluster, "/apis/coordination.k8s.io/v1/leases", since):
        meta = event["object"]["metadata"]
        if meta["namespace"] not in namespaces:
            continue
        if event["type"] == "DELETED":
            held.discard(meta["namespace"])
        else:
            held.add(meta["namespace"])
        most = max(most, len(held))
    return most


def three_plans(root: Path, namespace: str) -> set[str]:
    namespaces = {f"{namespace}-{i}" for i in range(3)}
    for each in sorted(namespaces):
        write(root / f"{each}.yaml", plan_text(f"p{each[-1]}", each, ready_after_seconds="1"))
    return namespaces


def test_plans_are_reconciled_one_at_a_time_with_parallel_plans_1(
    cluster: ClusterHandle, planner: Runner, namespace: str, tmp_path: Path
) -> None:
    namespaces = three_plans(tmp_path / "plans", namespace)
    since = current_rv(cluster)

    result = planner("reconcile", str(tmp_path / "plans"), "--parallel-plans", "1")

    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "3 plans: 3 applied"
    assert most_held_at_once(cluster, since, namespaces) == 1


def test_independent_plans_are_reconciled_at_once(
    cluster: ClusterHandle, planner: Runner, home: Path, namespace: str, tmp_path: Path
) -> None:
    namespaces = three_plans(tmp_path / "plans", namespace)
    admin = SlimAdmin.of(cluster)
    admin.pause("nodeagent")  # every plan waits for its pods, holding its lock, until resumed
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "KUBECONFIG": str(cluster.kubeconfig)}
    command = [sys.executable, "-m", "planner", "reconcile", str(tmp_path / "plans"), "--parallel-plans", "3"]
    process = subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        held = eventually(lambda: {ns for ns in namespaces if leased(cluster, ns)} == namespaces)
    finally:
        admin.resume("nodeagent")
        out, err = process.communicate(timeout=120)

    assert held
    assert process.returncode == 0, out + err
    assert out.splitlines()[-1] == "3 plans: 3 applied"


def leased(cluster: ClusterHandle, namespace: str) -> bool:
    status, body = http(cluster, "GET", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases")
    return status == 200 and len(body["items"]) == 1


def test_reconcile_without_plans_is_an_error(planner: Runner, tmp_path: Path) -> None:
    write(tmp_path / "values.yaml", "replicas: 3\n")
    result = planner("reconcile", str(tmp_path))
    assert result.returncode == 1
    assert result.stderr.startswith("error: no plan files (*.yaml, *.yml declaring kind: Plan) under ")


def test_a_check_with_nothing_to_do_exits_0(planner: Runner, namespace: str, tmp_path: Path) -> None:
    plan = write(tmp_path / "plans" / "shop.yaml", plan_text("shop", namespace))
    assert planner("reconcile", str(plan)).returncode == 0
    checked = planner("reconcile", "--check", str(plan), "-o", "json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    (line,), summary = records(checked)
    assert (line["result"], summary["exit_code"]) == ("unchanged", 0)


def test_a_check_run_leaves_the_last_success_where_the_last_reconcile_put_it(
    planner: Runner, namespace: str, tmp_path: Path
) -> None:
    plan = write(tmp_path / "plans" / "shop.yaml", plan_text("shop", namespace))
    metrics = tmp_path / "planner.prom"
    applied = planner("reconcile", str(plan), "--metrics-file", str(metrics))
    before = samples(metrics)

    checked = planner("reconcile", str(plan), "--check", "--metrics-file", str(metrics))
    after = samples(metrics)

    assert (applied.returncode, checked.returncode) == (0, 0), applied.stderr + checked.stderr
    last_success = ("planner_reconcile_last_success_timestamp_seconds", "shop")
    last_run = ("planner_reconcile_last_run_timestamp_seconds", "shop")
    assert after[last_success] == before[last_success]
    assert after[last_run] > before[last_run]
