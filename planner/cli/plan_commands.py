"""The commands on plan files: validate, render, build, plan, apply, reconcile."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from planner import app, controller
from planner import output as printers
from planner.cli import options
from planner.cli.running import (
    CHANGES,
    exit_with,
    fail_unless,
    notice,
    terminate_as_interrupt,
    writing,
)

_out = click.option(
    "--out", type=click.Path(dir_okay=False, path_type=Path), help="Write a saved plan for `apply FILE`."
)


@click.command()
@options.plan_paths
@options.output("text", "json")
def validate(plans: tuple[str, ...], output: str) -> None:
    """Check plan files (or directories of them) without contacting a cluster.

    Every problem is reported at once, one line each, as `file:LINE:COL: path: message`; exit 1 if any.
    With `-o json` each problem and warning is also a `Diagnostic` JSON line on stdout.
    """
    printers.validated(lambda: app.validate(plans), output)


@click.command()
@options.plan_paths
@options.output("yaml", "json")
@options.target_options()
@options.flag("--show-secrets", "Print Secret values and hashes instead of `***`.")
def render(plans: tuple[str, ...], output: str, target: app.Target, show_secrets: bool) -> None:
    """Print the manifests the plans render to, without contacting a cluster.

    The output pipes into `kubectl apply -f -`. Secret values are masked unless --show-secrets.
    """
    loaded, rendered = app.render_plans(plans, target=target)
    printers.results.rendered(loaded, rendered, output, show_secrets=show_secrets)


@click.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@options.flag("--show-secrets", "Print secret values written literally in the plan (refused without it).")
@options.flag(
    "--explain",
    "Follow each value with the file:LINE:COL that set it, as a comment (for reading; `***` secrets).",
)
def build(file: str, show_secrets: bool, explain: bool) -> None:
    """Print a plan file as the one Plan object it means: imports merged, every value merged in.

    The output pipes into `kubectl apply -f -` for the controller. What a Plan object cannot hold is
    refused, naming the entry: `valueFrom.env`/`valueFrom.file` secrets and `manifestFiles`.
    """
    if explain:
        printers.results.explained(*app.explain(file, show_secrets=show_secrets))
    else:
        printers.results.built(*app.build(file, show_secrets=show_secrets))


@click.command("plan")
@options.plan_paths
@options.output("text", "json", "markdown", "mermaid", "dot", "svg")
@options.target_options()
@options.flag(
    "--detailed-exitcode",
    "Exit 2 when there are changes or objects not ready (apply has work), 0 when none, 1 on error.",
)
@_out
@options.stacked(options.allow_data_loss, options.adopt, options.rerun)
@options.flag(
    "--graph", "Also print the ordered task list apply would run (in markdown: a Mermaid chart of it)."
)
@options.allow_empty
@options.flag(
    "--server-dry-run", "Ask the server for each create and update (dryRun=All) and show its exact result."
)
@options.qps
def plan_command(
    plans: tuple[str, ...],
    output: str,
    target: app.Target,
    detailed_exitcode: bool,
    out: Path | None,
    graph: bool,
    **flags: Any,
) -> None:
    """Show what apply would change, and why, without changing anything.

    Reads the live objects of each plan (one LIST per kind and namespace) and diffs them against the
    rendered plan. Secret values and hashes are never shown.
    """
    plan_options = app.plan_options(**flags)
    loaded, results = app.plan(plans, target=target, options=plan_options)
    printers.results.planned(
        loaded, results, output, colour=options.colour(), graph=graph, saved=out, cluster=target.described
    )
    app.check_data_loss(results)
    for warning in app.save_plans(out, results, plan_options, target=target) if out is not None else ():
        click.echo(f"warning: {warning}", err=True)
    app.check_conflicts(results)
    if detailed_exitcode and any(result.changeset.has_work for result in results):
        exit_with(CHANGES)


@click.command("apply")
@options.plan_paths
@options.output("text", "json")
@options.target_options()
@options.stacked(options.allow_data_loss, options.adopt, options.rerun, options.allow_empty, options.writing)
@options.flag(
    "--watch", "Then follow every workload's lifecycle events until each is steady (or --watch-timeout)."
)
@options.duration("--watch-timeout", default="10m", help="How long --watch follows at most.")
def apply_command(
    plans: tuple[str, ...], output: str, target: app.Target, watch: bool, watch_timeout: float, **flags: Any
) -> None:
    """Make the cluster match the plans: write along the dependency graph, waiting where it must.

    PLANS are plan files and directories, or one saved plan written by `plan --out`: then exactly its
    changes are applied, after checking that it was made against this cluster and that neither the
    plan files nor the objects it read have moved (it carries its own --allow-data-loss, --adopt,
    --rerun, --allow-empty and namespace).

    Each plan is planned and applied holding its run lock (a Lease `planner-lock-<plan>`): while
    another run holds it, apply waits up to --lock-timeout, then exits 3 naming the holder.

    Exit 0 when everything converged, 1 when anything failed, was skipped or timed out, a saved plan
    is stale or the lock was lost, 3 when another run holds a plan's lock; the summary names each
    failure and what it held back.
    """
    following = app.watch_options(watch=watch, watch_timeout=watch_timeout)
    printer = printers.apply_printer(output, no_color=options.no_color())
    with writing(printer):
        run = app.apply_plans(
            plans,
            target=target,
            options=app.apply_options(**flags),
            watch=following,
            sink=printer,
            notice=notice,
        )
    printers.results.applied(run, printer, output)
    fail_unless(run.ok)


@click.command("reconcile")
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@click.option(
    "--now",
    metavar="plan/NAME",
    help="Ask planner controller to reconcile the Plan object NAME (in -n's namespace) now: set its "
    "reconcile.planner.dev/requestedAt and wait (up to --timeout) until its status answers it; exit 1 "
    "unless it is then Ready.",
)
@options.output("text", "json")
@options.target_options()
@options.flag("--check", "Write nothing; exit 2 when any plan has drift or pending changes.")
@click.option(
    "--parallel-plans", type=click.IntRange(1), default=4, show_default=True, help="Plans reconciled at once."
)
@click.option(
    "--metrics-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write Prometheus metrics here, atomically (for node_exporter's textfile collector).",
)
@options.stacked(options.allow_data_loss, options.allow_empty, options.writing)
def reconcile_command(
    paths: tuple[str, ...],
    now: str | None,
    output: str,
    target: app.Target,
    metrics_file: Path | None,
    **flags: Any,
) -> None:
    """Reconcile every plan under PATHS: the one command for cron, systemd timers and CronJobs.

    Plan files are found recursively (`*.yaml`/`*.yml` declaring `kind: Plan`, in path order). Each
    plan, on its own and several at once: take its lock (a plan another run holds is skipped as
    `locked`), plan it, apply what drifted or is pending (prune included), release the lock. One plan's
    failure never stops another. With --check nothing is written (no lock either): each change is
    reported as drift (the cluster moved away from what was applied) or pending (the plan changed).

    Exit 0 when every plan converged (or, with --check, has nothing to do), 1 when any failed, 2 with
    --check when any has drift or pending changes, 3 when any was skipped because locked (and none
    failed).
    """
    if now is not None:
        exit_with(_reconcile_now(now, paths, target, timeout=flags.get("timeout")))
    if not paths:
        raise click.UsageError("Missing argument 'PATHS...' (or --now plan/NAME).")
    printer = printers.ReconcilePrinter(output)
    reconciling = app.reconcile_options(**flags)
    with terminate_as_interrupt():
        outcomes = app.reconcile(
            paths,
            target=target,
            options=reconciling,
            notice=notice,
            on_outcome=printer.outcome,
        )
    code = app.reconcile_exit_code(outcomes)
    printer.finish(outcomes, exit_code=code)
    if metrics_file is not None:
        printers.write_metrics(metrics_file, outcomes, check=reconciling.check)
    exit_with(code)


def _reconcile_now(
    selector: str, paths: tuple[str, ...], target: app.Target, *, timeout: float | None
) -> int:
    kind, slash, name = selector.partition("/")
    if paths or not slash or kind not in ("plan", "plans", "plan.planner.dev") or not name:
        raise click.UsageError(f"--now takes plan/NAME and no PATHS, not {selector!r}")
    namespace = target.default_namespace()
    handled = controller.request_reconcile(
        target, name, namespace, timeout=timeout or app.DEFAULT_APPLY_TIMEOUT
    )
    click.echo(f"plan/{name} -n {namespace}: Ready={handled.ready} {handled.reason}: {handled.message}")
    return 0 if handled.ready == "True" else 1
