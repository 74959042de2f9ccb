"""The commands on sandboxes beside a plan: claim, release, touch."""

from __future__ import annotations

import click

from planner import app
from planner import output as printers
from planner.cli import options


@click.group("sandbox")
def sandbox_group() -> None:
    """Sandboxes beside a plan: claim a warm-pool member, release it, record activity."""


@sandbox_group.command("claim")
@click.argument("pool")
@click.option("--name", "owner", required=True, help="Who claims it; `release` and `touch` take this name.")
@options.target_options()
def sandbox_claim_command(pool: str, owner: str, target: app.Target) -> None:
    """Take one unclaimed sandbox of warm pool POOL for NAME (atomically: two claims never get the same
    one) and print its runtime ID; the controller refills the pool. Exit 1 when none is free."""
    click.echo(str(app.claim_sandbox(pool, owner, target=target)))


@sandbox_group.command("release")
@click.argument("name")
@options.flag("--allow-data-loss", "Also delete its PVCs and env Secret.")
@options.output("text", "json")
@options.target_options()
def sandbox_release_command(name: str, allow_data_loss: bool, output: str, target: app.Target) -> None:
    """Delete the sandbox NAME claimed: its Pod, and its PVCs only with --allow-data-loss (else they stay,
    marked paused). Exit 4 when NAME holds no sandbox."""
    printers.print_outcome(app.release_sandbox(name, target=target, allow_data_loss=allow_data_loss), output)


@sandbox_group.command("touch")
@click.argument("name")
@options.output("text", "json")
@options.target_options()
def sandbox_touch_command(name: str, output: str, target: app.Target) -> None:
    """Record activity on sandbox NAME (a claimant's name or the sandbox's own) now, so the idle reaper
    leaves it running; a sandbox the reaper paused is resumed by the next apply of a plan that says
    `running`. Exit 4 when there is no such sandbox."""
    printers.print_outcome(app.touch_sandbox(name, target=target), output)
