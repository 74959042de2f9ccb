"""`planner plan --graph` as pictures, end to end: every example plan's Mermaid chart renders in a real
browser with Mermaid's own renderer, with one node per task and one edge per predecessor of the task
list `plan --graph` prints; Graphviz lays out the same graph as SVG; a 1,000-workload plan's
pull-request comment stays under GitHub's limit with its chart collapsed; and `planner crd` installs
the Plan kind so that `kubectl apply` of a plan file stores it as it is."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from planner.output.comment import LIMIT
from tests.browser import render_mermaid
from tests.e2e.conftest import Runner, write_plan
from tests.paths import PLANS

EXAMPLES = sorted(PLANS.glob("*.yaml"))
TASK = re.compile(
    r"^(ensure|parent|delete|wait-gone|create|apply|record-run|wait-ready) (\S+)(?: \[timeout [^]]+\])?(?: <- (.*))?$"
)


def task_list(planner: Runner, *paths: Path) -> list[tuple[str, int]]:
    """The task lines `plan --graph` prints: (task, number of predecessors)."""
    result = planner("plan", "--graph", *map(str, paths))
    assert result.returncode == 0, result.stdout + result.stderr
    found = [TASK.match(line) for line in result.stdout.splitlines()]
    return [
        (f"{m.group(1)} {m.group(2)}", len(m.group(3).split(", ")) if m.group(3) else 0) for m in found if m
    ]


def test_every_example_plans_chart_renders_with_a_node_per_task_and_an_edge_per_predecessor(
    planner: Runner,
) -> None:
    charts, expected = [], []
    for example in EXAMPLES:
        chart = planner("plan", "-o", "mermaid", str(example))
        assert chart.returncode == 0, chart.stderr
        tasks = task_list(planner, example)
        assert tasks, example
        charts.append(chart.stdout)
        expected.append({"ok": True, "nodes": len(tasks), "edges": sum(after for _, after in tasks)})
    everything = planner("plan", "-o", "mermaid", *map(str, EXAMPLES))
    charts.append(everything.stdout)
    expected.append({key: sum(e[key] for e in expected) if key != "ok" else True for key in expected[0]})

    assert render_mermaid(charts) == expected


def test_a_broken_chart_is_reported_by_the_renderer() -> None:
    (result,) = render_mermaid(['flowchart LR\n  a["x"] -->\n'])
    assert result["ok"] is False and "Parse error" in result["error"]


def big_plan(namespace: str, workloads: int) -> str:
    items = "".join(f"  - {{name: web-{i:04}, image: 'nginx:1.27'}}\n" for i in range(workloads))
    return f"apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {{name: big, namespace: {namespace}}}\nworkloads:\n{items}"


def test_a_large_plans_comment_stays_under_the_limit_with_a_collapsed_chart_that_renders(
    planner: Runner, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, big_plan(namespace, 1000))
    comment = planner("plan", "-o", "markdown", "--graph", str(plan))
    assert comment.returncode == 0, comment.stderr
    assert len(comment.stdout) <= LIMIT
    charts = re.findall(r"```mermaid\n(.*?)```", comment.stdout, flags=re.S)
    assert len(charts) == 1
    assert "2001 tasks, collapsed into 3 groups by step and kind" in charts[0]
    assert render_mermaid(charts) == [{"ok": True, "nodes": 3, "edges": 2}]


@pytest.mark.skipif(
    shutil.which("dot") is None, reason="Graphviz's dot is not installed (.ci/run installs it)"
)
def test_svg_is_the_same_graph_laid_out_by_graphviz(planner: Runner) -> None:
    example = PLANS / "web-stack.yaml"
    svg = planner("plan", "-o", "svg", str(example))
    assert svg.returncode == 0, svg.stderr
    assert svg.stdout.startswith("<?xml") and "<svg" in svg.stdout
    tasks = task_list(planner, example)
    assert svg.stdout.count('class="node"') == len(tasks)
    assert svg.stdout.count('class="edge"') == sum(after for _, after in tasks)


def test_svg_without_graphviz_says_what_to_install(planner: Runner, tmp_path: Path) -> None:
    bare = tmp_path / "bin"
    bare.mkdir()
    python = Path(shutil.which("python3") or "/usr/bin/python3")
    (bare / "python3").symlink_to(python)
    result = planner("plan", "-o", "svg", str(PLANS / "web-stack.yaml"), env={"PATH": str(bare)})
    assert result.returncode != 0
    assert "-o svg needs Graphviz's `dot` on PATH" in result.stderr
    assert "Traceback" not in result.stderr


def test_planner_crd_installs_plans_that_kubectl_applies_as_they_are(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    crd = planner("crd")
    assert crd.returncode == 0, crd.stderr
    installed = kubectl("apply", "-f", "-", stdin=crd.stdout)
    assert installed.returncode == 0, installed.stderr
    assert (
        kubectl("wait", "--for=condition=Established", "crd/plans.planner.dev", "--timeout=30s").returncode
        == 0
    )

    text = (PLANS / "web-stack.yaml").read_text().replace("namespace: shop", f"namespace: {namespace}")
    plan = write_plan(tmp_path, text)
    applied = kubectl("apply", "-f", str(plan))
    assert applied.returncode == 0, applied.stderr
    stored = json.loads(kubectl("get", "plan", "shop", "-n", namespace, "-o", "json").stdout)
    assert stored["workloads"][1]["replicas"] == 2 and stored["metadata"]["generation"] == 1

    explained = kubectl("explain", "plan.workloads.replicas")
    assert explained.returncode == 0, explained.stderr
    assert "Deployments and StatefulSets: desired replicas." in explained.stdout

    misspelt = kubectl("apply", "-f", "-", stdin=text.replace("replicas:", "replicaz:"))
    assert misspelt.returncode != 0
    assert 'unknown field "workloads[1].replicaz"' in misspelt.stderr

    changed = kubectl("apply", "-f", "-", stdin=text.replace("replicas: 2", "replicas: 3"))
    assert changed.returncode == 0, changed.stderr
    stored = json.loads(kubectl("get", "plan", "shop", "-n", namespace, "-o", "json").stdout)
    assert (stored["workloads"][1]["replicas"], stored["metadata"]["generation"]) == (3, 2)
