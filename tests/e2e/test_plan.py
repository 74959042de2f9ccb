"""`planner plan` against the embedded cluster: what it reports, what it costs, how it exits."""

from __future__ import annotations

import json
from pathlib import Path

from markdown_it import MarkdownIt

from planner.slim.cluster import ClusterHandle
from tests.e2e.conftest import Runner, write_plan


def web_plan(namespace: str, image: str = "nginx:1.27") -> str:
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: web, namespace: {namespace}}}\n"
        "configMaps:\n  - {name: web-config, data: {LOG_LEVEL: info}}\n"
        "workloads:\n"
        f"  - {{name: web, image: '{image}', port: 8080, expose: true, replicas: 2}}\n"
    )


def test_plan_against_an_empty_namespace_lists_every_create_and_exits_2(
    planner: Runner, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, web_plan(namespace))
    result = planner("plan", str(plan), "--detailed-exitcode")
    assert result.returncode == 2, result.stderr
    assert result.stdout.splitlines() == [
        f"Plan web (namespace {namespace})",
        f"  + create configmap/{namespace}/web-config",
        f"  + create deployment/{namespace}/web",
        f"  + create service/{namespace}/web-svc",
        "Plan: 3 to create, 0 to update, 0 to replace, 0 to delete (0 drift, 3 pending).",
    ]


def test_plan_without_detailed_exitcode_exits_0_and_json_ends_with_a_summary(
    planner: Runner, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, web_plan(namespace))
    result = planner("plan", str(plan), "-o", "json")
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert records[-1]["type"] == "Summary" and records[-1]["create"] == 3
    assert {r["object"] for r in records[:-1]} == {
        f"configmap/{namespace}/web-config",
        f"deployment/{namespace}/web",
        f"service/{namespace}/web-svc",
    }


def test_a_same_named_object_without_the_plan_label_is_an_ownership_conflict(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    created = kubectl("create", "configmap", "web-config", "-n", namespace, "--from-literal=a=b")
    assert created.returncode == 0, created.stderr
    plan = str(write_plan(tmp_path, web_plan(namespace)))
    result = planner("plan", plan)
    conflict = f"configmap {namespace}/web-config exists and is not managed by plan web (written by "
    conflict += "kubectl-create): `planner apply --adopt` of this plan takes it over"
    assert result.returncode == 1
    assert conflict in result.stdout
    assert result.stderr.splitlines() == [
        "error: 1 ownership conflict (apply would fail on them):",
        f"  plan web: {conflict}",
    ]
    result = planner("plan", plan, "-o", "json")
    assert result.returncode == 1
    *text, error = result.stderr.splitlines()
    assert text == ["error: 1 ownership conflict (apply would fail on them):", f"  plan web: {conflict}"]
    record = json.loads(error)
    assert (record["type"], record["exit_code"]) == ("Error", 1)
    assert record["message"] == f"1 ownership conflict (apply would fail on them):\n  plan web: {conflict}"


def test_a_secret_with_the_plans_name_that_is_not_its_parent_is_a_conflict_plan_and_apply_both_report(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    created = kubectl("create", "secret", "generic", "web", "-n", namespace, "--from-literal=a=b")
    assert created.returncode == 0, created.stderr
    plan = write_plan(tmp_path, web_plan(namespace))
    conflict = f"secret {namespace}/web exists and is not the ApplySet parent of plan web"
    for output in ("text", "markdown", "json"):
        planned = planner("plan", str(plan), "-o", output)
        assert planned.returncode == 1, (output, planned.stdout + planned.stderr)
        assert conflict in planned.stdout, (output, planned.stdout)
    applied = planner("apply", str(plan), "--no-wait")
    assert applied.returncode == 1, applied.stdout + applied.stderr
    assert conflict in applied.stdout
    kept = kubectl("get", "secret", "web", "-n", namespace, "-o", "jsonpath={.data.a}")
    assert kept.stdout == "Yg==", kept.stdout + kept.stderr
    listed = kubectl("get", "configmaps,deployments", "-n", namespace, "-o", "name")
    assert "web" not in listed.stdout, listed.stdout


def test_no_cluster_configured_is_one_line_naming_cluster_up(planner: Runner, tmp_path: Path) -> None:
    plan = write_plan(tmp_path, web_plan("default"))
    result = planner("plan", str(plan), env={"KUBECONFIG": "", "HOME": str(tmp_path)})
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1
    assert "no cluster configured" in result.stderr and "planner cluster up" in result.stderr


def test_a_pr_comment_for_two_plans_renders_both_headings(
    planner: Runner, namespace: str, tmp_path: Path
) -> None:
    """The first plan's section ends in folded field changes; the next heading must still be a heading."""
    first = write_plan(tmp_path, web_plan(namespace), "web.yaml")
    applied = planner("apply", str(first), "--no-wait")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    first.write_text(web_plan(namespace, image="nginx:1.28"))
    second = write_plan(tmp_path, web_plan(namespace).replace("web", "api"), "api.yaml")
    result = planner("plan", str(first), str(second), "-o", "markdown")
    assert result.returncode == 0, result.stderr
    tokens = MarkdownIt("commonmark").enable("table").parse(result.stdout)
    headings = [tokens[i + 1].content for i, token in enumerate(tokens) if token.type == "heading_open"]
    assert headings == [
        f"planner plan `web` (namespace `{namespace}`)",
        f"planner plan `api` (namespace `{namespace}`)",
    ]
    assert '"nginx:1.27" → "nginx:1.28"' in result.stdout
    assert "replicas 2; api: image `nginx:1.27`, ports 8080" in result.stdout  # the second plan's creates


def test_the_pull_request_comment_names_the_cluster_it_was_planned_against(
    cluster: ClusterHandle, planner: Runner, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, web_plan(namespace), "web.yaml")

    result = planner("plan", str(plan), "-o", "markdown")

    assert result.returncode == 0, result.stderr
    tokens = MarkdownIt("commonmark").enable("table").parse(result.stdout)
    paragraphs = [tokens[i + 1].content for i, token in enumerate(tokens) if token.type == "paragraph_open"]
    said = f"*planned against the cluster at `{cluster.url}` (kubeconfig context `planner-embedded`)*"
    assert paragraphs[0] == said, result.stdout
