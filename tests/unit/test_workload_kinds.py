"""Workload kinds live in planner/workloads/ only: no other module of planner compares a kind's name,
and the registry's kinds each hold together."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from planner import workloads
from planner.workloads.kind import PodInputs, WorkloadKind
from tests.paths import REPO

PLANNER = REPO / "planner"
# The kinds' own package, and the embedded cluster (a Kubernetes API server, which knows nothing of plans).
OUTSIDE = (PLANNER / "workloads", PLANNER / "slim")
NAMES = {kind.name for kind in workloads.KINDS}


def _modules() -> list[Path]:
    return [
        path
        for path in sorted(PLANNER.rglob("*.py"))
        if not any(path.is_relative_to(excluded) for excluded in OUTSIDE)
    ]


def test_no_module_outside_the_kinds_package_names_a_workload_kind() -> None:
    named = [
        f"{path.relative_to(REPO)}:{node.lineno}: {node.value!r}"
        for path in _modules()
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in NAMES
    ]
    assert named == []


def test_the_check_finds_a_kind_name_where_one_is_written(tmp_path: Path) -> None:
    """The scan above would see a comparison if one crept back."""
    source = 'if workload.kind == "statefulset":\n    pass\n'
    found = [
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and node.value in NAMES
    ]
    assert found == ["statefulset"]


@pytest.mark.parametrize("kind", workloads.KINDS, ids=lambda kind: kind.name)
def test_each_kind_parses_an_empty_workload_and_renders_around_a_pod_template(
    kind: WorkloadKind[object],
) -> None:
    template = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "x", "image": "x"}]}}
    inputs = PodInputs(name="x", selector={"app": "x"}, template=template)
    rendered = kind.render(kind.parse({"schedule": "@daily"}), inputs)
    # A kind's pod template is its own spec's, or its job template's.
    nested = rendered.get("template") or rendered["jobTemplate"]["spec"]["template"]
    assert nested == template
    assert workloads.named(kind.name) is kind
    assert workloads.rendered_as(kind.api.kind) is kind


def test_the_schema_lists_the_registered_kinds_and_their_fields() -> None:
    """The plan format is the registry's: a kind added to one is added to the other."""
    workload = json.loads((REPO / "schemas" / "plan.schema.json").read_text())["definitions"]["workload"]
    assert set(workload["properties"]["kind"]["enum"]) - {""} == NAMES
    assert set(workloads.own_fields()) <= set(workload["properties"])
