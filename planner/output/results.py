"""How each command's result is shown, for the commands that show more than one thing: the command line
hands a result here whole, and these put the stage printers of this package together in order."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from planner.app.history import GenerationDiff, History
from planner.objects import Manifest
from planner.output.event_lines import ApplyPrinter
from planner.output.explained_yaml import explained_yaml
from planner.output.graph_view import PICTURE_FORMATS, drawing, picture, to_mermaid
from planner.output.history_table import (
    formatted_diff,
    generation_json,
    generation_text,
    history_json,
    history_text,
    rollback_line,
)
from planner.output.lock_table import refusal_line, unlocked_line
from planner.output.manifest_yaml import to_json, to_yaml
from planner.output.plan import formatted
from planner.output.validation_report import print_warnings

if TYPE_CHECKING:
    from planner.app import LockState, RollbackResult
    from planner.app.apply import ApplyResult, ApplyRun
    from planner.app.planning import PlannedChanges
    from planner.app.rendering import RenderedPlan
    from planner.generations import Generation
    from planner.plan import LoadResult


def _echo(text: str, *, err: bool = False) -> None:
    (sys.stderr if err else sys.stdout).write(text)


def rendered(loaded: LoadResult, plans: Sequence[RenderedPlan], output: str, *, show_secrets: bool) -> None:
    print_warnings(loaded.warnings)
    manifests([manifest for each in plans for manifest in each.manifests], output, show_secrets=show_secrets)


def built(loaded: LoadResult, plan_object: Manifest) -> None:
    """`planner build`: the merged Plan object as one YAML document, for `kubectl apply -f -` (its
    literal secret values were refused unless --show-secrets: nothing is masked here)."""
    print_warnings(loaded.warnings)
    _echo(to_yaml([plan_object], show_secrets=True))


def explained(loaded: LoadResult, plan_object: Manifest, origins: dict[str, str]) -> None:
    """`planner build --explain`: the merged Plan object, each scalar value with the file, line and
    column that set it as a trailing comment."""
    print_warnings(loaded.warnings)
    _echo(explained_yaml(plan_object, origins))


def manifests(found: Sequence[Manifest], output: str, *, show_secrets: bool = False) -> None:
    """Manifests ready for `kubectl apply -f -`, as YAML documents or a JSON List."""
    _echo((to_json if output == "json" else to_yaml)(found, show_secrets=show_secrets))


def planned(
    loaded: LoadResult,
    results: Sequence[PlannedChanges],
    output: str,
    *,
    colour: bool,
    graph: bool = False,
    saved: Path | None = None,
    cluster: Callable[[], str] | None = None,
) -> None:
    """`plan` (and `rollback --dry-run`): the changes of every plan, with its task list under --graph (a
    Mermaid chart in a markdown comment), or only the picture of its tasks (`-o mermaid|dot|svg`)."""
    print_warnings(loaded.warnings)
    if output in PICTURE_FORMATS:
        _echo(picture([drawing(result.execution, result.changeset) for result in results], output))
        return
    changesets = [result.changeset for result in results]
    graphs: list[str] = []
    if graph:  # the task lists are solved only when shown
        graphs = (
            [to_mermaid([drawing(result.execution, result.changeset)]) for result in results]
            if output == "markdown"
            else [result.execution.as_text() for result in results]
        )
    pools = [result.pools for result in results]
    where = str(saved) if saved is not None else None
    against = cluster() if cluster is not None and output == "markdown" else None  # named in a PR comment
    _echo(
        formatted(changesets, output, colour=colour, graphs=graphs, pools=pools, saved=where, cluster=against)
    )


def applied(run: ApplyRun | ApplyResult, printer: ApplyPrinter, output: str) -> None:
    """After `apply`: the warnings, each plan's summary (text), and why the lock was lost."""
    print_warnings(run.loaded.warnings)
    if output != "json":
        for each in run.applied:
            printer.summary(each)
    if run.lost:
        _echo(f"error: {run.lost}\n", err=True)


def rolled_back(
    result: RollbackResult, printer: ApplyPrinter, output: str, *, colour: bool, saved: Path | None
) -> None:
    for note in result.notes:
        _echo(f"note: {note}\n", err=True)
    for warning in result.warnings:
        _echo(f"warning: {warning}\n", err=True)
    if result.applied is None:
        where = str(saved) if saved is not None else None
        _echo(formatted([result.planned.changeset], output, colour=colour, saved=where))
    else:
        if output != "json":
            printer.summary(result.applied)
        _echo(rollback_line(result) + "\n", err=output == "json")
    if result.lost:
        _echo(f"error: {result.lost}\n", err=True)


def history(shown: History | Generation | GenerationDiff, output: str) -> None:
    """`history`: the list of generations, one generation (`--show`), or two compared (`--diff`)."""
    if isinstance(shown, GenerationDiff):
        _echo(formatted_diff(shown, output))
    elif isinstance(shown, History):
        _echo(history_json(shown) if output == "json" else history_text(shown))
    else:
        _echo(generation_json(shown) if output == "json" else generation_text(shown))


def lock(state: LockState, *, broken: bool) -> bool:
    """`unlock`: whose lock was removed, or who holds it; False when someone holds a lock not broken."""
    if broken:
        _echo(unlocked_line(state) + "\n")
        return True
    if state.holder is None:
        _echo(refusal_line(state) + "\n")
        return True
    _echo(f"error: {refusal_line(state)}\n", err=True)
    return False
