"""The commands about planner itself: schema, crd, version."""

from __future__ import annotations

import json

import click

import planner
from planner import app
from planner import output as printers
from planner.cli import options


@click.command()
def schema() -> None:
    """Print the plan format's JSON Schema (draft-07)."""
    click.echo(app.schema_text(), nl=False)


@click.command()
@options.output("yaml", "json")
def crd(output: str) -> None:
    """Print the Plan CustomResourceDefinition (`planner crd | kubectl apply -f -` installs it).

    With it installed, a plan file is a Plan object as it is: `kubectl apply -f plan.yaml`.
    """
    printers.results.manifests([app.plan_crd()], output)


@click.command()
@options.output("text", "json")
def version(output: str) -> None:
    """Print planner's version (the installed distribution's)."""
    number = planner.__version__
    click.echo(json.dumps({"version": number}) if output == "json" else f"planner {number}")
