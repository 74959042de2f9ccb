"""Loading plans: files or directories in, checked and normalised `Plan`s out, or every problem at once.

Each file goes through the same steps: parse (YAML syntax, one document), schema check, semantic checks,
secret resolution; only a file with no errors is built into the model. Problems from all files are
collected and raised together as one PlanError, sorted in file order, so a user fixes a plan in one
pass. Warnings (a `user` that cannot be mapped) never fail a load; they come back with the plans.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from planner.errors import Diagnostic, PlanError
from planner.plan.build import build_plan
from planner.plan.model import Plan
from planner.plan.schema_check import check_schema
from planner.plan.secrets import resolve_secrets
from planner.plan.source import ParsedFile, read_plan_file
from planner.plan.validate import semantic_diagnostics

PLAN_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class LoadResult:
    plans: tuple[Plan, ...]
    warnings: tuple[Diagnostic, ...] = ()


def load_plans(paths: Sequence[str | Path], *, environ: Mapping[str, str] | None = None) -> LoadResult:
    """Load every plan in `paths` (files, or directories meaning their *.yaml and *.yml files, sorted).

    `environ` is where `{valueFrom: {env: VAR}}` secrets are looked up (default: os.environ).
    Raises PlanError with every error diagnostic when any file has one.
    """
    files, problems = _plan_files(paths)
    plans: list[tuple[Plan, ParsedFile]] = []
    warnings: list[Diagnostic] = []
    for file in files:
        plan, found = _load_file(file, os.environ if environ is None else environ)
        problems.extend(found_error for found_error in found if found_error.severity == "error")
        warnings.extend(found_warning for found_warning in found if found_warning.severity == "warning")
        if plan is not None:
            plans.append(plan)
    problems.extend(_same_plan_names(plans))
    if problems:
        raise PlanError(problems)
    return LoadResult(plans=tuple(plan for plan, _ in plans), warnings=tuple(sorted(warnings)))


def _plan_files(paths: Sequence[str | Path]) -> tuple[list[Path], list[Diagnostic]]:
    files: list[Path] = []
    problems: list[Diagnostic] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found = sorted(
                child for child in path.iterdir() if child.suffix in PLAN_SUFFIXES and child.is_file()
            )
            if not found:
                problems.append(
                    Diagnostic(str(path), 1, 1, "", "no plan files (*.yaml, *.yml) in this directory")
                )
            files.extend(found)
        elif path.exists():
            files.append(path)
        else:
            problems.append(Diagnostic(str(path), 1, 1, "", "no such file or directory"))
    return _once_each(files), problems


def _once_each(files: list[Path]) -> list[Path]:
    """Each file once, even when named twice (`plans/ plans/web.yaml`)."""
    seen: set[Path] = set()
    unique = []
    for file in files:
        if file.resolve() not in seen:
            seen.add(file.resolve())
            unique.append(file)
    return unique


def _load_file(
    path: Path, environ: Mapping[str, str]
) -> tuple[tuple[Plan, ParsedFile] | None, list[Diagnostic]]:
    parsed = read_plan_file(path)
    if isinstance(parsed, Diagnostic):
        return None, [parsed]
    schema = check_schema(parsed)
    found, broken = list(schema.diagnostics), schema.broken
    found += [item for item in semantic_diagnostics(parsed) if not _inside(item.path, broken)]
    secrets, secret_problems = resolve_secrets(parsed, environ)
    found += [item for item in secret_problems if not _inside(item.path, broken)]
    if any(diagnostic.severity == "error" for diagnostic in found):
        return None, found
    return (build_plan(parsed, secrets), parsed), found


def _inside(path: str, broken: frozenset[str]) -> bool:
    """Whether `path` is, or is under, a node the schema check already reported."""
    return any(path == bad or path.startswith((f"{bad}.", f"{bad}[")) for bad in broken if bad)


def _same_plan_names(plans: list[tuple[Plan, ParsedFile]]) -> Iterator[Diagnostic]:
    first: dict[str, ParsedFile] = {}
    for plan, parsed in plans:
        earlier = first.setdefault(plan.name, parsed)
        if earlier is not parsed:
            where = earlier.position("metadata.name")
            yield parsed.diagnostic(
                "metadata.name",
                f'plan "{plan.name}" is also defined in {earlier.file}:{where.line}:{where.column}: '
                "a plan name owns one ApplySet, so each plan file needs its own name",
            )
