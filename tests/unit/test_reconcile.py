"""reconcile's pure parts: which files it finds and in which order (the loader's walk, which every
command shares), and what it prints and writes (the table, the JSON lines, the metrics file), fed
hand-built outcomes."""

from __future__ import annotations

import io
import json
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from planner.app.reconciling import PlanOutcome
from planner.diff import Change, ChangeSet
from planner.objects import ObjectRef
from planner.output.reconcile import ReconcilePrinter, write_metrics
from planner.plan.load import find_plan_files

PLAN = "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: NAME}\n"


def plan_file(path: Path, name: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(PLAN.replace("NAME", name))
    return path


def test_plans_are_found_recursively_in_path_order_skipping_hidden_directories_and_other_yaml(
    tmp_path: Path,
) -> None:
    root = tmp_path / "plans"
    plan_file(root / "b.yaml", "b")
    plan_file(root / "a" / "z.yml", "z")
    plan_file(root / "a" / "deeper" / "y.yaml", "y")
    plan_file(root / ".git" / "hidden.yaml", "hidden")
    (root / "values.yaml").write_text("replicas: 3\n")  # YAML, but not a plan
    (root / "README.md").write_text("kind: Plan\n")
    quoted = root / "c.yaml"
    quoted.write_text("apiVersion: planner.dev/v1\nkind: 'Plan'  # the plan of c\nmetadata: {name: c}\n")
    named = plan_file(tmp_path / "elsewhere" / "solo.txt", "solo")  # a file named is taken as it is

    found = find_plan_files([root, named, root / "b.yaml"])

    assert [f.relative_to(tmp_path).as_posix() for f in found] == [
        "plans/a/deeper/y.yaml",
        "plans/a/z.yml",
        "plans/b.yaml",
        "plans/c.yaml",
        "elsewhere/solo.txt",
    ]


def ref(kind: str, name: str) -> ObjectRef:
    return ObjectRef(group="", kind=kind, namespace="shop", name=name)


CHANGES = ChangeSet(
    plan="shop",
    namespace="shop",
    changes=(
        Change(
            ref=ref("ConfigMap", "settings"),
            action="create",
            desired={},
            live=None,
            reason="deleted outside the plan",
            drift=True,
        ),
        Change(ref=ref("ConfigMap", "extra"), action="create", desired={}, live=None),
        Change(ref=ref("ConfigMap", "same"), action="noop", desired={}, live={}),
    ),
)
OUTCOMES = [
    PlanOutcome(
        file="plans/shop.yaml",
        plan="shop",
        namespace="shop",
        result="changes",
        changeset=CHANGES,
        message="1 drift, 1 pending; nothing written (--check)",
        duration=0.42,
        finished=1_800_000_000.0,
    ),
    PlanOutcome(
        file="plans/web.yaml",
        plan="web",
        namespace="web",
        result="locked",
        message="locked by alice@ci/7/ab since 2027-01-15T08:00:00Z (renewed 3s ago)",
        duration=0.05,
        finished=1_800_000_001.0,
    ),
    PlanOutcome(
        file="plans/broken.yaml",
        plan="",
        namespace="",
        result="failed",
        message="plans/broken.yaml:3:1: kind: expected Plan\nplans/broken.yaml:4:1: metadata: required",
        finished=1_800_000_002.0,
    ),
]


def test_text_is_a_table_then_each_change_with_its_cause_then_whole_failures() -> None:
    stream = io.StringIO()
    printer = ReconcilePrinter("text", stream)
    for outcome in OUTCOMES:
        printer.outcome(outcome)
    assert stream.getvalue() == ""  # the table waits for every plan

    printer.finish(OUTCOMES, exit_code=1)

    assert stream.getvalue().splitlines() == [
        "PLAN                NAMESPACE   RESULT    CHANGES              DURATION   MESSAGE",
        "shop                shop        changes   1 drift, 1 pending   0.4s       1 drift, 1 pending; "
        "nothing written (--check)",
        "web                 web         locked    -                    0.1s       locked by alice@ci/7/ab "
        "since 2027-01-15T08:00:00Z (renewed 3s ago)",
        "plans/broken.yaml   -           failed    -                    0.0s       "
        "plans/broken.yaml:3:1: kind: expected Plan",
        "",
        "shop (namespace shop):",
        "  drift     + create configmap/shop/settings (deleted outside the plan)",
        "  pending   + create configmap/shop/extra",
        "",
        "plans/broken.yaml (namespace -):",
        "  plans/broken.yaml:3:1: kind: expected Plan",
        "  plans/broken.yaml:4:1: metadata: required",
        "3 plans: 1 changes, 1 locked, 1 failed",
    ]


def test_json_is_one_line_per_plan_as_it_finishes_then_a_summary() -> None:
    stream = io.StringIO()
    printer = ReconcilePrinter("json", stream)
    printer.outcome(OUTCOMES[0])
    first = json.loads(stream.getvalue())
    printer.finish(OUTCOMES, exit_code=1)
    summary = json.loads(stream.getvalue().splitlines()[-1])

    assert first == {
        "time": "2027-01-15T08:00:00Z",
        "type": "Reconciled",
        "file": "plans/shop.yaml",
        "plan": "shop",
        "namespace": "shop",
        "result": "changes",
        "drift": 1,
        "pending": 1,
        "changes": [
            {
                "object": "configmap/shop/settings",
                "actions": ["create"],
                "cause": "drift",
                "reason": "deleted outside the plan",
            },
            {"object": "configmap/shop/extra", "actions": ["create"], "cause": "pending", "reason": ""},
        ],
        "duration_seconds": 0.42,
        "message": "1 drift, 1 pending; nothing written (--check)",
    }
    assert {key: value for key, value in summary.items() if key != "time"} == {
        "type": "ReconcileSummary",
        "plans": 3,
        "unchanged": 0,
        "applied": 0,
        "changes": 1,
        "locked": 1,
        "failed": 1,
        "drift": 1,
        "pending": 1,
        "exit_code": 1,
        "message": "3 plans: 1 changes, 1 locked, 1 failed",
    }


def samples(path: Path) -> dict[tuple[str, str, str], float]:
    return {
        (sample.name, sample.labels["plan"], sample.labels["namespace"]): sample.value
        for family in text_string_to_metric_families(path.read_text())
        for sample in family.samples
    }


def test_metrics_hold_each_plans_gauges_and_carry_its_last_success_over_a_failed_run(tmp_path: Path) -> None:
    path = tmp_path / "planner.prom"
    write_metrics(path, OUTCOMES)
    first = samples(path)
    assert first == {
        ("planner_reconcile_last_run_timestamp_seconds", "shop", "shop"): 1_800_000_000.0,
        ("planner_reconcile_last_run_timestamp_seconds", "web", "web"): 1_800_000_001.0,
        ("planner_reconcile_last_run_timestamp_seconds", "plans/broken.yaml", ""): 1_800_000_002.0,
        ("planner_reconcile_last_success_timestamp_seconds", "shop", "shop"): 1_800_000_000.0,
        ("planner_reconcile_drift_objects", "shop", "shop"): 1.0,
        ("planner_reconcile_drift_objects", "web", "web"): 0.0,
        ("planner_reconcile_drift_objects", "plans/broken.yaml", ""): 0.0,
        ("planner_reconcile_pending_objects", "shop", "shop"): 1.0,
        ("planner_reconcile_pending_objects", "web", "web"): 0.0,
        ("planner_reconcile_pending_objects", "plans/broken.yaml", ""): 0.0,
        ("planner_reconcile_failed", "shop", "shop"): 0.0,
        ("planner_reconcile_failed", "web", "web"): 0.0,
        ("planner_reconcile_failed", "plans/broken.yaml", ""): 1.0,
        ("planner_reconcile_duration_seconds", "shop", "shop"): 0.42,
        ("planner_reconcile_duration_seconds", "web", "web"): 0.05,
        ("planner_reconcile_duration_seconds", "plans/broken.yaml", ""): 0.0,
    }
    failing = PlanOutcome(
        file="plans/shop.yaml",
        plan="shop",
        namespace="shop",
        result="failed",
        message="x",
        finished=1_800_000_100.0,
    )

    write_metrics(path, [failing])

    second = samples(path)
    assert second[("planner_reconcile_last_run_timestamp_seconds", "shop", "shop")] == 1_800_000_100.0
    assert second[("planner_reconcile_last_success_timestamp_seconds", "shop", "shop")] == 1_800_000_000.0
    assert second[("planner_reconcile_failed", "shop", "shop")] == 1.0
    assert not [key for key in second if key[1] == "web"]  # a plan no longer reconciled leaves the file
