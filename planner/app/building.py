"""`planner build FILE`: the plan file as the one Plan object it means, imports merged
(`planner.plan.as_object` says what is refused and why), checked as `validate` checks the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from planner.app.rendering import validate
from planner.errors import Diagnostic, PlanError
from planner.plan import LoadResult
from planner.plan.as_object import explained_object_of, plan_object_of
from planner.plan.source import ParsedFile, read_plan_file


def _parsed(file: str | Path) -> ParsedFile:
    parsed = read_plan_file(Path(file))
    if isinstance(parsed, Diagnostic):
        raise PlanError([parsed])
    return parsed


def build(file: str | Path, *, show_secrets: bool = False) -> tuple[LoadResult, dict[str, Any]]:
    """The merged Plan object of `file` and the load's warnings; raises PlanError with every reason it
    cannot be one (what a Plan object refuses), else with every problem `validate` finds."""
    built = plan_object_of(_parsed(file), show_secrets=show_secrets)
    if isinstance(built, list):
        raise PlanError(built)
    return validate([file]), built


def explain(
    file: str | Path, *, show_secrets: bool = False
) -> tuple[LoadResult, dict[str, Any], dict[str, str]]:
    """`build --explain`: the merged Plan object of `file`, where each scalar value in it was set (by
    path), and the load's warnings; literal secret values `***` unless `show_secrets`. Raises as
    `build` does, except for literal secret values."""
    explained = explained_object_of(_parsed(file), show_secrets=show_secrets)
    if isinstance(explained, list):
        raise PlanError(explained)
    return validate([file]), *explained
