"""Composed plans (#42) on a real control plane: an environment over a base plans and applies as
merged; a change to the example base shows in both environments of one markdown plan with the file
that set each value; `planner build` of an environment applied with kubectl becomes a Ready Plan
object (the e2e twins: tests/e2e/test_plan_environments.py, tests/e2e/test_plan_objects.py)."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_controller import Start, controllers
from tests.e2e.test_plan_environments import (
    test_a_base_change_shows_in_every_environment_of_one_markdown_plan_with_the_file_that_set_it as base_change,
)
from tests.e2e.test_plan_environments import (
    test_plan_and_apply_put_the_merged_environment_in_the_cluster as merged,
)
from tests.e2e.test_plan_objects import (
    test_planner_build_of_an_environment_pipes_into_kubectl_apply_and_becomes_ready as built,
)
from tests.real.conftest import Runner

__all__ = ["controllers"]  # the fixture, shared with the e2e tier


def test_plan_and_apply_put_the_merged_environment_in_the_cluster(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    merged(planner, kubectl, namespace, tmp_path)


def test_a_base_change_shows_in_every_environment_of_one_markdown_plan_with_the_file_that_set_it(
    planner: Runner, namespace: str, tmp_path: Path
) -> None:
    base_change(planner, namespace, tmp_path)


def test_planner_build_of_an_environment_pipes_into_kubectl_apply_and_becomes_ready(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    built(controllers, planner, kubectl, namespace, tmp_path)
