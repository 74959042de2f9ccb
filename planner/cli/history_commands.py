"""The commands on a plan's recorded generations: history, diff-generations, rollback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from planner import app
from planner import output as printers
from planner.cli import options
from planner.cli.running import FAILED, exit_with, notice, writing


@click.command("history", epilog=options.PLAN_SELECTOR_HELP)
@options.plan_selector
@options.output("text", "json")
@click.option(
    "--show", type=click.IntRange(1), metavar="N", help="Print generation N: its plan files and closure."
)
@click.option(
    "--diff",
    "between",
    type=(click.IntRange(1), click.IntRange(1)),
    metavar="A B",
    help="Compare generation A's closure with B's (as `diff-generations PLAN A B`).",
)
@options.target_options()
def history_command(plan: str, output: str, target: app.Target, **flags: Any) -> None:
    """List the recorded generations of PLAN: one per apply that wrote anything (docs/history.md).

    The current generation (the one the cluster is at) is marked `*`. Secret values and hashes are
    never printed.
    """
    printers.results.history(app.history_of(plan, target=target, **flags), output)


@click.command("diff-generations", epilog=options.PLAN_SELECTOR_HELP)
@options.plan_selector
@click.argument("old", metavar="A", type=click.IntRange(1))
@click.argument("new", metavar="B", type=click.IntRange(1))
@options.output("text", "json", "markdown")
@options.target_options()
def diff_generations_command(plan: str, old: int, new: int, output: str, target: app.Target) -> None:
    """What changed between two generations of PLAN, like `nix store diff-closures`.

    Objects added (+), removed (-) and changed (~), with the fields that changed (an image
    `2.4.1 → 2.4.2`, replicas, a sandbox's rootfs `g1 → g2`); a Secret only as changed.
    """
    printers.results.history(app.diff_generations(plan, old, new, target=target), output)


@click.command("rollback", epilog=options.PLAN_SELECTOR_HELP)
@options.plan_selector
@click.option("--to", type=click.IntRange(1), metavar="N", help="The generation to go back to.")
@options.output("text", "json", "markdown")
@options.target_options()
@options.flag("--dry-run", "Only show the plan (as `plan` does); write nothing.")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="With --dry-run: write a saved plan for `apply FILE`.",
)
@options.stacked(options.allow_data_loss, options.adopt, options.rerun, options.writing)
def rollback_command(plan: str, output: str, target: app.Target, **flags: Any) -> None:
    """Apply generation N of PLAN again (default: the newest converged one before the current).

    The recorded closure goes through apply's path: diffed against live, objects it does not hold
    pruned, readiness waits, under the plan's run lock, recorded as a new generation. Jobs whose
    run-key ran are not run again unless --rerun names them. A Secret the record kept no data for
    (--no-secret-history) is refused; a sandbox rootfs going back a generation needs
    --allow-data-loss (its disk is created afresh, not restored).

    Exit 0 when it converged, 1 when anything failed, 3 when another run holds the plan's lock.
    """
    rollback = app.rollback_options(output=output, **flags)
    printer = printers.apply_printer(output if output != "markdown" else "text", no_color=options.no_color())
    with writing(printer):
        result = app.rollback(plan, target=target, options=rollback, sink=printer, notice=notice)
    printers.results.rolled_back(result, printer, output, colour=options.colour(), saved=rollback.out)
    if result.applied is None:
        app.check_data_loss([result.planned])
        app.check_conflicts([result.planned])
    if result.planned.changeset.conflicts or not result.ok:
        exit_with(FAILED)
