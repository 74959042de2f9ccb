"""The command on a plan's run lock: unlock."""

from __future__ import annotations

import click

from planner import app
from planner import output as printers
from planner.cli import options
from planner.cli.running import fail_unless


@click.command("unlock", epilog=options.PLAN_SELECTOR_HELP)
@options.plan_selector
@options.flag("--force", "Delete the lock: only when the run holding it is known to be dead.")
@options.target_options()
def unlock_command(plan: str, force: bool, target: app.Target) -> None:
    """Break the run lock of PLAN: delete its Lease and print whom it belonged to. Without --force it
    only says who holds it, and exits 1 if anyone does; with --force, a plan that is not locked (or
    does not exist) is an error that says which.

    A run whose lock is broken stops starting tasks at its next renewal and exits 1; a dead run's lock
    also expires on its own, so --force is for not waiting that long.
    """
    state = app.unlock(plan, target=target) if force else app.lock_state(plan, target=target)
    fail_unless(printers.results.lock(state, broken=force))
